"""Specification of the Ray executor: environment stepping on Ray actors, same results
as the local sandbox pool, same error kinds, and a single-machine path that never imports ray.

The Ray tests share one local Ray instance (2 CPUs, loopback, no dashboard) for the module.
They skip when ray is not installed, except under ``CI=true``, where they fail instead.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spade_core.plugins import get_plugins
from spade_sandbox.errors import (
    EnvCodeError,
    EnvContractViolation,
    SandboxCrash,
    SandboxError,
    SandboxRequestError,
    StaticCheckError,
)
from spade_sandbox.launcher import SandboxLauncher
from spade_trainer.distributed import (
    RayEnvPool,
    RaySettings,
    RayUnavailable,
    RolloutExecutorSettings,
    build_env_backend,
    env_backend_for,
)
from spade_trainer.distributed.executor import import_ray
from spade_trainer.distributed.wire import (
    decode_error,
    decode_reset,
    decode_step,
    encode_error,
    encode_reset,
    encode_step,
)
from spade_trainer.policy import Generation, Sampling
from spade_trainer.rollout import EpisodeSpec, PlayableEnv, RolloutEngine

from spade_sandbox import SandboxLimits, SandboxPool
from spade_sandbox import errors as sandbox_errors

HAVE_RAY = importlib.util.find_spec("ray") is not None
IN_CI = os.environ.get("CI", "").lower() == "true"

needs_ray = pytest.mark.skipif(not HAVE_RAY and not IN_CI, reason="ray is not installed (pip install 'spade-trainer[ray]')")

#: The step deadline of both pools in these tests: short, so the hang test is quick.
STEP_TIMEOUT_S = 2.0

HANG_ENV = '''
class HangEnv:
    """Steps normally, except that the action 'hang' loops forever."""

    def reset(self, seed=None):
        self.n = 0
        return "Say something.", {}

    def step(self, action):
        if "hang" in action:
            while True:
                self.n += 1
        return "Again.", 0.0, False, False, {}
'''

BROKEN_ENV = '''
class BrokenEnv:
    def reset(self, seed=None):
        raise ValueError("broken on purpose")

    def step(self, action):
        return "x", 0.0, True, False, {}
'''


def _games() -> Any:
    return get_plugins().domain("games")


def _playable(seed_env: Any, max_turns: int) -> PlayableEnv:
    return PlayableEnv(seed_env.id, seed_env.source(), "games", skill=seed_env.skill,
                       class_name=seed_env.class_name, max_turns=max_turns)


def _limits() -> SandboxLimits:
    return SandboxLimits(call_timeout_s=STEP_TIMEOUT_S)


@pytest.fixture(scope="module")
def ray_pool() -> Iterator[RayEnvPool]:
    if not HAVE_RAY:
        pytest.fail("CI=true: ray must be installed so the Ray executor is tested (requirements-dev.txt)")
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1",
             namespace="spade-tests")
    # half a CPU each: leaves room for the extra actor of the configuration test
    pool = RayEnvPool(RaySettings(num_workers=2, cpus_per_worker=0.5, actor_grace_s=20), limits=_limits())
    try:
        yield pool
    finally:
        pool.close()
        ray.shutdown()


@pytest.fixture(scope="module")
def local_pool() -> Iterator[SandboxPool]:
    with SandboxLauncher().pool(**_limits().model_dump()) as pool:
        yield pool


class ScriptedPolicy:
    """Test double of the policy: answers every prompt with ``reply(prompt text)``."""

    def __init__(self, tokenizer: Any, reply: Callable[[str], str]) -> None:
        self.tok, self.reply = tokenizer, reply

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, sampling: Sampling,
                 seed: int | None) -> list[Generation]:
        out = []
        for p in prompts:
            ids = self.tok(self.reply(self.tok.decode(list(p))), add_special_tokens=False)["input_ids"]
            ids = (ids + [self.tok.eos_token_id])[:max_new_tokens]
            out.append(Generation(ids, [-1.0] * len(ids), True))
        return out


# --- the single-machine path ---------------------------------------------------------------


def test_the_local_path_never_imports_ray() -> None:
    script = textwrap.dedent(
        """
        import sys
        import spade_trainer, spade_trainer.rollout, spade_trainer.selfplay, spade_trainer.distributed
        from spade_core.plugins import get_plugins
        from spade_trainer.config import load_selfplay_config
        from spade_trainer.selfplay import SelfPlayRun
        seed = get_plugins().domain("games").seed_envs[0]
        config = load_selfplay_config(overrides=["rollout.executor=local", "sandbox.step_timeout_s=5"])
        pool = SelfPlayRun(config)._default_backend()  # what SelfPlayRun.setup() builds
        assert type(pool).__name__ == "SandboxPool", pool
        h = pool.spawn(seed.source(), class_name=seed.class_name)
        (obs, _), = pool.reset_many([(h, 0)])
        (res,) = pool.step_many([(h, "\\\\boxed{nothing}")])
        assert isinstance(obs, str) and isinstance(res, tuple), (obs, res)
        pool.close()
        print("ray imported:", "ray" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ray imported: False")


def test_ray_executor_without_ray_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail as if not installed
    with pytest.raises(RayUnavailable, match=r"pip install 'spade-trainer\[ray\]'"):
        import_ray()
    with pytest.raises(RayUnavailable):
        build_env_backend(RolloutExecutorSettings(executor="ray"))


def test_the_executor_is_chosen_in_the_run_configuration() -> None:
    from spade_trainer.config import SelfPlayConfig, load_selfplay_config
    from spade_trainer.errors import ConfigError

    assert SelfPlayConfig().rollout.executor == "local"
    cfg = load_selfplay_config(overrides=["rollout.executor=ray", "rollout.ray.address=auto", "rollout.ray.num_workers=4"])
    assert (cfg.rollout.executor, cfg.rollout.ray.address, cfg.rollout.ray.num_workers) == ("ray", "auto", 4)
    # where environments run does not change results: a run may resume on another executor
    assert cfg.fingerprint() == SelfPlayConfig().fingerprint()
    with pytest.raises(ConfigError, match=r"rollout\.executor"):
        load_selfplay_config(overrides=["rollout.executor=dask"])
    with pytest.raises(ConfigError, match=r"rollout\.ray\.num_workers"):
        load_selfplay_config(overrides=["rollout.ray.num_workers=0"])


def test_executor_settings_are_validated() -> None:
    from pydantic import ValidationError

    assert RolloutExecutorSettings().executor == "local"
    with pytest.raises(ValidationError):
        RolloutExecutorSettings(executor="dask")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        RaySettings(num_workers=0)
    with pytest.raises(ValidationError):
        RaySettings(adress="auto")  # type: ignore[call-arg]  # a typo is an error, not ignored


# --- the wire between actors and the driver ------------------------------------------------

_ERROR_CLASSES = [c for c in (getattr(sandbox_errors, n) for n in sandbox_errors.__all__)
                  if isinstance(c, type) and issubclass(c, SandboxError) and c not in (StaticCheckError, EnvContractViolation)]
_text = st.text(max_size=200)
_info = st.dictionaries(st.text(max_size=8), st.one_of(st.integers(-(2**31), 2**31), st.booleans(), _text), max_size=4)


@given(cls=st.sampled_from(_ERROR_CLASSES), message=_text, tb=st.one_of(st.none(), _text))
def test_every_sandbox_error_crosses_as_the_same_class(cls: type[SandboxError], message: str, tb: str | None) -> None:
    back = decode_error(encode_error(cls(message, env_traceback=tb)), "step()")
    assert type(back) is cls and back.kind == cls.kind
    assert back.message == message and back.env_traceback == tb


def test_static_findings_and_contract_methods_cross_intact() -> None:
    from spade_sandbox import StaticFinding

    findings = [StaticFinding(3, 4, "import", "os is not allowed"), StaticFinding(9, 0, "dunder", "no __class__")]
    back = decode_error(encode_error(StaticCheckError(findings)), "spawn")
    assert isinstance(back, StaticCheckError) and back.findings == findings
    contract = decode_error(encode_error(EnvContractViolation("NaN reward", method="step")), "step()")
    assert isinstance(contract, EnvContractViolation) and contract.method == "step" and contract.message == "NaN reward"


@given(obs=_text, reward=st.floats(allow_nan=False, allow_infinity=False), term=st.booleans(), trunc=st.booleans(),
       info=_info)
def test_valid_results_cross_unchanged(obs: str, reward: float, term: bool, trunc: bool, info: dict[str, Any]) -> None:
    assert decode_step(encode_step((obs, reward, term, trunc, info)), 10_000) == (obs, reward, term, trunc, info)
    assert decode_reset(encode_reset((obs, info)), 10_000) == (obs, info)


@given(reward=st.sampled_from([float("nan"), float("inf"), 1, "1.0", None]))
def test_invalid_results_are_refused_on_the_driver(reward: Any) -> None:
    assert isinstance(decode_step(["ok", "obs", reward, False, False, {}], 10_000), EnvContractViolation)
    assert isinstance(decode_step(["ok", "x" * 11, 0.0, False, False, {}], 10), EnvContractViolation)
    assert isinstance(decode_reset(["ok", 3, {}], 10_000), EnvContractViolation)
    assert isinstance(decode_step(["what"], 10_000), SandboxCrash)


# --- on a local Ray instance -----------------------------------------------------------------


def _solution_actions(pool: Any, handle: Any) -> list[str]:
    sol = pool.call(handle, "solution")
    return [sol] if isinstance(sol, str) else list(sol)


def _replay(pool: Any, seeds: list[Any], seed_numbers: list[int]) -> list[list[Any]]:
    """Reset every (env, seed), then step all of them in lockstep through their solutions."""
    handles = [pool.spawn(s.source(), class_name=s.class_name) for s in seeds]
    try:
        trace: list[list[Any]] = [[r] for r in pool.reset_many(list(zip(handles, seed_numbers, strict=True)))]
        plans = [_solution_actions(pool, h) for h in handles]
        for turn in range(max(len(p) for p in plans)):
            live = [i for i, p in enumerate(plans) if turn < len(p)]
            for i, res in zip(live, pool.step_many([(handles[i], plans[i][turn]) for i in live]), strict=True):
                trace[i].append(res)
        return trace
    finally:
        for h in handles:
            pool.close_env(h)


@needs_ray
def test_seed_env_steps_are_identical_on_ray_and_local(ray_pool: RayEnvPool, local_pool: SandboxPool) -> None:
    games = _games()
    seeds = [games.seed("polynomial_probe"), games.seed("code_breaker"), games.seed("affine_cipher")] * 2
    numbers = [0, 1, 2, 3, 4, 5]
    on_ray, local = _replay(ray_pool, seeds, numbers), _replay(local_pool, seeds, numbers)
    assert on_ray == local
    assert all(not isinstance(r, BaseException) for trace in on_ray for r in trace)
    # the solutions are real plays: every replay ends with the full reward
    assert all(trace[-1][1] == 1.0 and trace[-1][2] for trace in on_ray)


def _probing_reply(prompt: str) -> str:
    # a different action for each conversation state, so that episodes diverge
    return f"\\boxed{{{sum(prompt.encode()) % 7}}}"


@needs_ray
def test_a_rollout_batch_is_identical_on_ray_and_local(ray_pool: RayEnvPool, local_pool: SandboxPool,
                                                      tiny_tokenizer: Any) -> None:
    envs = [_playable(s, max_turns=4) for s in _games().seed_envs[:4]]
    specs = [EpisodeSpec(e, False, seed) for seed in (0, 1) for e in envs]

    def play(pool: Any) -> list[Any]:
        engine = RolloutEngine(pool, ScriptedPolicy(tiny_tokenizer, _probing_reply), tiny_tokenizer)
        return engine.run(specs, seed=7)

    on_ray, local = play(ray_pool), play(local_pool)
    for a, b in zip(on_ray, local, strict=True):
        assert a.error is None and b.error is None
        assert (a.completion_ids, a.env_mask, a.rewards, a.messages) == (b.completion_ids, b.env_mask, b.rewards, b.messages)
        assert (a.turns, a.terminated, a.truncated, a.episode_return) == (b.turns, b.terminated, b.truncated, b.episode_return)
    assert sum(a.turns for a in on_ray) >= 2 * len(specs)
    assert len({a.messages[-2]["content"] for a in on_ray}) > 1  # the plays really differ


@needs_ray
def test_instances_spread_over_the_actors(ray_pool: RayEnvPool) -> None:
    seed = _games().seed("code_breaker")
    handles = [ray_pool.spawn(seed.source(), class_name=seed.class_name) for _ in range(4)]
    try:
        assert sorted(h.slot for h in handles) == [0, 0, 1, 1]
        actors = ray_pool.actors()
        assert len({a["pid"] for a in actors}) == 2 and all(a["instances"] >= 2 for a in actors)
    finally:
        for h in handles:
            ray_pool.close_env(h)


@needs_ray
def test_a_hung_env_costs_the_penalty_without_stalling_the_batch(ray_pool: RayEnvPool, tiny_tokenizer: Any) -> None:
    hang = PlayableEnv("hang-v1", HANG_ENV, "games", max_turns=3)
    seed = _playable(_games().seed("code_breaker"), max_turns=3)
    specs = [EpisodeSpec(seed, False, 0), EpisodeSpec(hang, False, 0), EpisodeSpec(seed, False, 1)]
    engine = RolloutEngine(ray_pool, ScriptedPolicy(tiny_tokenizer, lambda _: "\\boxed{hang}"), tiny_tokenizer)
    first, hung, last = engine.run(specs)
    assert hung.hung and hung.turns == 1 and hung.episode_return == -0.5
    assert "SandboxTimeout" in (hung.error or "")
    assert first.turns == last.turns == 3 and first.error is None and last.error is None
    # the sandbox killed only the hung worker: the same code spawns again on a fresh one
    h = ray_pool.spawn(HANG_ENV)
    assert ray_pool.reset(h, 0)[0] == "Say something."
    ray_pool.close_env(h)


@needs_ray
def test_env_errors_come_back_as_the_same_sandbox_errors(ray_pool: RayEnvPool) -> None:
    with pytest.raises(StaticCheckError) as static:
        ray_pool.spawn("import os\n\nclass BadEnv:\n    pass\n")
    assert any("os" in f.message for f in static.value.findings)
    h = ray_pool.spawn(BROKEN_ENV)
    (res,) = ray_pool.reset_many([(h, 0)])
    assert isinstance(res, EnvCodeError) and "broken on purpose" in (res.env_traceback or str(res))
    ray_pool.close_env(h)
    (closed,) = ray_pool.step_many([(h, "x")])
    assert isinstance(closed, SandboxRequestError)


@needs_ray
def test_a_dead_actor_fails_only_its_own_items_and_is_replaced(ray_pool: RayEnvPool) -> None:
    import ray

    seed = _games().seed("affine_cipher")
    a, b = (ray_pool.spawn(seed.source(), class_name=seed.class_name) for _ in range(2))
    assert a.slot != b.slot
    # the cluster loses the actor's process (as when its node goes away)
    victim = ray_pool._slots[a.slot].actor
    os.kill(ray.get(victim.where.remote())["pid"], signal.SIGKILL)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(victim.where.remote(), timeout=60)
    res_a, res_b = ray_pool.reset_many([(a, 0), (b, 0)])
    assert isinstance(res_a, SandboxCrash) and not isinstance(res_b, BaseException)
    (again,) = ray_pool.step_many([(a, "x")])
    assert isinstance(again, SandboxCrash) and "instance lost" in str(again)
    c = ray_pool.spawn(seed.source(), class_name=seed.class_name)  # the slot gets a fresh actor
    assert c.slot == a.slot and c.generation == a.generation + 1
    assert isinstance(ray_pool.reset(c, 0)[0], str)
    for h in (b, c):
        ray_pool.close_env(h)


@needs_ray
def test_the_run_configuration_selects_ray(ray_pool: RayEnvPool) -> None:
    from spade_trainer.config import load_selfplay_config

    cfg = load_selfplay_config(overrides=["rollout.executor=ray", "rollout.ray.num_workers=1",
                                          "rollout.ray.cpus_per_worker=0.25", "sandbox.step_timeout_s=5"])
    from spade_trainer.selfplay import SelfPlayRun

    with env_backend_for(cfg.model_copy(update={"rollout": RolloutExecutorSettings()})) as local:
        assert isinstance(local, SandboxPool)
    pool = SelfPlayRun(cfg)._default_backend()  # what SelfPlayRun.setup() builds
    try:
        assert isinstance(pool, RayEnvPool) and pool.num_workers == 1 and pool.limits.call_timeout_s == 5
    finally:
        pool.close()  # joined the running instance: closing the pool leaves Ray up
    import ray

    assert ray.is_initialized()
    with pytest.raises(SandboxRequestError, match="closed"):
        pool.spawn(HANG_ENV)


def test_an_actor_takes_each_source_once_and_answers_in_plain_values() -> None:
    from spade_core.metadata import code_hash
    from spade_trainer.distributed.actor import UNKNOWN_CODE, SandboxActor

    seed = _games().seed("code_breaker")
    source, digest = seed.source(), code_hash(seed.source())
    actor = SandboxActor(_limits().model_dump())
    try:
        assert actor.spawn(digest, None, [], seed.class_name) == [UNKNOWN_CODE]  # never sent: ask for it
        ok, first = actor.spawn(digest, source, [], seed.class_name)
        ok2, second = actor.spawn(digest, None, [], seed.class_name)  # later spawns name the hash only
        assert ok == ok2 == "ok" and first != second
        reset, _ = actor.reset_many([(first, 3), (second, 4)])
        (step,) = actor.step_many([(second, "\\boxed{nothing}")])
        assert reset[0] == "ok" and type(reset[1]) is str and type(reset[2]) is dict
        assert step[0] == "ok" and len(step) == 6 and type(step[2]) is float
        actor.close_env(first)
        (gone,) = actor.step_many([(first, "x")])
        assert gone[:2] == ["err", "SandboxRequestError"]
    finally:
        actor.shutdown()
