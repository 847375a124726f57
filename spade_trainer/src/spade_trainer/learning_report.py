"""Tables and plots of ``learning.json`` (:mod:`.learning`): one run's ``learning.md`` and
``learning.png``, and ``spade experiment summary`` over several runs (seeds, arms).

The figure is the one ``spade report`` shows first for a run that measured a learning curve:
held-out success against updates with 95% intervals, the trained policy (solid), the
learning-rate-0 control (dashed) and the best constant policy (dotted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .learning import LEARNING_FILE, read_learning


def learning_table(data: dict[str, Any]) -> str:
    """A Markdown table of one experiment's evaluations."""
    control = {e["update"]: e for e in data.get("control") or []}
    rows = ["| update | trained success [95% CI] | control (lr 0) success [95% CI] | best constant |",
            "|---|---|---|---|"]
    for e in data["trained"]:
        c = control.get(e["update"])
        ctext = f"{c['mean']:.3f} [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}]" if c else "-"
        rows.append(f"| {e['update']} | {e['mean']:.3f} [{e['interval'][0]:.3f}, {e['interval'][1]:.3f}] | {ctext} "
                    f"| {data['constant']:.3f} |")
    return "\n".join(rows) + "\n"


def behaviour_table(data: dict[str, Any]) -> str:
    """A Markdown table of what the trained policy did at each evaluation (:func:`behaviour`)."""
    rows = ["| update | first guess: first listed / middle / last / unlisted / invalid | second guess followed the feedback |",
            "|---|---|---|"]
    for e in data["trained"]:
        b = e.get("behaviour") or {}
        fg = b.get("first_guess") or {}
        if not fg:
            continue
        shares = " / ".join("-" if fg.get(k) is None else f"{fg[k]:.2f}" for k in ("first", "middle", "last", "unlisted", "invalid"))
        fol = "-" if b.get("followed") is None else f"{b['followed']:.2f} of {b.get('second_guesses')}"
        rows.append(f"| {e['update']} | {shares} | {fol} |")
    return "\n".join(rows) + "\n" if len(rows) > 2 else ""


def write_learning_outputs(run_dir: Path) -> list[Path]:
    """``learning.md`` (the table) and ``learning.png`` (the curves) beside ``learning.json``."""
    data = read_learning(run_dir)
    if data is None:
        return []
    run_dir = Path(run_dir)
    md = run_dir / "learning.md"
    md.write_text(learning_table(data) + "\n" + behaviour_table(data), encoding="utf-8")
    png = run_dir / "learning.png"
    plot_learning([data], png)
    return [md, png]


def run_names(runs: Sequence[dict[str, Any]]) -> list[str]:
    """A legend name per run: its ``label`` setting when it has one (an arm), else ``seed N``."""
    names = []
    for i, data in enumerate(runs):
        s = data.get("settings") or {}
        seed = f"seed {s.get('seed', i)}"
        names.append(f"{s['label']}, {seed}" if s.get("label") else seed)
    return names


def plot_learning(runs: Sequence[dict[str, Any]], out: Path, labels: Sequence[str] | None = None) -> Path:
    """Success on held-out instances against updates: trained (solid) and control (dashed)
    with their 95% intervals, and the best constant policy (dotted), one colour per run. A
    control whose evaluations repeat one already drawn (runs from the same initial weights and
    seed evaluate the same control) and a constant shared by every run are drawn once. With
    several runs each is shifted a little along the x axis and its trained intervals drawn as
    bars too, so that curves that coincide stay visible side by side."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(labels) if labels else run_names(runs)
    constants = {r["constant"] for r in runs}
    drawn_controls: list[list[tuple[int, int, int]]] = []
    for i, data in enumerate(runs):
        c = colours[i % len(colours)]
        for key, style in (("trained", "-"), ("control", "--")):
            evs = data.get(key) or []
            if not evs:
                continue
            if key == "control":
                points = [(e["update"], e["successes"], e["episodes"]) for e in evs if "successes" in e]
                if points and points in drawn_controls:
                    continue
                drawn_controls.append(points)
            shift = (i - (len(runs) - 1) / 2) * 0.15 if len(runs) > 1 else 0.0
            xs = [e["update"] + shift for e in evs]
            means, lows, highs = ([e["mean"] for e in evs], [e["interval"][0] for e in evs],
                                  [e["interval"][1] for e in evs])
            # the control is the run's initial policy: one per seed, whatever the arm
            label = f"{names[i]} trained" if key == "trained" else f"{names[i].split(', ')[-1]} control (lr 0)"
            ax.plot(xs, means, style, color=c, marker="o", ms=3, label=label)
            ax.fill_between(xs, lows, highs, color=c, alpha=0.15 if key == "trained" else 0.07)
            if key == "trained" and len(runs) > 1:
                ax.errorbar(xs, means, yerr=[[m - lo for m, lo in zip(means, lows, strict=True)],
                                             [hi - m for m, hi in zip(means, highs, strict=True)]],
                            fmt="none", ecolor=c, elinewidth=1, capsize=3)
        if len(constants) > 1:
            ax.axhline(data["constant"], color=c, linestyle=":", linewidth=1)
    if len(constants) == 1:
        (constant,) = constants
        ax.axhline(constant, color="grey", linestyle=":", linewidth=1, label=f"best constant policy ({constant:.3f})")
    ax.set_xlabel("policy updates (self-play iterations)")
    ax.set_ylabel("success on held-out instances")
    ax.set_ylim(0, 1)
    targets = sorted({str((r.get("settings") or {}).get("target") or "higher_lower") for r in runs})
    ax.set_title(f"{', '.join(targets)}: held-out success with 95% intervals", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(fig, out)


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out: Path) -> Path:
    """Lay out, write (its folder made) and close one experiment figure; ``out`` back."""
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    pyplot().close(fig)
    return out


def _median_seconds(data: dict[str, Any]) -> float | None:
    """Median seconds per update of a run's trained curve (``None`` without records)."""
    import statistics

    secs = [u["seconds"] for u in (data.get("updates") or {}).get("trained") or [] if u.get("seconds") is not None]
    return statistics.median(secs) if secs else None


def _ci(e: dict[str, Any]) -> str:
    return f"{e['mean']:.3f} [{e['interval'][0]:.3f}, {e['interval'][1]:.3f}]"


def arm_of(data: dict[str, Any]) -> str:
    """A run's arm (``label`` setting): ``fixed``, ``spade``, ``adaptive``; ``-`` when it has none."""
    return str((data.get("settings") or {}).get("label") or "-")


#: Student's t 0.975 quantiles for 1..30 degrees of freedom (beyond: the normal 1.96).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def seed_interval(values: Sequence[float]) -> tuple[float, float]:
    """Student's t 95% interval of a mean over a few seeds (a normal one is far too narrow for
    three: 1.96 against 4.30 standard errors); one value: the value itself."""
    from .learning import mean_interval

    n = len(values)
    if n < 2:
        return mean_interval(values)
    return mean_interval(values, z=_T975[n - 2] if n - 1 <= len(_T975) else 1.959963984540054)


def newcombe(s1: int, n1: int, s2: int, n2: int) -> tuple[float, float, float]:
    """``p1 - p2`` of two independent success rates with Newcombe's 95% interval (the hybrid
    score interval built from each rate's Wilson interval)."""
    import math

    from spade_core.app.eval_harness import wilson

    p1, p2 = s1 / n1, s2 / n2
    l1, u1 = wilson(s1, n1)
    l2, u2 = wilson(s2, n2)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def compare_arms(runs: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """Each arm's last held-out success (mean over seeds with Student's t interval, and pooled
    over episodes with Wilson's), and each other arm minus ``fixed`` on the seeds both ran
    (per seed, the mean with t over seeds, pooled with Newcombe's interval, which treats the
    seeds' episodes as one population: narrower, and blind to the spread between seeds)."""
    from spade_core.app.eval_harness import wilson

    by_arm: dict[str, dict[int, dict[str, Any]]] = {}
    for r in runs:
        by_arm.setdefault(arm_of(r), {})[int(r["settings"].get("seed", 0))] = r
    out: dict[str, Any] = {"arms": {}, "differences": {}}
    rows = ["", "| arm | seeds | first, pooled | last: mean over seeds [t 95% CI] | last, pooled [Wilson 95% CI] |",
            "|---|---|---|---|---|"]
    for arm, mine in sorted(by_arm.items()):
        lasts = [r["trained"][-1] for r in mine.values()]
        firsts = [r["trained"][0] for r in mine.values()]
        means = [e["mean"] for e in lasts]
        lo, hi = seed_interval(means)
        wins, eps = sum(e["successes"] for e in lasts), sum(e["episodes"] for e in lasts)
        plo, phi = wilson(wins, eps)
        first = sum(e["successes"] for e in firsts) / sum(e["episodes"] for e in firsts)
        out["arms"][arm] = {"seeds": sorted(mine), "last_means": means, "mean": sum(means) / len(means),
                            "interval": [lo, hi] if len(means) > 1 else None, "pooled": wins / eps,
                            "pooled_interval": [plo, phi], "first_pooled": first}
        spread = f"[{lo:.3f}, {hi:.3f}]" if len(means) > 1 else "(one seed)"
        rows.append(f"| {arm} | {len(means)} | {first:.3f} | {sum(means) / len(means):.3f} {spread} "
                    f"| {wins / eps:.3f} [{plo:.3f}, {phi:.3f}] |")
    fixed = by_arm.get("fixed")
    if fixed:
        rows += ["", "| arm - fixed | seeds | per-seed differences | mean [t 95% CI over seeds] "
                 "| pooled [Newcombe 95% CI] |", "|---|---|---|---|---|"]
        for arm in sorted(a for a in by_arm if a != "fixed"):
            seeds = sorted(set(by_arm[arm]) & set(fixed))
            if not seeds:
                continue
            pairs = [(by_arm[arm][s]["trained"][-1], fixed[s]["trained"][-1]) for s in seeds]
            per_seed = [a["mean"] - b["mean"] for a, b in pairs]
            lo, hi = seed_interval(per_seed)
            d, plo, phi = newcombe(sum(a["successes"] for a, _ in pairs), sum(a["episodes"] for a, _ in pairs),
                                   sum(b["successes"] for _, b in pairs), sum(b["episodes"] for _, b in pairs))
            out["differences"][arm] = {"seeds": seeds, "per_seed": per_seed, "mean": sum(per_seed) / len(per_seed),
                                       "interval": [lo, hi] if len(seeds) > 1 else None, "pooled": d,
                                       "pooled_interval": [plo, phi]}
            spread = f"[{lo:+.3f}, {hi:+.3f}]" if len(seeds) > 1 else "(one seed)"
            rows.append(f"| {arm} | {len(seeds)} | {', '.join(f'{x:+.3f}' for x in per_seed)} "
                        f"| {sum(per_seed) / len(per_seed):+.3f} {spread} | {d:+.3f} [{plo:+.3f}, {phi:+.3f}] |")
    return out, rows


def summarise(run_dirs: Sequence[Path], out_dir: Path) -> dict[str, Any]:
    """Several runs' curves (seeds, arms) in one table (``summary.md``), plot and JSON; runs of
    more than one arm are also compared (:func:`compare_arms`)."""
    found = [r for d in run_dirs if (r := read_learning(Path(d))) is not None]
    if not found:
        raise ConfigError(f"none of {[str(d) for d in run_dirs]} holds a {LEARNING_FILE}")
    rows = ["| arm | seed | first [95% CI] | last [95% CI] | control first -> last | best constant | rose "
            "| above constant | control rose | verdict | median s per update |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in found:
        t, c, v = r["trained"], r.get("control") or [], r.get("verdict") or {}
        ctext = f"{c[0]['mean']:.3f} -> {c[-1]['mean']:.3f}" if c else "-"
        med = _median_seconds(r)
        rows.append(f"| {arm_of(r)} | {r['settings'].get('seed')} | {_ci(t[0])} | {_ci(t[-1])} | {ctext} "
                    f"| {r['constant']:.3f} | {v.get('rose')} | {v.get('above_constant')} | {v.get('control_rose')} "
                    f"| {v.get('learnability', '-')} | {'-' if med is None else f'{med:.1f}'} |")
    learned = sum(bool((r.get("verdict") or {}).get("learned")) for r in found)
    summary: dict[str, Any] = {"seeds": [r["settings"].get("seed") for r in found], "arms": [arm_of(r) for r in found],
                               "learned": learned, "runs": len(found)}
    if len({arm_of(r) for r in found}) > 1:
        compared, arm_rows = compare_arms(found)
        summary.update(compared)
        rows += arm_rows
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.md").write_text("\n".join(rows) + f"\n\nlearned (all three conditions) in {learned} of "
                                        f"{len(found)} runs\n", encoding="utf-8")
    plot_learning(found, out_dir / "summary.png")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


__all__ = ["arm_of", "behaviour_table", "compare_arms", "learning_table", "newcombe", "plot_learning", "pyplot",
           "run_names", "save_figure", "seed_interval", "summarise", "write_learning_outputs"]
