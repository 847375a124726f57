"""Per-iteration metrics: one JSON line per iteration, mirrored to TensorBoard / W&B when enabled."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from spade_core.app.jsonl import read_jsonl

from .config import LoggingSettings
from .errors import ConfigError

METRICS_FILE = "metrics.jsonl"


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _scalars(record: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in record.items():
        name = f"{prefix}{k}"
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(float(v)):
            out[name] = float(v)
        elif isinstance(v, dict):
            out.update(_scalars(v, f"{name}/"))
    return out


class MetricsLog:
    """Appends iteration records to ``RUN_DIR/metrics.jsonl`` (and TB / W&B scalars)."""

    def __init__(self, run_dir: Path, settings: LoggingSettings | None = None, *, run_name: str = "selfplay") -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        settings = settings or LoggingSettings()
        self._tb: Any = None
        self._wandb: Any = None
        if settings.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:
                raise ConfigError("logging.tensorboard needs the tensorboard package (pip install tensorboard)") from exc
            self._tb = SummaryWriter(str(Path(run_dir) / "tensorboard"))
        if settings.wandb:
            try:
                import wandb
            except ImportError as exc:
                raise ConfigError("logging.wandb needs the wandb package (pip install wandb)") from exc
            self._wandb = wandb.init(project=settings.wandb_project, name=run_name, dir=str(run_dir), reinit=True)

    def truncate_after(self, iteration: int) -> None:
        """Drop records of iterations after ``iteration`` (a resumed run redoes them)."""
        if not self.path.exists():
            return
        keep = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("iteration", 0) <= iteration]
        self.path.write_text("".join(line + "\n" for line in keep), encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        clean = _clean(record)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(clean, sort_keys=True) + "\n")
        step = int(record.get("iteration", 0))
        scalars = _scalars(clean)
        if self._tb is not None:
            for k, v in scalars.items():
                self._tb.add_scalar(k, v, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(scalars, step=step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every iteration record of a run, in order (:func:`spade_core.app.jsonl.read_jsonl`: the
    damaged last line of a run killed mid-write is skipped). Raises :class:`ConfigError`
    when ``run_dir`` has no metrics file."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise ConfigError(f"{path} does not exist: is {run_dir} a self-play run folder?")
    return read_jsonl(path)
