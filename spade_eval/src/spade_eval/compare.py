"""``spade compare RUN...``: several runs side by side.

Reads each run's ``evals.jsonl`` (``spade eval --run``, or the evaluation a run makes every
N iterations) and ``metrics.jsonl``, and writes ``compare.html`` with:

* the final table in the paper's shape: one row per run, one column per suite (the success
  rate of the run's last evaluation on it), and each run's difference to the baseline run;
* eval success rate against iterations and against environment steps (episodes played by
  the run up to that iteration), per suite, and the same scores as a table (one row per
  evaluated iteration, one column per run);
* admission rate and mean regret per iteration, per run.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_core.errors import SpadeError
from spade_core.terminal import printable

from .results import read_evals, read_jsonl


class CompareError(SpadeError, ValueError):
    """Runs that cannot be compared (missing folders, nothing evaluated)."""


@dataclass
class RunView:
    name: str
    path: Path
    metrics: list[dict[str, Any]]
    evals: list[dict[str, Any]]

    def steps_at(self, iteration: int | None) -> int:
        """Episodes the run played up to and including ``iteration``."""
        if iteration is None:
            return 0
        return sum(int(r.get("episodes") or 0) for r in self.metrics if r.get("iteration", 0) <= iteration)

    def episodes_of(self, evaluation: dict[str, Any]) -> int:
        """Episodes the run had played when ``evaluation`` was made: recorded with it by the
        run's own periodic evaluation, else counted from the metrics."""
        recorded = evaluation.get("run_episodes")
        return int(recorded) if recorded is not None else self.steps_at(evaluation.get("iteration"))

    def final(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for e in self.evals:  # later lines win: the last evaluation of each suite
            out[e["suite"]] = float(e["overall"]["success_rate"])
        return out


def load_runs(paths: Sequence[Path]) -> list[RunView]:
    views = []
    for p in paths:
        if not p.is_dir():
            raise CompareError(f"{p} is not a folder")
        views.append(RunView(p.name, p, read_jsonl(p / "metrics.jsonl"), read_evals(p)))
    if not any(v.evals for v in views):
        raise CompareError("none of these runs holds an evaluation (evals.jsonl): run `spade eval --run RUN_DIR` first")
    names = [v.name for v in views]
    if len(set(names)) != len(names):  # runs of the same name in different folders
        for v in views:
            v.name = str(v.path)
    return views


def final_table(views: Sequence[RunView], baseline: str | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows: success rate per suite, with the difference to the baseline run."""
    suites = sorted({s for v in views for s in v.final()})
    base = next((v for v in views if v.name == baseline), views[0]) if views else None
    if baseline is not None and (base is None or base.name != baseline):
        raise CompareError(f"baseline {baseline!r} is not one of the runs ({', '.join(v.name for v in views)})")
    header = ["run", *suites, "mean"]
    rows = []
    base_final = base.final() if base else {}
    for v in views:
        final = v.final()
        cells = [v.name + (" (baseline)" if v is base else "")]
        for s in suites:
            if s not in final:
                cells.append("-")
            elif v is base or s not in base_final:
                cells.append(f"{final[s]:.1%}")
            else:
                cells.append(f"{final[s]:.1%} ({(final[s] - base_final[s]) * 100:+.1f})")
        shared = [s for s in suites if s in final]
        mean = sum(final[s] for s in shared) / len(shared) if shared else None
        base_mean = (sum(base_final[s] for s in shared if s in base_final) / len(shared)
                     if shared and all(s in base_final for s in shared) else None)
        if mean is None:
            cells.append("-")
        elif v is base or base_mean is None:
            cells.append(f"{mean:.1%}")
        else:
            cells.append(f"{mean:.1%} ({(mean - base_mean) * 100:+.1f})")
        rows.append(cells)
    return header, rows


def per_iteration_table(views: Sequence[RunView]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of every evaluation: one row per suite and evaluated iteration, one
    column per run (success rate, episodes the run had played then); ``-`` where a run was
    not evaluated at that iteration."""
    header = ["suite", "iteration", *[v.name for v in views]]
    cells: dict[tuple[str, int], dict[str, str]] = {}
    for v in views:
        for e in v.evals:  # a later evaluation of the same iteration wins, as in the final table
            key = (e["suite"], int(e.get("iteration") or 0))
            cells.setdefault(key, {})[v.name] = f"{float(e['overall']['success_rate']):.1%} @ {v.episodes_of(e)} ep"
    rows = [[suite, str(it), *[cells[(suite, it)].get(v.name, "-") for v in views]]
            for suite, it in sorted(cells)]
    return header, rows


def _html_table(table_id: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return (f"<table id={table_id}><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
            + "</table>")


def _plot(path: Path, title: str, xlabel: str, ylabel: str, lines: dict[str, tuple[list[float], list[float]]],
          ylim: tuple[float, float] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    markers = "osD^vP*X"
    styles = ["-", "--", ":", "-."]
    drawn = 0
    for i, (label, (xs, ys)) in enumerate(lines.items()):
        if xs:
            # runs often tie (every score 0 early on): later runs are drawn smaller and
            # dashed, so a line lying on another's still shows; a run keeps its colour and
            # marker in every plot, even one where another run has no data
            ax.plot(xs, ys, marker=markers[i % len(markers)] if len(xs) <= 40 else None, ms=max(3.0, 8.0 - 2.0 * i),
                    lw=max(1.0, 2.5 - 0.5 * i), ls=styles[i % len(styles)], color=f"C{i % 10}", label=printable(label))
            drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    ax.set(title=printable(title), xlabel=xlabel, ylabel=ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=10))
    ax.grid(alpha=0.3)
    if ylim:
        ax.set_ylim(*ylim)
    if drawn:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def paper_tables_of(views: Sequence[RunView], baseline: str | None = None,
                    paper_model: str | None = None) -> list[Any]:
    """``--paper``: the runs in the paper's columns beside its rows (:mod:`.paper`)."""
    from .paper import paper_report

    return paper_report([(v.name, v.evals) for v in views], baseline=baseline, paper_model=paper_model)


def write_compare(paths: Sequence[Path], out: Path, *, baseline: str | None = None, paper: bool = False,
                  paper_model: str | None = None) -> Path:
    """Write ``compare.html`` and its PNGs into ``out``; returns the page. With ``paper``,
    the page opens with the paper's tables (ours beside the paper's rows)."""
    views = load_runs(paths)
    header, rows = final_table(views, baseline)
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    for suite in header[1:-1]:
        by_iter, by_steps = {}, {}
        for v in views:
            evals = [e for e in v.evals if e["suite"] == suite]
            its = [e.get("iteration") or 0 for e in evals]
            ys = [float(e["overall"]["success_rate"]) for e in evals]
            by_iter[v.name] = ([float(i) for i in its], ys)
            by_steps[v.name] = ([float(v.episodes_of(e)) for e in evals], ys)
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in suite)
        _plot(out / f"{safe}_iterations.png", f"{suite}: success rate", "iteration", "success rate", by_iter, (-0.03, 1.03))
        _plot(out / f"{safe}_steps.png", f"{suite}: success rate against environment steps", "episodes played",
              "success rate", by_steps, (-0.03, 1.03))
        figures += [(f"{safe}_iterations.png", f"{suite} against iterations"),
                    (f"{safe}_steps.png", f"{suite} against environment steps")]
    for key, title, ylabel in (("admission_rate", "Admission rate of designed candidates", "admitted share"),
                               ("regret_mean", "Mean regret of played environments", "regret")):
        lines = {}
        for v in views:
            pts = [(float(r["iteration"]), float(r[key])) for r in v.metrics if isinstance(r.get(key), (int, float))]
            lines[v.name] = ([x for x, _ in pts], [y for _, y in pts])
        top = max((max(ys) for _, ys in lines.values() if ys), default=0.0)
        top = 1.0 if key == "admission_rate" else max(0.1, top * 1.2)
        _plot(out / f"{key}.png", title, "iteration", ylabel, lines, (-0.03 * top, 1.03 * top))
        figures.append((f"{key}.png", title))
    table = _html_table("final", header, rows)
    per_iteration = _html_table("per_iteration", *per_iteration_table(views))
    imgs = "\n".join(f'<figure><img src="{html.escape(n)}" alt="{html.escape(t)}"><figcaption>{html.escape(t)}</figcaption></figure>'
                     for n, t in figures)
    names = ", ".join(html.escape(v.name) for v in views)
    paper_html = "".join(
        f"<h2>{html.escape(t.title)}</h2>" + _html_table(f"paper{i}", t.header, t.rows)
        + "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in t.notes) + "</ul>"
        for i, t in enumerate(paper_tables_of(views, baseline, paper_model) if paper else []))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>SPADE comparison</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em auto;padding:0 1.5em;max-width:1320px}} figure{{display:inline-block;margin:.5em}}
img{{width:620px}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.25em .7em;text-align:right}}
td:first-child{{text-align:left}}</style></head><body>
<h1>Runs compared: {names}</h1>
{paper_html}
<p>Success rate of each run's last evaluation per suite; in brackets the difference to the baseline run in points.</p>
{table}
<h2>Every evaluation</h2>
<p>Success rate at each evaluated iteration, with the episodes the run had played by then.</p>
{per_iteration}
{imgs}
</body></html>"""
    path = out / "compare.html"
    path.write_text(page, encoding="utf-8")
    return path
