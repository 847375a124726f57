"""``spade report RUN_DIR``: an HTML page about a self-play run, its plots also as PNGs.

Read from the run folder: ``metrics.jsonl`` (one record per iteration), ``config.json``,
``designs.jsonl`` and ``transcripts.jsonl`` (:mod:`spade_trainer.run_archive`) and the
run's store (for each environment's skill). The page says in words what ran and what came
out, then shows:

* regret of the played environments (mean and max);
* the agent's win rate and return with and without the hint, apart (markers, fixed 0-1 axis);
* what became of the designed candidates: admitted, or the validation stage that rejected
  them, as stacked bars per iteration;
* regret and win rate per skill; the admitted pool by skill; difficulty; rewards and loss;
* a table per environment, the designed environments with their verdicts, hints and code,
  and sampled episode transcripts.

Every plot has an integer iteration axis and stays readable from 2 to several hundred
iterations (markers and per-point bars give way to lines and a rolling mean).
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError, TrainerError
from .metrics import read_metrics
from .run_archive import DESIGNS_FILE, TRANSCRIPTS_FILE, read_archive

Series = tuple[list[int], list[float]]

#: Above this many points a line is drawn without markers, with a rolling mean over it.
DENSE = 40
#: Designs and transcripts shown on the page (the newest); the files keep the rest.
SHOWN_DESIGNS = 60
SHOWN_TRANSCRIPTS = 24


def _series(records: Sequence[dict[str, Any]], key: str) -> Series:
    xs, ys = [], []
    for r in records:
        v = r.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            xs.append(int(r["iteration"]))
            ys.append(float(v))
    return xs, ys


def _nested(records: Sequence[dict[str, Any]], key: str) -> dict[str, Series]:
    out: dict[str, Series] = {}
    for r in records:
        for name, v in (r.get(key) or {}).items():
            if isinstance(v, (int, float)):
                xs, ys = out.setdefault(name, ([], []))
                xs.append(int(r["iteration"]))
                ys.append(float(v))
    return out


def _env_skills(run: Path, designs: Sequence[dict[str, Any]]) -> dict[str, str]:
    """env id -> skill, from the designs kept and the run's store (when there is one)."""
    skills = {d["env_id"]: d["skill"] for d in designs if d.get("env_id") and d.get("skill")}
    store_file = run / "store.db"
    if store_file.is_file():
        try:
            from spade_core.store import EnvStore

            with EnvStore(f"sqlite:///{store_file}", create=False) as store:
                for m in store.find(limit=100_000):
                    skills.setdefault(m.id, m.skill)
        except Exception:  # a store of another schema, or locked: skills stay unknown
            pass
    return skills


def _per_skill(records: Sequence[dict[str, Any]], skills: dict[str, str], key: str) -> dict[str, Series]:
    out: dict[str, Series] = {}
    for r in records:
        acc: dict[str, list[float]] = defaultdict(list)
        for env_id, stats in (r.get("per_env") or {}).items():
            v = (stats or {}).get(key)
            if isinstance(v, (int, float)):
                acc[skills.get(env_id, "unknown skill")].append(float(v))
        for skill, vs in acc.items():
            xs, ys = out.setdefault(skill, ([], []))
            xs.append(int(r["iteration"]))
            ys.append(sum(vs) / len(vs))
    return out


def _rolling(ys: list[float], width: int) -> list[float]:
    out, total = [], 0.0
    for i, y in enumerate(ys):
        total += y
        if i >= width:
            total -= ys[i - width]
        out.append(total / min(i + 1, width))
    return out


class _Figure:
    """One matplotlib figure with the report's conventions."""

    def __init__(self, title: str, ylabel: str, iterations: Sequence[int]) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator

        self.plt = plt
        self.fig, self.ax = plt.subplots(figsize=(6.4, 3.6))
        self.ax.set(title=title, xlabel="iteration", ylabel=ylabel)
        self.ax.grid(alpha=0.3)
        self.ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=10))
        lo, hi = (min(iterations), max(iterations)) if iterations else (0, 1)
        self.ax.set_xlim(lo - 0.5, hi + 0.5)
        self.drawn = 0

    def line(self, label: str, series: Series, *, marker: str = "o", style: str = "-", color: Any = None) -> None:
        xs, ys = series
        if not xs:
            return
        if len(xs) > DENSE:
            raw = self.ax.plot(xs, ys, lw=0.8, alpha=0.35, linestyle=style, color=color)[0]
            self.ax.plot(xs, _rolling(ys, max(3, len(xs) // 25)), lw=1.8, linestyle=style,
                         color=raw.get_color(), label=f"{label} (rolling mean)")
        else:
            self.ax.plot(xs, ys, marker=marker, ms=5, lw=1.4, linestyle=style, label=label, color=color,
                         markerfacecolor="none" if marker in "os^D" and style != "-" else None)
        self.drawn += 1

    def save(self, path: Path, *, ylim: tuple[float, float] | None = None) -> Path:
        if not self.drawn:
            self.ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=self.ax.transAxes)
        if ylim is not None:
            self.ax.set_ylim(*ylim)
        if self.drawn > 1 or (self.drawn and self.ax.get_legend_handles_labels()[0]):
            self.ax.legend(fontsize=7, loc="best")
        self.fig.tight_layout()
        self.fig.savefig(path, dpi=100)
        self.plt.close(self.fig)
        return path


def _upper(*series: Series, floor: float = 0.1) -> float:
    top = max((max(ys) for _, ys in series if ys), default=0.0)
    return max(floor, top * 1.15)


def _outcome_bars(path: Path, records: Sequence[dict[str, Any]], iterations: list[int]) -> Path:
    """Stacked bars: per iteration (or per bin of iterations, on long runs), how many
    candidates were admitted, valid but not admitted, or rejected at each validation stage."""
    per_bin = max(1, -(-len(records) // 40))  # at most ~40 bars, so each stays visible
    title = "What became of the designed candidates"
    fig = _Figure(title + (f" (per {per_bin} iterations)" if per_bin > 1 else ""), "candidates", iterations)
    ax = fig.ax
    bins = [records[i:i + per_bin] for i in range(0, len(records), per_bin)]
    rows: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(bins))
    for b, chunk in enumerate(bins):
        for r in chunk:
            rows["admitted"][b] += float(r.get("admitted") or 0)
            rejected = r.get("rejected_at") or {}
            for stage, n in rejected.items():
                rows[f"rejected at {stage}"][b] += float(n)
            not_admitted = (r.get("designed") or 0) - (r.get("admitted") or 0) - sum(rejected.values())
            if not_admitted > 0:
                rows["valid, not admitted"][b] += float(not_admitted)
    # a bar stands over the iterations it sums
    xs = [(int(chunk[0]["iteration"]) + int(chunk[-1]["iteration"])) / 2 for chunk in bins]
    width = 0.8 * per_bin
    bottom = [0.0] * len(bins)
    order = ["admitted", "valid, not admitted"] + sorted(k for k in rows if k.startswith("rejected"))
    for name in order:
        if name not in rows or not any(rows[name]):
            continue
        color = "tab:green" if name == "admitted" else ("tab:olive" if name.startswith("valid") else None)
        ax.bar(xs, rows[name], width=width, bottom=bottom, label=name, color=color, edgecolor="white", linewidth=0.5)
        bottom = [b + v for b, v in zip(bottom, rows[name], strict=True)]
        fig.drawn += 1
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return fig.save(path, ylim=(0, max(bottom, default=0) * 1.25 + 0.5))


def _plots(out: Path, run: Path, records: Sequence[dict[str, Any]], skills: dict[str, str]) -> list[tuple[str, str]]:
    its = [int(r["iteration"]) for r in records]
    figures: list[tuple[str, str]] = []

    def add(name: str, title: str) -> None:
        figures.append((name, title))

    f = _Figure("Regret of the played environments", "regret", its)
    mean, top = _series(records, "regret_mean"), _series(records, "regret_max")
    f.line("mean", mean)
    f.line("max", top, marker="^", style="--")
    f.save(out / "regret.png", ylim=(0, _upper(mean, top)))
    add("regret.png", "Regret of the played environments (hinted return minus unhinted, floored at 0)")

    f = _Figure("Agent with and without the hint", "win rate / return", its)
    f.line("win rate, unhinted", _series(records, "win_rate"), marker="o", color="tab:blue")
    f.line("win rate, hinted", _series(records, "hinted_win_rate"), marker="s", style="--", color="tab:orange")
    f.line("return, unhinted", _series(records, "return_unhinted"), marker="v", style=":", color="tab:cyan")
    f.line("return, hinted", _series(records, "return_hinted"), marker="^", style="-.", color="tab:red")
    f.save(out / "win_rate.png", ylim=(-0.03, 1.03))
    add("win_rate.png", "Win rate and mean return of the agent, unhinted and hinted")

    _outcome_bars(out / "admission.png", records, its)
    add("admission.png", "Designed candidates per iteration: admitted, or where validation rejected them")

    f = _Figure("Regret by skill", "mean regret", its)
    by_skill = _per_skill(records, skills, "regret")
    for skill, s in sorted(by_skill.items()):
        f.line(skill, s)
    f.save(out / "skill_regret.png", ylim=(0, _upper(*by_skill.values())))
    add("skill_regret.png", "Mean regret of the played environments, per skill")

    f = _Figure("Win rate by skill", "mean win rate (unhinted)", its)
    for skill, s in sorted(_per_skill(records, skills, "win_rate").items()):
        f.line(skill, s)
    f.save(out / "skill_win_rate.png", ylim=(-0.03, 1.03))
    add("skill_win_rate.png", "Unhinted win rate of the played environments, per skill")

    f = _Figure("Admitted pool by skill", "admitted environments", its)
    for skill, s in sorted(_nested(records, "pool_by_skill").items()):
        f.line(skill, s)
    f.line("total", _series(records, "pool_size"), marker="D", style="--", color="black")
    f.save(out / "pool.png")
    add("pool.png", "Admitted environments in the run's store, per skill")

    f = _Figure("Difficulty of the played environments", "difficulty", its)
    f.line("measured (1 - win rate)", _series(records, "measured_difficulty"))
    f.line("declared by the designer", _series(records, "declared_difficulty"), marker="s", style="--")
    f.save(out / "difficulty.png", ylim=(-0.03, 1.03))
    add("difficulty.png", "Difficulty: measured against declared")

    f = _Figure("Rewards and training loss", "value", its)
    f.line("designer reward (mean)", _series(records, "designer_reward_mean"))
    f.line("agent reward (mean)", _series(records, "agent_reward_mean"), marker="s", style="--")
    loss = _series([{"iteration": r["iteration"], **(r.get("train") or {})} for r in records], "loss")
    f.line("training loss", loss, marker="x", style=":")
    f.save(out / "rewards.png")
    add("rewards.png", "Mean rewards of each role and the GRPO loss")
    return figures


def _diagnostics(out: Path, records: Sequence[dict[str, Any]], designs: Sequence[dict[str, Any]]) -> str:
    """The paper's diagnostics (:mod:`spade_trainer.diagnostics`): a plot and the repeats."""
    from .diagnostics import LEARNABLE, NEAR_DUPLICATE, diagnose

    d = diagnose(records, designs)

    def series(values: Sequence[float | None]) -> Series:
        pairs = [(i, v) for i, v in zip(d.iterations, values, strict=True) if v is not None]
        return [i for i, _ in pairs], [float(v) for _, v in pairs]

    f = _Figure("Learnable share and diversity of the admitted pool", "share", d.iterations)
    f.line(f"learnable share (win rate in [{LEARNABLE[0]}, {LEARNABLE[1]}])", series(d.learnable))
    f.line("diversity / n of the admitted pool (Vendi, 4-gram stand-in)", series(d.diversity), marker="s", style="--")
    f.save(out / "diagnostics.png", ylim=(-0.03, 1.03))
    f = _Figure("Distinct reward levels per environment", "levels (mean)", d.iterations)
    f.line("distinct unhinted returns per environment", series(d.levels))
    f.save(out / "reward_levels.png", ylim=(0, _upper(series(d.levels), floor=2.0)))
    flag = ("<b>collapse: most recent admissions repeat earlier ones</b>" if d.collapsed
            else "no collapse (most recent admissions are new)")
    rows = "\n".join(f"<tr><td>{it}</td><td>{_e(env)}</td><td class=l>{_e(why)}</td></tr>"
                      for it, env, why in d.repeated[-40:])
    table = (f"<table id=repeats><tr><th>iteration</th><th>environment</th><th>repeats</th></tr>\n{rows}</table>"
             if rows else "<p>No admitted environment repeats an earlier one.</p>")
    return f"""<p id=collapse>{flag}; {sum(d.repeats)} of {sum(d.admitted)} admissions repeat a class name or
are near-duplicates (4-gram cosine &ge; {NEAR_DUPLICATE}) of an earlier admission.</p>
<figure><img src="diagnostics.png" alt="learnable share and diversity"><figcaption>Learnable share of the played
environments and diversity of the admitted pool (Vendi score / n over character 4-gram vectors of the code: a
stand-in for the paper's embeddings)</figcaption></figure>
<figure><img src="reward_levels.png" alt="reward levels"><figcaption>Distinct unhinted returns per environment
(1: every play scored alike, no signal)</figcaption></figure>
{table}
"""


# --- the page ------------------------------------------------------------------------------


def _f(v: Any, spec: str = ".3f") -> str:
    return "-" if not isinstance(v, (int, float)) or isinstance(v, bool) else format(v, spec)


def _e(v: Any) -> str:
    return html.escape("-" if v is None else str(v))


def _headline(run: Path, records: Sequence[dict[str, Any]], config: dict[str, Any]) -> str:
    """What ran and what came out, in sentences."""
    first, last = records[0], records[-1]
    designed = sum(int(r.get("designed") or 0) for r in records)
    admitted = sum(int(r.get("admitted") or 0) for r in records)
    episodes = sum(int(r.get("episodes") or 0) for r in records)
    model_cfg = config.get("model")
    model = (model_cfg.get("source") if isinstance(model_cfg, dict) else model_cfg) or "the configured model"
    domain = config.get("domain") or "its domain"
    n = len(records)
    parts = [
        f"Self-play run <b>{_e(run.name)}</b>: {n} iteration{'s' if n != 1 else ''} "
        f"({_e(first['iteration'])} to {_e(last['iteration'])}) of {_e(model)} on the {_e(domain)} domain.",
        f"The designer wrote {designed} candidate environment{'s' if designed != 1 else ''}, of which "
        f"{admitted} {'was' if admitted == 1 else 'were'} admitted"
        + (f" ({admitted / designed:.0%})" if designed else "") + ";"
        f" the agent played {episodes} episode{'s' if episodes != 1 else ''}.",
    ]
    if last.get("pool_size") is not None:
        parts.append(f"The admitted pool ends at {_e(last.get('pool_size'))} environments.")
    if last.get("win_rate") is not None:
        parts.append(
            f"In the last iteration the agent won {_f(last.get('win_rate'), '.0%')} of its unhinted plays and "
            f"{_f(last.get('hinted_win_rate'), '.0%')} with the hint; mean regret {_f(last.get('regret_mean'))}"
            f" (max {_f(last.get('regret_max'))})."
        )
    updates = [r.get("update") or {} for r in records]
    real = sum(1 for u in updates if (u.get("param_delta_l2") or 0) > 0)
    if any(u for u in updates):
        parts.append(f"{real} of {n} policy updates changed the weights.")
    return " ".join(parts)


def _env_table(records: Sequence[dict[str, Any]], skills: dict[str, str]) -> str:
    stats: dict[str, list[dict[str, float]]] = defaultdict(list)
    for r in records:
        for env_id, s in (r.get("per_env") or {}).items():
            stats[env_id].append({"iteration": r["iteration"], **(s or {})})
    if not stats:
        return "<p>No environment was played yet.</p>"
    rows = []
    for env_id, seen in sorted(stats.items(), key=lambda kv: -max((s.get("regret") or 0) for s in kv[1])):
        regrets = [s["regret"] for s in seen if isinstance(s.get("regret"), (int, float))]
        rows.append(
            f"<tr><td class=l>{_e(env_id)}</td><td class=l>{_e(skills.get(env_id))}</td><td>{len(seen)}</td>"
            f"<td>{_f(sum(regrets) / len(regrets) if regrets else None)}</td><td>{_f(seen[-1].get('regret'))}</td>"
            f"<td>{_f(seen[-1].get('win_rate'))}</td><td>{_e(seen[-1]['iteration'])}</td></tr>"
        )
    return ("<table id=envs><tr><th>environment</th><th>skill</th><th>iterations played</th><th>mean regret</th>"
            "<th>last regret</th><th>last win rate</th><th>last played</th></tr>" + "\n".join(rows) + "</table>")


def _designs_section(designs: Sequence[dict[str, Any]]) -> str:
    if not designs:
        return "<p>This run kept no designed environments (runs before the archive existed keep none).</p>"
    shown = list(designs)[-SHOWN_DESIGNS:]
    items = []
    for d in reversed(shown):
        if d.get("admitted"):
            verdict = "<span class=ok>admitted</span>"
        elif d.get("valid"):
            verdict = "<span class=mid>valid, not admitted</span>"
        else:
            verdict = f"<span class=bad>rejected at {_e(d.get('failed_stage'))}</span>"
        reasons = "".join(f"<li>{_e(r)}</li>" for r in d.get("reasons") or [])
        extra = f" &middot; {_e(d['operator'])} of {_e(d.get('parent_id'))}" if d.get("operator") == "edit" else ""
        items.append(
            f"<details class=design><summary>iteration {_e(d.get('iteration'))} &middot; {_e(d.get('skill'))} &middot; "
            f"{_e(d.get('env_id') or 'no id')} &middot; {verdict}{extra}</summary>"
            + (f"<ul>{reasons}</ul>" if reasons else "")
            + (f"<p><b>hint:</b> {_e(d.get('hint'))}</p>" if d.get("hint") else "")
            + (f"<pre class=code>{_e(d.get('code'))}</pre>" if d.get("code") else "<p>(no code extracted)</p>")
            + "</details>"
        )
    more = f"<p>{len(designs) - len(shown)} older designs are in {DESIGNS_FILE}.</p>" if len(designs) > len(shown) else ""
    return more + "\n".join(items)


def _transcripts_section(transcripts: Sequence[dict[str, Any]]) -> str:
    if not transcripts:
        return "<p>This run kept no transcripts.</p>"
    shown = list(transcripts)[-SHOWN_TRANSCRIPTS:]
    items = []
    for t in reversed(shown):
        end = "hung" if t.get("hung") else ("terminated" if t.get("terminated") else
                                            ("truncated" if t.get("truncated") else "unfinished"))
        turns = "".join(
            f"<div class='msg {html.escape(str(m.get('role')))}'><b>{_e(m.get('role'))}</b><pre>{_e(m.get('content'))}</pre></div>"
            for m in t.get("messages") or []
        )
        items.append(
            f"<details class=transcript><summary>iteration {_e(t.get('iteration'))} &middot; {_e(t.get('env_id'))} &middot; "
            f"{'hinted' if t.get('hinted') else 'unhinted'} &middot; return {_f(t.get('return'), '.2f')} &middot; "
            f"{_e(t.get('turns'))} turns &middot; {end}</summary>"
            + (f"<p class=bad>{_e(t.get('error'))}</p>" if t.get("error") else "")
            + turns + "</details>"
        )
    return "\n".join(items)


STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;padding:0 1.5em;max-width:1320px;color:#222;line-height:1.4}
figure{display:inline-block;margin:.5em;vertical-align:top} figure img{width:620px}
figcaption{font-size:.85em;color:#555;max-width:620px}
table{border-collapse:collapse;font-size:.9em} td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
td.l{text-align:left} pre{background:#f6f6f6;padding:.6em;overflow:auto;white-space:pre-wrap}
pre.code{max-height:32em} .ok{color:#1a7f37;font-weight:600} .bad{color:#b42318;font-weight:600}
.mid{color:#946200;font-weight:600} details{margin:.3em 0;border:1px solid #ddd;padding:.3em .6em;border-radius:4px}
.msg.user pre{background:#eef4ff} .msg.assistant pre{background:#f3fbef} .lead{font-size:1.05em;max-width:60em}
"""


def _times_section(run: Path) -> str:
    """Where each iteration's time went (the loop's stages, and generation within rollouts)."""
    from .timings import STAGES, read_times

    try:
        times = read_times(run)
    except TrainerError:
        return "<p>No stage times recorded.</p>"
    generate = {r["iteration"]: (r.get("timings") or {}).get("generate_s") for r in read_metrics(run)}
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in STAGES)
    rows = "\n".join(
        f"<tr><td>{t.iteration}</td>" + "".join(f"<td>{_f(t.stages[name], '.1f')}</td>" for name, _ in STAGES)
        + f"<td>{_f(generate.get(t.iteration), '.1f')}</td><td>{_f(t.total, '.1f')}</td></tr>"
        for t in times
    )
    return (f"<table id=times><tr><th>iteration</th>{head}<th>of rollouts: generate</th><th>total</th></tr>\n"
            f"{rows}</table>")


def learning_section(run: Path, out: Path) -> str:
    """The run's held-out learning curve (``learning.json``, :mod:`.learning`): its plot,
    table and verdict; empty when the folder holds none."""
    from .learning import read_learning
    from .learning_report import behaviour_table, learning_table, plot_learning

    data = read_learning(run)
    if data is None or not data.get("trained"):
        return ""
    plot_learning([data], out / "learning.png")

    def rows_of(markdown: str) -> str:
        lines = markdown.strip().splitlines()
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines if not line.startswith("|---")]
        return "\n".join("<tr>" + "".join(f"<{'th' if i == 0 else 'td'}>{html.escape(c)}</{'th' if i == 0 else 'td'}>"
                                          for c in r) + "</tr>" for i, r in enumerate(cells))

    rows = rows_of(learning_table(data))
    behaviour = behaviour_table(data)
    behaviour_html = (f"<p>What the trained policy did:</p><table id=behaviour>{rows_of(behaviour)}</table>"
                      if behaviour else "")
    updates = (data.get("updates") or {}).get("trained") or []
    secs = [u["seconds"] for u in updates if isinstance(u.get("seconds"), (int, float))]
    verdict = data.get("verdict") or {}
    s = data.get("settings") or {}
    return f"""<h2 id=learning>Does the agent get better? Held-out success</h2>
<p class=lead>Success on held-out instances of <b>{_e(s.get("target", "higher_lower"))}</b> (never trained on) before
the first update and after {_e(", ".join(str(e["update"]) for e in data["trained"][1:]) or "-")} update(s), beside the
learning-rate-0 control (the initial policy, evaluated with each point's sampling seed) and the best constant policy
({_e(data.get("constant_action"))}: {_f(data.get("constant"))}). Rose (intervals apart):
<b>{_e(verdict.get("rose"))}</b>; above the best constant: <b>{_e(verdict.get("above_constant"))}</b>; control rose:
<b>{_e(verdict.get("control_rose"))}</b>; verdict: <b>{_e(verdict.get("learnability", "-"))}</b>. Seed
{_e(s.get("seed"))}, learning rate {_e(s.get("learning_rate"))}, temperature {_e(s.get("temperature"))},
{_e(s.get("episodes"))} held-out instances per evaluation.</p>
<figure><img src="learning.png" alt="learning curve"><figcaption>Held-out success with 95% (Wilson) intervals: trained
(solid), control at learning rate 0 (dashed), best constant policy (dotted)</figcaption></figure>
<table id=learning-table>{rows}</table>
{behaviour_html}
<p>Seconds per iteration (collection and update): {_f(sum(secs) / len(secs), ".1f") if secs else "-"} on average;
the curve's own measurements took {_e(data.get("seconds"))} s.</p>
"""


def _learning_page(run: Path, out: Path) -> Path:
    section = learning_section(run, out)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>SPADE learning report: {html.escape(run.name)}</title>
<style>{STYLE}</style></head>
<body><h1>Learning report: {html.escape(run.name)}</h1>
{section}
</body></html>
"""
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write ``report.html`` and one PNG per plot; returns the HTML path. A learning
    experiment's folder (``learning.json``, no iterations) gets its learning page."""
    run = Path(run_dir)
    out = Path(out_dir) if out_dir else run / "report"
    if (run / "learning.json").is_file() and not (run / "metrics.jsonl").is_file():
        out.mkdir(parents=True, exist_ok=True)
        return _learning_page(run, out)
    records = read_metrics(run)
    if not records:
        raise ConfigError(f"{run / 'metrics.jsonl'} holds no iterations yet")
    out.mkdir(parents=True, exist_ok=True)
    designs = read_archive(run / DESIGNS_FILE)
    transcripts = read_archive(run / TRANSCRIPTS_FILE)
    skills = _env_skills(run, designs)
    figures = _plots(out, run, records, skills)
    config_path = run / "config.json"
    config_text = config_path.read_text(encoding="utf-8") if config_path.is_file() else "{}"
    try:
        config = json.loads(config_text)
    except json.JSONDecodeError:
        config = {}
    body = "\n".join(
        f'<figure><img src="{html.escape(n)}" alt="{html.escape(t)}"><figcaption>{html.escape(t)}</figcaption></figure>'
        for n, t in figures
    )
    rows = "\n".join(
        f"<tr><td>{r['iteration']}</td><td>{_e(r.get('designed'))}</td><td>{_e(r.get('admitted'))}</td>"
        f"<td class=l>{_e(', '.join(f'{k} {v}' for k, v in (r.get('rejected_at') or {}).items()) or '-')}</td>"
        f"<td>{_e(r.get('envs_played'))}</td><td>{_f(r.get('regret_mean'))}</td><td>{_f(r.get('win_rate'))}</td>"
        f"<td>{_f(r.get('hinted_win_rate'))}</td><td>{_e(r.get('pool_size'))}</td>"
        f"<td>{_f((r.get('train') or {}).get('loss'))}</td><td>{_f((r.get('update') or {}).get('param_delta_l2'), '.2e')}</td></tr>"
        for r in records
    )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>SPADE self-play report: {html.escape(run.name)}</title>
<style>{STYLE}</style></head>
<body><h1>Self-play report: {html.escape(run.name)}</h1>
<p class=lead id=headline>{_headline(run, records, config)}</p>
{learning_section(run, out)}
<h2>Plots</h2>
{body}
<h2>Environments played</h2>
{_env_table(records, skills)}
<h2>Designed environments (newest first)</h2>
{_designs_section(designs)}
<h2>Episode transcripts (a sample, newest first)</h2>
{_transcripts_section(transcripts)}
<h2>Diagnostics</h2>
{_diagnostics(out, records, designs)}
<h2>Where the time went (s)</h2>
{_times_section(run)}
<h2>Iterations</h2>
<table id=iterations><tr><th>iteration</th><th>designed</th><th>admitted</th><th>rejected at</th><th>envs played</th>
<th>regret</th><th>win rate</th><th>hinted win rate</th><th>pool</th><th>loss</th><th>weight change</th></tr>
{rows}</table>
<h2>Configuration</h2><details><summary>config.json</summary><pre>{html.escape(config_text)}</pre></details>
</body></html>
"""
    page_path = out / "report.html"
    page_path.write_text(page, encoding="utf-8")
    return page_path
