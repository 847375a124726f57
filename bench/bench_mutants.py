"""The mutation score of validation: every mutant of the corpus in
``tests/validation/mutants`` (sound environments with one known semantic defect each, with
and without ``solution()``), validated and fuzzed as ``spade validate FILE`` and ``spade
fuzz FILE`` do (no metadata, 200 examples), and every parent, which must pass.

``python -m bench.bench_mutants [--per-class N] [--out FILE]``: prints the table per class
and writes it (with what was missed, and the command, date and load) to
``bench/results/mutation-score.md`` by default.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "validation"))

from mutants.corpus import build, judge, table  # noqa: E402


def markdown(rows: list[dict], missed: list[str], parents_rejected: list[str], meta: str) -> str:
    out = [
        "# Mutation score of validation",
        "",
        meta,
        "",
        "| class | mutants | rejected by validate | by fuzz | by either | score |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = f"**{r['class']}**" if r["class"] == "all" else r["class"]
        out.append(f"| {name} | {r['mutants']} | {r['validate']} | {r['fuzz']} | {r['either']} | {r['score']:.0%} |")
    out += ["", f"Parents rejected (false positives): {', '.join(parents_rejected) or 'none'}.", ""]
    if missed:
        out += ["Mutants that passed both:", ""] + [f"- `{m}`" for m in missed]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-class", type=int, default=None, help="mutants per class and variant (default: all)")
    parser.add_argument("--examples", type=int, default=200, help="Hypothesis examples of the fuzz run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mutation-score.md")
    args = parser.parse_args(argv if argv is not None else [])
    t0 = time.perf_counter()
    parents, kept = build(per_class=args.per_class)
    print(f"{len(parents)} parents, {len(kept)} mutants that differ from their parent ({time.perf_counter() - t0:.0f} s)")
    pv = judge([(p.name, "parent", p.source) for p in parents], fuzz_examples=args.examples)
    label = {True: "", False: " (no solution)"}
    verdicts = judge([(m.name, m.klass + label[m.with_solution], m.source) for m in kept], fuzz_examples=args.examples)
    rows = table(verdicts)
    for r in rows:
        print(f"{r['class']:40} {r['mutants']:4} validate {r['validate']:4} fuzz {r['fuzz']:4} "
              f"either {r['either']:4}  {r['score']:.0%}")
    missed = [v.name for v in verdicts if not v.rejected]
    rejected_parents = [f"{v.name} ({v.reason})" for v in pv if v.rejected]
    load = os.getloadavg()
    flag = f" --per-class {args.per_class}" if args.per_class else ""
    meta = (f"`python -m bench.bench_mutants{flag}`, "
            f"{datetime.date.today().isoformat()}, {len(parents)} parents and {len(kept)} mutants, "
            f"{time.perf_counter() - t0:.0f} s on {os.cpu_count()} cores, load average at the end "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.")
    args.out.write_text(markdown(rows, missed, rejected_parents, meta), encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT)}; parents rejected: {rejected_parents or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
