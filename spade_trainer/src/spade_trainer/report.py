"""``spade report RUN_DIR``: an HTML page with plots of a self-play run, each also a PNG.

Plots: regret, win rate, admission rate by validation stage, difficulty, pool growth by
skill, and reward curves (designer, agent, training loss), read from ``metrics.jsonl``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .metrics import read_metrics


def _series(records: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for r in records:
        v = r.get(key)
        if isinstance(v, (int, float)):
            xs.append(int(r["iteration"]))
            ys.append(float(v))
    return xs, ys


def _nested(records: Sequence[dict[str, Any]], key: str) -> dict[str, tuple[list[int], list[float]]]:
    out: dict[str, tuple[list[int], list[float]]] = {}
    for r in records:
        for name, v in (r.get(key) or {}).items():
            if isinstance(v, (int, float)):
                xs, ys = out.setdefault(name, ([], []))
                xs.append(int(r["iteration"]))
                ys.append(float(v))
    return out


def _plot(path: Path, title: str, ylabel: str, lines: dict[str, tuple[list[int], list[float]]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    drawn = False
    for label, (xs, ys) in lines.items():
        if xs:
            ax.plot(xs, ys, marker="o", ms=3, lw=1.4, label=label)
            drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
    ax.set(title=title, xlabel="iteration", ylabel=ylabel)
    ax.grid(alpha=0.3)
    if drawn and len(lines) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write ``report.html`` and one PNG per plot; returns the HTML path."""
    run = Path(run_dir)
    records = read_metrics(run)
    if not records:
        raise ConfigError(f"{run / 'metrics.jsonl'} holds no iterations yet")
    out = Path(out_dir) if out_dir else run / "report"
    out.mkdir(parents=True, exist_ok=True)
    train = {k: _series([{"iteration": r["iteration"], **(r.get("train") or {})} for r in records], k)
             for k in ("loss", "reward")}
    plots = [
        ("regret.png", "Regret of played environments", "regret",
         {"mean": _series(records, "regret_mean"), "max": _series(records, "regret_max")}),
        ("win_rate.png", "Agent win rate (unhinted) and with hint", "win rate",
         {"unhinted": _series(records, "win_rate"), "hinted": _series(records, "hinted_win_rate")}),
        ("admission.png", "Admission rate by validation stage", "share of candidates passing",
         {**_nested(records, "admission_by_stage"), "admitted": _series(records, "admission_rate")}),
        ("difficulty.png", "Difficulty of played environments", "difficulty",
         {"measured (1 - win rate)": _series(records, "measured_difficulty"),
          "declared": _series(records, "declared_difficulty")}),
        ("pool.png", "Environment pool by skill", "admitted environments",
         {**_nested(records, "pool_by_skill"), "total": _series(records, "pool_size")}),
        ("rewards.png", "Reward curves", "reward",
         {"designer": _series(records, "designer_reward_mean"), "agent": _series(records, "agent_reward_mean"),
          "training loss": train["loss"]}),
    ]
    figures = []
    for name, title, ylabel, lines in plots:
        _plot(out / name, title, ylabel, lines)
        figures.append((name, title))
    last = records[-1]
    summary = {k: last.get(k) for k in ("iteration", "pool_size", "regret_mean", "win_rate", "admission_rate")}
    config_path = run / "config.json"
    config = config_path.read_text(encoding="utf-8") if config_path.is_file() else "{}"
    body = "\n".join(
        f'<figure><img src="{html.escape(n)}" alt="{html.escape(t)}"><figcaption>{html.escape(t)}</figcaption></figure>'
        for n, t in figures
    )
    rows = "\n".join(
        f"<tr><td>{r['iteration']}</td><td>{r.get('designed', '-')}</td><td>{r.get('admitted', '-')}</td>"
        f"<td>{_f(r.get('regret_mean'))}</td><td>{_f(r.get('win_rate'))}</td><td>{r.get('pool_size', '-')}</td>"
        f"<td>{_f((r.get('train') or {}).get('loss'))}</td></tr>"
        for r in records
    )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>SPADE self-play report: {html.escape(run.name)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}} figure{{display:inline-block;margin:.5em}}
img{{width:600px}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:right}}
pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style></head>
<body><h1>Self-play report: {html.escape(run.name)}</h1>
<p>{html.escape(json.dumps(summary))}</p>
{body}
<h2>Iterations</h2>
<table><tr><th>iteration</th><th>designed</th><th>admitted</th><th>regret</th><th>win rate</th><th>pool</th><th>loss</th></tr>
{rows}</table>
<h2>Configuration</h2><pre>{html.escape(config)}</pre>
</body></html>
"""
    page_path = out / "report.html"
    page_path.write_text(page, encoding="utf-8")
    return page_path


def _f(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v:.3f}"
