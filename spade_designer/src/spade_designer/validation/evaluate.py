"""Precision and recall of the pipeline on a labelled corpus.

A corpus is a folder with ``good/*.py``, ``bad/*.py`` and ``manifest.toml`` (one table per
file: expected verdict, stage and reason code; see ``tests/validation/corpus``). Good
environments are validated first and, once they pass, added to a throwaway SQLite store,
so near-duplicates among the bad ones are judged against them exactly as the designer's
candidates are judged against the registry.

Run: ``python -m spade_designer.validation.evaluate [FOLDER ...] [--markdown]`` (default:
both corpora of the repository, each reported in its own table). A manifest entry may name
the ``domain`` to validate under and a ``budget_s`` (``candidate_budget_s``) of its own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_core.metadata import EnvMetadata, ValidationReport

from .codes import STAGE_ORDER
from .errors import ValidationInputError
from .pipeline import Validator


@dataclass(frozen=True)
class Label:
    """What the manifest says about one corpus file."""

    kind: str  # "good" | "bad"
    name: str
    path: Path
    expect: str  # "pass" | "reject"
    stage: str | None = None
    reason: str | None = None
    feasibility: str | None = None
    hint: str | None = None
    twin: str | None = None
    sandbox_only: bool = False
    #: Domain plugin the environment is validated under (default: none named, so the
    #: validator infers it from the source or uses generic probes).
    domain: str | None = None
    #: ``candidate_budget_s`` for this environment (the time-budget entries).
    budget_s: float | None = None

    @property
    def env_id(self) -> str:
        return f"{self.name}-v1"


@dataclass
class Outcome:
    label: Label
    report: ValidationReport
    seconds: float

    @property
    def stage(self) -> str | None:
        return self.report.failed_stage

    @property
    def reason(self) -> str | None:
        failing = [f for f in self.report.findings if not f.ok]
        return failing[0].code if failing else None

    @property
    def correct(self) -> bool:
        lab = self.label
        if lab.expect == "pass":
            proven = "proven" if self.report.feasibility_proven else "unproven"
            return self.report.passed and (lab.feasibility is None or lab.feasibility == proven)
        if self.stage != lab.stage or self.reason != lab.reason:
            return False
        return lab.twin is None or self.report.duplicate_of == f"{lab.twin}-v1"


#: The labelled corpora of this repository, relative to its root: the one written with the
#: pipeline, and the one modelled on environments written elsewhere (reference habits).
DEFAULT_CORPORA = ("tests/validation/corpus", "tests/validation/corpus_ext")


def load_corpus(folder: str | Path) -> list[Label]:
    """Read ``manifest.toml`` and check it matches the files: every file labelled once."""
    root = Path(folder)
    manifest = root / "manifest.toml"
    if not manifest.is_file():
        raise ValidationInputError(f"{manifest} does not exist: a corpus folder needs a manifest.toml")
    try:
        table = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValidationInputError(f"{manifest}: not valid TOML: {exc}") from None
    labels: list[Label] = []
    stages = {s.value for s in STAGE_ORDER}
    for kind in ("good", "bad"):
        entries = table.get(kind, {})
        files = {p.stem for p in (root / kind).glob("*.py")}
        missing = sorted(set(entries) - files)
        unlabelled = sorted(files - set(entries))
        if missing or unlabelled:
            raise ValidationInputError(
                f"{manifest}: {kind}/ and the manifest disagree: "
                f"labelled but missing {missing or 'none'}, present but unlabelled {unlabelled or 'none'}"
            )
        for name, entry in sorted(entries.items()):
            expect = entry.get("expect")
            if expect not in ("pass", "reject") or (expect == "reject" and entry.get("stage") not in stages):
                raise ValidationInputError(f"{manifest}: [{kind}.{name}] needs expect = pass|reject and a valid stage")
            labels.append(
                Label(
                    kind=kind,
                    name=name,
                    path=root / kind / f"{name}.py",
                    expect=expect,
                    stage=entry.get("stage"),
                    reason=entry.get("reason"),
                    feasibility=entry.get("feasibility"),
                    hint=entry.get("hint"),
                    twin=entry.get("twin"),
                    sandbox_only=bool(entry.get("sandbox_only", False)),
                    domain=entry.get("domain"),
                    budget_s=entry.get("budget_s"),
                )
            )
    return labels


@dataclass
class Evaluation:
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[Label] = field(default_factory=list)

    def stage_rows(self) -> list[dict[str, Any]]:
        """Per stage: how many environments it should reject, how many it rejected, and
        precision/recall (a hit is the right stage with the right reason code)."""
        rows = []
        for stage in STAGE_ORDER:
            s = stage.value
            expected = [o for o in self.outcomes if o.label.stage == s]
            rejected = [o for o in self.outcomes if o.stage == s]
            hits = [o for o in rejected if o.label.stage == s and o.correct]
            rows.append(
                {
                    "stage": s,
                    "labelled": len(expected),
                    "rejected": len(rejected),
                    "correct": len(hits),
                    "precision": len(hits) / len(rejected) if rejected else None,
                    "recall": len(hits) / len(expected) if expected else None,
                }
            )
        return rows

    def overall(self) -> dict[str, Any]:
        """Rejection as the positive class: precision and recall over the whole corpus."""
        bad = [o for o in self.outcomes if o.label.expect == "reject"]
        good = [o for o in self.outcomes if o.label.expect == "pass"]
        rejected = [o for o in self.outcomes if not o.report.passed]
        true_rejects = [o for o in rejected if o.label.expect == "reject"]
        return {
            "environments": len(self.outcomes),
            "good": len(good),
            "bad": len(bad),
            "good_passed": sum(o.report.passed for o in good),
            "bad_rejected": sum(not o.report.passed for o in bad),
            "right_stage_and_reason": sum(o.correct for o in bad),
            # Admitted-feasible counts only replay-proven environments: an unproven one
            # (no action sequence to replay) is admitted, never counted as feasible.
            "admitted_feasible": sum(o.report.passed and o.report.feasibility_proven for o in self.outcomes),
            "admitted_unproven": sum(o.report.passed and not o.report.feasibility_proven for o in self.outcomes),
            "precision": len(true_rejects) / len(rejected) if rejected else None,
            "recall": len(true_rejects) / len(bad) if bad else None,
            "skipped": [lab.name for lab in self.skipped],
        }

    def mistakes(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.correct]

    def markdown(self) -> str:
        lines = ["| stage | labelled broken | rejected here | right stage + reason | precision | recall |", "|---|---|---|---|---|---|"]
        for r in self.stage_rows():
            lines.append(
                f"| {r['stage']} | {r['labelled']} | {r['rejected']} | {r['correct']} | {_pct(r['precision'])} | {_pct(r['recall'])} |"
            )
        o = self.overall()
        lines.append(
            f"| **all** | {o['bad']} | {o['bad_rejected'] + o['good'] - o['good_passed']} | {o['right_stage_and_reason']} "
            f"| {_pct(o['precision'])} | {_pct(o['recall'])} |"
        )
        return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def evaluate(
    folder: str | Path,
    *,
    validator: Validator | None = None,
    store_url: str | None = None,
    include_sandbox_only: bool = True,
    progress: bool = False,
) -> Evaluation:
    """Validate every labelled environment (good ones first) and collect the outcomes."""
    from spade_core.store import EnvStore

    labels = load_corpus(folder)
    labels.sort(key=lambda lab: lab.kind != "good")
    own = validator is None
    v = validator or Validator()
    result = Evaluation()
    with tempfile.TemporaryDirectory(prefix="spade-corpus-") as tmp:
        store = EnvStore(store_url or f"sqlite:///{Path(tmp) / 'store.db'}")
        try:
            bar = _progress(progress, len(labels))
            for lab in labels:
                if lab.sandbox_only and not include_sandbox_only:
                    result.skipped.append(lab)
                    bar.advance()
                    continue
                source = lab.path.read_text(encoding="utf-8")
                meta = EnvMetadata(name=lab.name, domain=lab.domain or "corpus", skill=lab.kind, hint=lab.hint)
                config = v.config.model_copy(update={"candidate_budget_s": lab.budget_s}) if lab.budget_s else None
                t0 = time.perf_counter()
                report = v.validate(source, metadata=meta, store=store, config=config)
                result.outcomes.append(Outcome(lab, report, time.perf_counter() - t0))
                if report.passed and lab.kind == "good":
                    store.add(source, meta)
                    store.set_validation(meta.id, report)
                bar.advance(lab.name)
            bar.stop()
        finally:
            store.close()
            if own:
                v.close()
    return result


class _progress:
    """A rich progress bar, or nothing."""

    def __init__(self, enabled: bool, total: int) -> None:
        self._p: Any = None
        if enabled:
            from rich.progress import Progress

            self._p = Progress(transient=True)
            self._task = self._p.add_task("validating", total=total)
            self._p.start()

    def advance(self, name: str = "") -> None:
        if self._p is not None:
            self._p.update(self._task, advance=1, description=f"validating {name}")

    def stop(self) -> None:
        if self._p is not None:
            self._p.stop()


def render(evaluation: Evaluation, title: str = "the labelled corpus") -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"validation pipeline on {title}")
    for col in ("stage", "labelled broken", "rejected here", "right stage + reason", "precision", "recall"):
        table.add_column(col, justify="right" if col != "stage" else "left")
    for r in evaluation.stage_rows():
        table.add_row(r["stage"], str(r["labelled"]), str(r["rejected"]), str(r["correct"]), _pct(r["precision"]), _pct(r["recall"]))
    console.print(table)
    o = evaluation.overall()
    console.print(
        f"{o['environments']} environments: {o['good_passed']}/{o['good']} good passed, "
        f"{o['bad_rejected']}/{o['bad']} bad rejected, {o['right_stage_and_reason']}/{o['bad']} at the right stage "
        f"with the right reason; precision {_pct(o['precision'])}, recall {_pct(o['recall'])}; "
        f"admitted feasibility-proven {o['admitted_feasible']}, admitted unproven {o['admitted_unproven']}"
    )
    for m in evaluation.mistakes():
        console.print(
            f"[red]mismatch[/] {m.label.kind}/{m.label.name}: expected {m.label.expect} "
            f"{m.label.stage or ''} {m.label.reason or ''}, got "
            f"{'pass' if m.report.passed else f'{m.stage} {m.reason}'}: {'; '.join(m.report.reasons)}",
            highlight=False,
        )
    if o["skipped"]:
        console.print(f"skipped: {', '.join(o['skipped'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spade_designer.validation.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument(
        "corpus",
        nargs="*",
        help="corpus folders (good/, bad/, manifest.toml); default: the repository's two labelled corpora, "
        + " and ".join(DEFAULT_CORPORA),
    )
    parser.add_argument("--markdown", action="store_true", help="also print the tables as Markdown")
    args = parser.parse_args(argv)
    folders = args.corpus or [c for c in DEFAULT_CORPORA if Path(c).is_dir()]
    if not folders:
        parser.error("no corpus folder given, and none of the default ones exists here (run from the repository root)")
    mistakes = 0
    validator = Validator()
    try:
        for folder in folders:
            evaluation = evaluate(folder, validator=validator, progress=True)
            render(evaluation, title=folder)
            if args.markdown:
                print(f"\n{folder}:\n\n" + evaluation.markdown())
            mistakes += len(evaluation.mistakes())
    finally:
        validator.close()
    return 0 if not mistakes else 1


if __name__ == "__main__":
    sys.exit(main())
