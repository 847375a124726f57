"""How many environments the pipeline proves feasible: seed pools and labelled corpora.

For every seed environment of the installed domain plugins, and every ``.py`` file under
``good/`` and ``bad/`` of each corpus folder given, run the static, load and feasibility
stages through the real sandbox and count the verdicts: *proven* (the solution replays
to full reward on every configured seed), *unproven* (no replayable solution), *rejected*
(the replay fails, ``solution()`` is broken, or an earlier stage rejects).

Run: ``python scripts/feasibility_census.py [CORPUS_FOLDER ...] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from spade_core.metadata import EnvMetadata
from spade_designer.validation import Stage, ValidationConfig, Validator

STAGES = (Stage.static, Stage.load, Stage.feasibility)


def _verdict(report: Any) -> str:
    if not report.passed:
        return f"rejected:{report.failed_stage}"
    return "proven" if report.feasibility_proven else "unproven"


def census(corpora: list[Path]) -> dict[str, Counter[str]]:
    from spade_core.plugins import get_plugins

    out: dict[str, Counter[str]] = {}
    config = ValidationConfig(stages=STAGES)
    with Validator(config=config) as v:
        for dom in get_plugins().domains().values():
            counts: Counter[str] = Counter()
            for seed in dom.seed_envs:
                meta = EnvMetadata(
                    name=seed.name, domain=dom.name, skill=seed.skill, max_turns=seed.max_turns,
                    class_name=seed.class_name, action_format=dom.action_format,
                )
                counts[_verdict(v.validate(seed.source(), metadata=meta, domain=dom))] += 1
            out[f"seeds:{dom.name}"] = counts
        for folder in corpora:
            for kind in ("good", "bad"):
                counts = Counter()
                for path in sorted((folder / kind).glob("*.py")):
                    meta = EnvMetadata(name=path.stem, domain="corpus", skill=kind)
                    counts[_verdict(v.validate(path.read_text(encoding="utf-8"), metadata=meta))] += 1
                if counts:
                    out[f"{folder.name}:{kind}"] = counts
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", type=Path, help="labelled corpus folders (good/, bad/)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = census(args.corpora)
    if args.json:
        print(json.dumps({k: dict(v) for k, v in result.items()}, indent=2))
        return 0
    for group, counts in result.items():
        total = sum(counts.values())
        rest = ", ".join(f"{k} {n}" for k, n in sorted(counts.items()) if k != "proven")
        print(f"{group:24} {counts['proven']:3}/{total:<3} proven   ({rest or 'none other'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
