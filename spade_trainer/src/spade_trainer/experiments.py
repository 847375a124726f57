"""The experiments as configurations of the one self-play loop.

``spade experiment learn`` and ``spade experiment curriculum`` build a
:class:`~.config.SelfPlayConfig` from presets (``learn``: the agent alone on a fixed pool of
one environment; ``learn+spade``: SPADE's designer editing that pool's knobs;
``learn+adaptive``: the pool's knobs following the agent's success by a fixed rule) and run
it with :class:`~.selfplay.SelfPlayRun`: the same design, sandbox, validation, hint and
update code a user's run goes through. What they add is a held-out learning curve
(``[selfplay.learning]``, :mod:`.learning`) and, for ``learn``, the learnability of the
environment measured, recorded with it in the configured store
(:func:`record_learnability`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from spade_core.config import SpadeConfig
    from spade_core.metadata import EnvMetadata
    from spade_core.plugins import SpadePlugins

    from .config import SelfPlayConfig

#: ``spade experiment curriculum --arm``: the preset each arm runs.
ARMS = {"fixed": "learn", "spade": "learn+spade", "adaptive": "learn+adaptive"}


@dataclass
class ExperimentSpec:
    """What one experiment run changes of its presets (``None``: the preset's value)."""

    run_dir: Path
    seed: int = 0
    preset: str = "learn"
    #: The environment trained on and measured (``NAME[:KNOB=VALUE,...]``).
    env: str | None = None
    updates: int | None = None
    eval_every: int | None = None
    episodes: int | None = None
    learning_rate: float | None = None
    control: str | None = None
    device: str | None = None
    label: str | None = None
    overrides: Sequence[str] = field(default_factory=tuple)


def _toml(value: Any) -> str:
    import json

    return json.dumps(value)  # a JSON string or number is a TOML value too


def experiment_config(spec: ExperimentSpec, plugins: SpadePlugins, spade_config: SpadeConfig) -> SelfPlayConfig:
    """The run configuration of ``spec``: its presets, then what it names, then its overrides."""
    from .config import load_selfplay_config
    from .run_pool import resolve_refs

    sets = [f"run_dir={_toml(str(spec.run_dir))}", f"seed={spec.seed}"]
    if spec.env is not None:
        (env,) = resolve_refs([spec.env], plugins, spade_config)
        m = env.metadata
        sets += [f"domain={_toml(m.domain)}", f"skills=[{_toml(m.skill)}]", f"pool=[{_toml(spec.env)}]",
                 f"learning.target={_toml(spec.env)}"]
    for key, value in (("iterations", spec.updates), ("learning.every", spec.eval_every),
                       ("learning.episodes", spec.episodes), ("optim.learning_rate", spec.learning_rate),
                       ("learning.control", spec.control), ("model.device", spec.device),
                       ("learning.label", spec.label)):
        if value is not None:
            sets.append(f"{key}={_toml(value)}")
    if spec.updates is not None:
        sets.append(f"checkpoint_every={spec.updates}")
    cfg = load_selfplay_config(preset=spec.preset, overrides=[*sets, *spec.overrides])
    if not cfg.learning.enabled:
        raise ConfigError(f"preset {spec.preset!r} measures no learning curve: set learning.target")
    return cfg


def run_experiment(cfg: SelfPlayConfig, spade_config: SpadeConfig, plugins: SpadePlugins, console: Any) -> dict[str, Any]:
    """Run ``cfg`` to its end; its ``learning.json``."""
    from .learning import read_learning
    from .selfplay import SelfPlayRun

    SelfPlayRun(cfg, console=console, plugins=plugins, spade_config=spade_config).run()
    data = read_learning(cfg.run_dir)
    if data is None:  # pragma: no cover - a finished run always wrote it
        raise ConfigError(f"{cfg.run_dir} holds no learning.json after the run")
    return data


def learnability_record(data: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """What the store keeps of a run's curve (``StatsSnapshot.learnability``)."""
    trained, control = data["trained"], data.get("control") or []
    first, last = trained[0], trained[-1]
    return {
        "verdict": (data.get("verdict") or {}).get("learnability", "not_learned"),
        "updates": last["update"],
        "episodes": last["episodes"],
        "untrained": first["mean"], "untrained_interval": first["interval"],
        "trained": last["mean"], "trained_interval": last["interval"],
        "control": control[-1]["mean"] if control else None,
        "constant": data["constant"], "constant_action": data.get("constant_action", ""),
        "target": (data.get("settings") or {}).get("target", ""),
        "learning_rate": (data.get("settings") or {}).get("learning_rate"),
        "run": str(run_dir),
    }


def record_learnability(data: dict[str, Any], run_dir: Path, plugins: SpadePlugins,
                        spade_config: SpadeConfig) -> EnvMetadata:
    """Record a run's learnability with the environment it measured, in the configured store:
    as a stats snapshot of that environment (a seed or knob setting is stored first, as a
    ``candidate``: its own id for a seed as written, a parameter edit of it otherwise)."""
    from spade_core.app.catalog import open_store
    from spade_core.metadata import EnvStatus, StatsSnapshot

    from .run_pool import add_resolved, resolve_refs

    target = (data.get("settings") or {}).get("target")
    if not target:
        raise ConfigError(f"{run_dir / 'learning.json'} names no target environment")
    (env,) = resolve_refs([target], plugins, spade_config)
    record = learnability_record(data, run_dir)
    with open_store(spade_config) as store:
        if env.kind == "store" and env.parent is None:
            meta = env.metadata
        else:
            meta = add_resolved(store, env, status=EnvStatus.candidate)
        snapshot = StatsSnapshot(policy_snapshot=f"learn:{record['updates']} updates:seed {data['settings'].get('seed')}",
                                 samples=record["episodes"], win_rate=record["untrained"], learnability=record)
        return store.record_stats(meta.id, snapshot)


__all__ = ["ARMS", "ExperimentSpec", "experiment_config", "learnability_record", "record_learnability",
           "run_experiment"]
