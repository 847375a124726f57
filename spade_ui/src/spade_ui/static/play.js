// The player of an environment page: a session of the mounted `spade serve` app.
// reset opens a session (its id comes back in X-Spade-Session), each step sends the
// action text; the episode's end (terminated / truncated) and every error are shown.
(function () {
  const root = document.getElementById("player");
  if (!root) return;
  const envId = root.dataset.env;
  const base = "/play/envs/" + encodeURIComponent(envId);
  const log = document.getElementById("transcript");
  const status = document.getElementById("play-status");
  const input = document.getElementById("action");
  let session = null;
  let total = 0;

  function line(cls, text) {
    const div = document.createElement("div");
    div.className = cls;
    div.textContent = text;
    log.appendChild(div);
    log.scrollTop = log.scrollHeight;
  }

  async function call(path, body) {
    const headers = {"Content-Type": "application/json"};
    if (session) headers["X-Spade-Session"] = session;
    const res = await fetch(base + path, {method: "POST", headers, body: JSON.stringify(body)});
    const data = await res.json();
    if (!res.ok) {
      const err = data.error || data;
      throw new Error((err.code || res.status) + ": " + (err.message || JSON.stringify(err)));
    }
    session = res.headers.get("X-Spade-Session") || session;
    return data;
  }

  function show(data) {
    const obs = data.observation;
    line("obs", obs.text);
    if (data.reward !== null && data.reward !== undefined) {
      total = data.reward;
      line("rew", "reward " + Number(data.reward).toFixed(3));
    }
    if (obs.terminated || obs.truncated) {
      status.textContent = (obs.terminated ? "episode over (terminated)" : "episode over (truncated)") +
        ", last reward " + Number(total).toFixed(3);
      root.dataset.state = "over";
      input.disabled = true;
    } else {
      status.textContent = "step " + obs.metadata.step_count + ": your move";
      root.dataset.state = "playing";
    }
  }

  async function reset() {
    log.textContent = "";
    session = null;
    total = 0;
    input.disabled = false;
    const seed = parseInt(document.getElementById("seed").value || "0", 10);
    status.textContent = "starting a sandboxed session...";
    try {
      show(await call("/reset", {seed: seed}));
    } catch (e) {
      status.textContent = "error: " + e.message;
      root.dataset.state = "error";
    }
  }

  async function step(action) {
    if (!session) await reset();
    line("act", "> " + action);
    try {
      show(await call("/step", {action: {message: action}}));
    } catch (e) {
      status.textContent = "error: " + e.message;
      root.dataset.state = "error";
    }
  }

  document.getElementById("reset").addEventListener("click", reset);
  document.getElementById("play-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    const action = input.value;
    input.value = "";
    if (action.trim()) step(action);
  });
  // "replay" buttons of validation findings: reset with the finding's seed, then its actions
  document.querySelectorAll("button.replay").forEach(function (btn) {
    btn.addEventListener("click", async function () {
      document.getElementById("seed").value = btn.dataset.seed || "0";
      await reset();
      for (const a of JSON.parse(btn.dataset.actions)) {
        if (root.dataset.state !== "playing") break;
        await step(a);
      }
    });
  });
})();
