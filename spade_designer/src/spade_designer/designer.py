"""A design round: prompts -> batched generation -> extraction -> validation (with a
repair loop) -> privileged hints -> admission into the store.

Everything a round does is recorded in its :class:`~.records.RoundResult`: per candidate
the grounding document, the memory examples shown, every attempt (prompt, completion
with token ids and log-probabilities, extracted code, validation report), the hint and
why the candidate was admitted or rejected.

Store writes happen once, at the end of the round (admission), so that within a round a
repair is never compared with its own rejected parent by the novelty check. Admitted
candidates are stored with status ``admitted``, their validation report and hint;
rejected attempts that produced code are stored with status ``retired`` and their report
(they feed memory's failure examples). ``parent_ids`` record lineage: a repair's parent
is the attempt it repairs; a first attempt's parents are the memory examples its prompt
showed.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spade_core.domains import DesignGuide, Domain
from spade_core.errors import SpadeError
from spade_core.metadata import EnvEdit, EnvMetadata, EnvStatus, Finding, ValidationReport, code_hash

from .config import DesignerConfig
from .corpus.base import Corpus, Document
from .editing import (
    APPLY,
    EditApplyError,
    Parent,
    code_child,
    code_edit_conversation,
    extracted_child,
    frontier,
    parameter_child,
    parameter_edit_conversation,
    unified_diff,
)
from .errors import DesignerError, ExtractionError, UnknownSkillError
from .extract import ExtractedEnv, extract_env
from .hints import HintRequest, HintWriter, ProbeFn, babble, find_leak, sandbox_probe
from .llm.base import Completion, Conversation, LLMBackend
from .memory import Memory, MemorySelection
from .prompts import compact_design_conversation, design_conversation, repair_conversation
from .records import (
    ADMISSION,
    EXTRACT,
    HINT,
    AgentStats,
    Attempt,
    CandidateResult,
    HintResult,
    RoundResult,
    StageOutcome,
)
from .scaffold import Scaffold, scaffold_for

if TYPE_CHECKING:
    from spade_core.plugins import SpadePlugins
    from spade_core.store import EnvStore

    from .validation import Validator
    from .validation.runner import EnvRunner

#: Where a scaffolded reply ends (the code block's closing fence).
CLOSING_FENCE = "\n```"

#: Called as ``progress(phase, done, total)`` while a round runs.
Progress = Callable[[str, int, int], None]


@dataclass
class _Work:
    """A candidate while the round runs."""

    result: CandidateResult
    design: Conversation
    conversation: Conversation
    #: The code the reply continues (compact prompts), or ``None``.
    scaffold: Scaffold | None = None
    extracted: ExtractedEnv | None = None
    metadata: EnvMetadata | None = None
    history: list[tuple[Attempt, EnvMetadata | None]] = field(default_factory=list)
    #: The environment an edit starts from (``None``: written from scratch).
    parent: Parent | None = None
    #: ``parameter`` or ``code`` for an edit.
    edit_kind: str | None = None


class NoParentError(DesignerError):
    """An edit round found no admitted environment of the skill to edit."""


def env_name(class_name: str, source: str) -> str:
    """A store name for generated code: the class name plus a short code hash (unique per code)."""
    base = re.sub(r"[^A-Za-z0-9_]", "", class_name)[:80]
    if not base or not base[0].isalpha():
        base = "Designed" + base
    return f"{base}_{code_hash(source)[:10]}"


class Designer:
    """Turns (domain, skill, document, memory, agent performance) into admitted environments.

    ``validator`` is a :class:`spade_designer.validation.Validator` (anything with its
    ``validate_many(requests, store=)``); the hint leakage check runs environments in
    ``pool`` (default: the validator's sandbox pool).
    """

    def __init__(
        self,
        backend: LLMBackend,
        store: EnvStore,
        validator: Validator,
        corpus: Corpus | None = None,
        memory: Memory | None = None,
        config: DesignerConfig | None = None,
        *,
        pool: EnvRunner | None = None,
        probe: ProbeFn | None = None,
        plugins: SpadePlugins | None = None,
    ) -> None:
        self.backend = backend
        self.store = store
        self.validator = validator
        self.corpus = corpus
        self.memory = memory
        self.config = config or DesignerConfig()
        self._pool = pool
        self._probe = probe
        self._plugins = plugins

    # --- helpers ------------------------------------------------------------------------

    @property
    def model_name(self) -> str:
        return str(getattr(self.backend, "model_name", None) or self.backend.name)

    def _plugin_set(self) -> SpadePlugins:
        if self._plugins is None:
            from spade_core.plugins import get_plugins

            self._plugins = get_plugins()
        return self._plugins

    def _domain(self, domain: str | Domain) -> Domain:
        if isinstance(domain, Domain):
            return domain
        return self._plugin_set().domain(domain)

    def _guide(self, domain: Domain) -> DesignGuide | None:
        """The domain's design guide (its scaffold and examples), if a plugin gives one."""
        return self._plugin_set().design_guides().get(domain.name)

    def _probe_fn(self) -> ProbeFn:
        if self._probe is None:
            pool = self._pool if self._pool is not None else self.validator.pool
            self._probe = sandbox_probe(pool)
        return self._probe

    def scaffold_for_round(self, domain: Domain) -> Scaffold | None:
        """The scaffold design replies continue this round (``prompt_style``), or ``None``
        for full prompts. An explicit ``compact`` that cannot be honoured is an error."""
        style = self.config.prompt_style
        if style == "full":
            return None
        scaffold = scaffold_for(domain, self._guide(domain))
        continues = bool(getattr(self.backend, "continues_final_message", False))
        if style == "compact":
            if scaffold is None:
                raise SpadeError(
                    f"prompt_style = 'compact' needs a code scaffold for the {domain.action_format.value!r} "
                    f"action format of domain {domain.name!r}; there is none (use 'full')"
                )
            if not continues:
                raise SpadeError(
                    f"prompt_style = 'compact' prefills the reply, which the {self.backend.name!r} backend "
                    "cannot continue (use 'full')"
                )
            return scaffold
        small = self.config.sampling.max_new_tokens < self.config.compact_below_tokens
        return scaffold if (scaffold is not None and continues and small) else None

    def _sampling(self) -> dict[str, Any]:
        s = self.config.sampling
        return {"max_new_tokens": s.max_new_tokens, "temperature": s.temperature, "top_p": s.top_p}

    # --- hints --------------------------------------------------------------------------

    def write_hint(
        self,
        source: str,
        *,
        metadata: EnvMetadata | None = None,
        domain: str | Domain | None = None,
        seed: int | None = None,
    ) -> HintResult:
        """A privileged hint for ``source`` checked for leakage (see :mod:`.hints`)."""
        dom = self._domain(domain or metadata.domain) if (domain or metadata) else None  # type: ignore[union-attr]
        req = HintRequest(
            source,
            skill=metadata.skill if metadata else None,
            class_name=metadata.class_name if metadata else None,
            allowed_modules=tuple(sorted(dom.allowed_modules)) if dom else (),
        )
        return HintWriter(self.backend, self.config.hint, self._probe_fn()).write_many([req], seed=seed)[0]

    # --- the round ----------------------------------------------------------------------

    def design_round(
        self,
        domain: str | Domain,
        skill: str,
        n: int,
        *,
        difficulty: float | None = None,
        agent_stats: AgentStats | None = None,
        seed: int | None = None,
        progress: Progress | None = None,
    ) -> RoundResult:
        """Design ``n`` environments for ``skill`` of ``domain`` in one batched round."""
        if not isinstance(n, int) or n < 1:
            raise SpadeError(f"n must be a positive number of environments, got {n!r}")
        if difficulty is not None and not 0.0 <= difficulty <= 1.0:
            raise SpadeError(f"difficulty must be in [0, 1], got {difficulty}")
        dom = self._domain(domain)
        if skill not in dom.skills:
            raise UnknownSkillError(dom.name, skill, dom.skills)
        difficulty = difficulty if difficulty is not None else self.config.default_difficulty
        report = progress or (lambda phase, done, total: None)
        timings: dict[str, float] = {}
        tokens = {"prompt": 0, "completion": 0}

        @contextmanager
        def timed(phase: str) -> Any:
            t0 = time.perf_counter()
            try:
                yield
            finally:
                timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - t0

        rng = random.Random(seed)
        scaffold = self.scaffold_for_round(dom)
        # memory draws its examples per design (the reference: two at random from the top
        # by regret), from its own stream so the documents drawn stay those of the seed
        memory_rng = random.Random(None if seed is None else f"memory/{seed}")
        with timed("prompt"):
            work: list[_Work] = []
            for i in range(n):
                selection = (self.memory.retrieve(dom.name, skill, rng=memory_rng) if self.memory is not None
                             else MemorySelection())
                document: Document | None = None
                if self.corpus is not None:
                    document = self.corpus.sample(rng).truncated(self.config.document_words)
                if scaffold is None:
                    guide = self._guide(dom)
                    conv = design_conversation(
                        dom, skill, document=document, memory=selection, difficulty=difficulty,
                        agent=agent_stats, system=self.config.system_prompt, examples=guide.examples if guide else (),
                    )
                else:
                    conv = compact_design_conversation(
                        dom, skill, scaffold, document=document, memory=selection, difficulty=difficulty,
                        agent=agent_stats, system=self.config.system_prompt,
                    )
                result = CandidateResult(i, document.ref() if document else None, selection.ids)
                work.append(_Work(result, conv, conv, scaffold))

        pending = list(work)
        for number in range(self.config.repair_attempts + 1):
            if not pending:
                break
            phase = "design" if number == 0 else f"repair {number}"
            report(phase, 0, len(pending))
            with timed("generation"):
                completions = self.backend.chat(
                    [w.conversation for w in pending],
                    **self._sampling(),
                    seed=None if seed is None else seed + 104729 * number,
                    # a scaffolded reply is already inside the code block: its end is the
                    # closing fence, and nothing after it is worth generating
                    stop=[CLOSING_FENCE] if scaffold is not None else None,
                )
            for comp in completions:
                tokens["prompt"] += comp.prompt_tokens
                tokens["completion"] += comp.completion_tokens
            with timed("extraction"):
                to_validate = [w for w, c in zip(pending, completions, strict=True)
                               if self._extract(w, c, number, dom, skill, difficulty)]
            with timed("validation"):
                self._validate(to_validate, dom)
            report(phase, len(pending), len(pending))
            failed = [w for w in pending if not w.result.attempts[-1].passed]
            if number < self.config.repair_attempts:
                for w in failed:
                    last = w.result.attempts[-1]
                    w.conversation = repair_conversation(
                        w.design, last.reply, last.findings_text(self.config.repair_findings), scaffold=w.scaffold,
                    )
            pending = failed

        passed = self._unique(w for w in work if w.result.attempts[-1].passed)
        if passed and self.config.hint.enabled:
            report("hints", 0, len(passed))
            with timed("hint"):
                hints = HintWriter(self.backend, self.config.hint, self._probe_fn()).write_many(
                    [HintRequest(w.extracted.source, skill, w.extracted.class_name,  # type: ignore[union-attr]
                                 tuple(sorted(dom.allowed_modules))) for w in passed],
                    seed=None if seed is None else seed + 15485863,
                )
            for w, h in zip(passed, hints, strict=True):
                w.result.hint = h
                w.result.stages.append(StageOutcome(HINT, h.accepted, h.hint if h.accepted else str(h.reason),
                                                    len(w.result.attempts) - 1))
                for ha in h.attempts:
                    if ha.completion is not None:
                        tokens["prompt"] += ha.completion.prompt_tokens
                        tokens["completion"] += ha.completion.completion_tokens
            report("hints", len(passed), len(passed))

        report("admission", 0, n)
        with timed("admission"):
            self._admit(work)
        report("admission", n, n)
        return RoundResult(
            domain=dom.name, skill=skill, difficulty=difficulty, seed=seed, model=self.model_name,
            candidates=[w.result for w in work], timings=timings,
            prompt_tokens=tokens["prompt"], completion_tokens=tokens["completion"],
        )

    # --- the edit round ---------------------------------------------------------------

    def edit_round(
        self,
        domain: str | Domain,
        skill: str,
        n: int,
        *,
        kind: str | None = None,
        parents: Sequence[Parent] | None = None,
        agent_stats: AgentStats | None = None,
        seed: int | None = None,
        progress: Progress | None = None,
    ) -> RoundResult:
        """Design ``n`` environments for ``skill`` by editing parents at the frontier.

        Parents are drawn from ``parents`` (default: :func:`~.editing.frontier` of the
        store: admitted environments of the skill ranked by regret and win rate; with
        ``kind = "parameter"`` only those declaring knobs). ``kind`` (default
        ``config.edit.kind``): ``parameter``, ``code`` or ``auto`` (parameter where the
        parent declares knobs). Each candidate's first (and only) attempt is the edit
        prompt and reply; an edit that does not apply is rejected at stage ``apply``; a
        child is validated like any design, except that novelty is judged against its
        family (:meth:`_edit_novelty`), and is hinted (the parent's hint first, when it does
        not leak the child's solution) and admitted with ``parent_ids = [parent]`` and
        ``EnvMetadata.edit`` saying what changed. Raises :class:`NoParentError` when there
        is nothing to edit.
        """
        if not isinstance(n, int) or n < 1:
            raise SpadeError(f"n must be a positive number of environments, got {n!r}")
        settings = self.config.edit
        kind = kind or settings.kind
        if kind not in ("auto", "parameter", "code"):
            raise SpadeError(f"edit kind must be 'auto', 'parameter' or 'code', got {kind!r}")
        dom = self._domain(domain)
        if skill not in dom.skills:
            raise UnknownSkillError(dom.name, skill, dom.skills)
        report = progress or (lambda phase, done, total: None)
        timings: dict[str, float] = {}
        tokens = {"prompt": 0, "completion": 0}
        t0 = time.perf_counter()
        if parents is None:
            parents = frontier(self.store, dom.name, skill, band=settings.band, size=settings.frontier_size,
                               need_knobs=kind == "parameter")
        if not parents:
            raise NoParentError(
                f"no admitted {dom.name} environment of skill {skill!r}"
                + (" declaring knobs (KNOBS)" if kind == "parameter" else "") + " to edit"
            )
        rng = random.Random(seed)
        continues = bool(getattr(self.backend, "continues_final_message", False))
        work: list[_Work] = []
        for i in range(n):
            parent = rng.choice(list(parents))
            edit_kind = kind if kind != "auto" else ("parameter" if parent.knobs else "code")
            if edit_kind == "parameter":
                conv = parameter_edit_conversation(parent, agent=agent_stats, start=i, prefill=continues)
            else:
                conv = code_edit_conversation(parent, agent=agent_stats, max_chars=settings.code_chars)
            result = CandidateResult(i, None, [parent.id])
            work.append(_Work(result, conv, conv, None, parent=parent, edit_kind=edit_kind))
        timings["prompt"] = time.perf_counter() - t0

        report("edit", 0, n)
        s = self.config.sampling
        t0 = time.perf_counter()
        for edit_kind in ("parameter", "code"):
            group = [w for w in work if w.edit_kind == edit_kind]
            if not group:
                continue
            budget = (settings.parameter_max_new_tokens if edit_kind == "parameter"
                      else settings.code_max_new_tokens or s.max_new_tokens)
            completions = self.backend.chat(
                [w.conversation for w in group], max_new_tokens=budget, temperature=s.temperature, top_p=s.top_p,
                seed=None if seed is None else seed + (0 if edit_kind == "parameter" else 7),
                # a parameter edit is one line
                stop=["\n"] if edit_kind == "parameter" else None,
            )
            for w, comp in zip(group, completions, strict=True):
                tokens["prompt"] += comp.prompt_tokens
                tokens["completion"] += comp.completion_tokens
                self._apply_edit(w, comp, dom, skill)
        timings["generation"] = time.perf_counter() - t0
        report("edit", n, n)

        t0 = time.perf_counter()
        self._validate_edits([w for w in work if w.extracted is not None], dom)
        timings["validation"] = time.perf_counter() - t0

        passed = self._unique(w for w in work if w.result.attempts[-1].passed)
        if passed and self.config.hint.enabled:
            report("hints", 0, len(passed))
            t0 = time.perf_counter()
            self._edit_hints(passed, dom, skill, seed, tokens)
            timings["hint"] = time.perf_counter() - t0
            report("hints", len(passed), len(passed))

        report("admission", 0, n)
        t0 = time.perf_counter()
        self._admit(work)
        timings["admission"] = time.perf_counter() - t0
        report("admission", n, n)
        return RoundResult(
            domain=dom.name, skill=skill, difficulty=None, seed=seed, model=self.model_name,
            candidates=[w.result for w in work], timings=timings,
            prompt_tokens=tokens["prompt"], completion_tokens=tokens["completion"],
        )

    def _apply_edit(self, w: _Work, completion: Completion, dom: Domain, skill: str) -> None:
        """Turn an edit reply into the child's source and metadata, or reject it at ``apply``."""
        parent = w.parent
        assert parent is not None
        last = w.conversation[-1]
        prefill = last["content"] if last["role"] == "assistant" else ""
        attempt = Attempt(0, w.conversation, completion, prefill=prefill)
        w.result.attempts.append(attempt)
        values: dict[str, Any] = {}
        previous: dict[str, Any] = {}
        try:
            if w.edit_kind == "parameter":
                child, values, previous = parameter_child(parent, attempt.reply)
                changes = ", ".join(f"{k} {previous[k]!r} -> {v!r}" for k, v in values.items())
                what = f"parameter edit of {parent.id}: {changes}"
            else:
                child = code_child(parent, attempt.reply)
                what = f"code edit of {parent.id}"
            ext = extracted_child(child, parent.metadata)
        except EditApplyError as exc:
            attempt.extraction_error = str(exc)
            attempt.error_stage = APPLY
            w.result.stages.append(StageOutcome(APPLY, False, str(exc), 0))
            w.history.append((attempt, None))
            return
        attempt.source, attempt.class_name = ext.source, ext.class_name
        w.result.stages.append(StageOutcome(APPLY, True, what, 0))
        pm = parent.metadata
        meta = EnvMetadata(
            name=env_name(ext.class_name, ext.source),
            domain=dom.name,
            skill=skill,
            description=pm.description,
            difficulty=pm.difficulty,
            max_turns=pm.max_turns,
            reward_range=pm.reward_range,
            action_format=dom.action_format,
            class_name=ext.class_name,
            designer_model=self.model_name,
            parent_ids=[parent.id],
            tags=["designed", "edit", f"{w.edit_kind}-edit"],
            edit=EnvEdit(kind=w.edit_kind, parent_id=parent.id, values=values, previous=previous,  # type: ignore[arg-type]
                         diff=unified_diff(parent.source, child, parent.id)[:64_000]),
        )
        w.extracted, w.metadata = ext, meta
        w.history.append((attempt, meta))

    def _validate_edits(self, batch: Sequence[_Work], dom: Domain) -> None:
        """Validate children one by one with every configured stage but code novelty (a
        child is meant to be close to its parent), then :meth:`_edit_novelty`."""
        config = getattr(self.validator, "config", None)
        if config is not None:
            config = config.model_copy(update={"stages": tuple(st for st in config.stages if st.value != "novelty")})
        for w in batch:
            rep: ValidationReport = self.validator.validate(
                w.extracted.source, metadata=w.metadata, domain=dom, store=self.store, config=config,  # type: ignore[union-attr]
            )
            if rep.passed:
                rep = self._edit_novelty(w, rep)
            attempt = w.result.attempts[-1]
            attempt.report = rep
            for f in rep.findings:
                w.result.stages.append(StageOutcome(f.stage, f.ok, f.message, attempt.number))

    def _edit_novelty(self, w: _Work, rep: ValidationReport) -> ValidationReport:
        """Novelty of a child: its code must differ from every stored environment's (a
        parameter edit changes at least one knob, so it differs from its parent; the same
        values proposed again give the same code, which is a duplicate)."""
        source = w.extracted.source  # type: ignore[union-attr]
        digest = code_hash(source)
        try:
            self.store.get_source(digest)
            duplicate = True
        except SpadeError:
            duplicate = False
        parent = w.parent.id if w.parent else "?"
        if duplicate:
            twin = next((m.id for m in self.store.find(domain=w.metadata.domain, skill=w.metadata.skill)  # type: ignore[union-attr]
                         if m.code_hash == digest), digest[:12])
            message = f"same code as stored environment {twin}: this edit of {parent} was made before"
            finding = Finding(stage="novelty", ok=False, message=message, code="near_duplicate",
                              details={"twin": twin, "similarity": 1.0, "measure": "edit"})
            return rep.model_copy(update={"passed": False, "failed_stage": "novelty", "reasons": [message],
                                          "findings": [*rep.findings, finding], "duplicate_of": twin})
        finding = Finding(stage="novelty", ok=True, message=f"edit of {parent}: code differs from every stored environment",
                          details={"measure": "edit", "parent": parent})
        return rep.model_copy(update={"findings": [*rep.findings, finding]})

    def _edit_hints(self, passed: Sequence[_Work], dom: Domain, skill: str, seed: int | None,
                    tokens: dict[str, int]) -> None:
        """Hints for passed children: the parent's hint where it does not leak the child's
        solution (the same game, other settings), a newly written one otherwise."""
        allowed = tuple(sorted(dom.allowed_modules))
        settings = self.config.hint
        to_write: list[_Work] = []
        for w in passed:
            ext = w.extracted
            assert ext is not None and w.parent is not None
            hint = w.parent.metadata.hint
            if self.config.edit.reuse_parent_hint and hint:
                req = HintRequest(ext.source, skill, ext.class_name, allowed)
                try:
                    leak = babble(hint) or find_leak(
                        hint, self._probe_fn()(req, settings.check_seeds), min_chars=settings.min_key_chars
                    )
                except SpadeError as exc:
                    leak = f"could not compute the solution for the leakage check: {exc}"
                if leak is None:
                    w.result.hint = HintResult(hint, True, None)
                    w.result.stages.append(StageOutcome(HINT, True, f"parent's hint: {hint}", 0))
                    continue
            to_write.append(w)
        if not to_write:
            return
        hints = HintWriter(self.backend, settings, self._probe_fn()).write_many(
            [HintRequest(w.extracted.source, skill, w.extracted.class_name, allowed) for w in to_write],  # type: ignore[union-attr]
            seed=None if seed is None else seed + 15485863,
        )
        for w, h in zip(to_write, hints, strict=True):
            w.result.hint = h
            w.result.stages.append(StageOutcome(HINT, h.accepted, h.hint if h.accepted else str(h.reason), 0))
            for ha in h.attempts:
                if ha.completion is not None:
                    tokens["prompt"] += ha.completion.prompt_tokens
                    tokens["completion"] += ha.completion.completion_tokens

    # --- phases -------------------------------------------------------------------------

    def _extract(self, w: _Work, completion: Completion, number: int, dom: Domain, skill: str,
                 difficulty: float | None) -> bool:
        attempt = Attempt(number, w.conversation, completion, prefill=w.scaffold.prefill if w.scaffold else "")
        w.result.attempts.append(attempt)
        try:
            ext = extract_env(attempt.reply)
        except ExtractionError as exc:
            message = str(exc)
            if completion.finish_reason == "length":
                # the usual cause with small budgets; the repair prompt must say so
                message += (f" (the reply was cut off at the {completion.completion_tokens}-token limit: "
                            "write a shorter, complete file)")
            attempt.extraction_error = message
            w.result.stages.append(StageOutcome(EXTRACT, False, message, number))
            w.history.append((attempt, None))
            return False
        attempt.source, attempt.class_name = ext.source, ext.class_name
        w.result.stages.append(StageOutcome(EXTRACT, True, f"class {ext.class_name}", number))
        previous = next((m for _, m in reversed(w.history) if m is not None), None)
        meta = EnvMetadata(
            name=env_name(ext.class_name, ext.source),
            domain=dom.name,
            skill=skill,
            description=ext.description,
            difficulty=difficulty,
            max_turns=ext.max_turns or 25,
            action_format=dom.action_format,
            class_name=ext.class_name,
            document=w.result.document,
            designer_model=self.model_name,
            # lineage: a repair descends from the attempt it repairs; a first design from
            # the memory examples it was shown
            parent_ids=[previous.id] if previous is not None else list(w.result.memory_ids),
            tags=["designed"] + ([f"repair-{number}"] if number else []),
        )
        w.extracted, w.metadata = ext, meta
        w.history.append((attempt, meta))
        return True

    def _validate(self, batch: Sequence[_Work], dom: Domain) -> None:
        if not batch:
            return
        from .validation import ValidationRequest

        requests = [ValidationRequest(w.extracted.source, w.metadata, dom) for w in batch]  # type: ignore[union-attr]
        try:
            reports: list[ValidationReport] = self.validator.validate_many(requests, store=self.store)
        except SystemError:
            # CPython 3.11 can raise "AST constructor recursion depth mismatch" when threads
            # parse concurrently (python/cpython#106905); the batch is redone one by one.
            reports = [
                self.validator.validate(r.source, metadata=r.metadata, domain=dom, store=self.store) for r in requests
            ]
        for w, rep in zip(batch, reports, strict=True):
            attempt = w.result.attempts[-1]
            attempt.report = rep
            for f in rep.findings:
                w.result.stages.append(StageOutcome(f.stage, f.ok, f.message, attempt.number))

    @staticmethod
    def _unique(passed: Any) -> list[_Work]:
        """Passed candidates with distinct code; a later copy of the same code is rejected
        at stage ``novelty`` (the store check cannot see candidates of the same round)."""
        first: dict[str, int] = {}
        out = []
        for w in passed:
            digest = code_hash(w.result.attempts[-1].source or "")
            if digest in first:
                w.result.rejected_stage = "novelty"
                w.result.reasons = [f"same code as candidate {first[digest]} of this round"]
                w.result.stages.append(StageOutcome("novelty", False, w.result.reasons[0], len(w.result.attempts) - 1))
                continue
            first[digest] = w.result.index
            out.append(w)
        return out

    def _admit(self, work: Sequence[_Work]) -> None:
        for w in work:
            res = w.result
            last = res.attempts[-1]
            duplicate = res.rejected_stage == "novelty" and last.passed  # same code as an earlier candidate
            for attempt, meta in w.history:
                if meta is None:
                    continue
                meta = meta.model_copy(update={"validation": attempt.report})
                if attempt is last and last.passed:
                    continue  # decided below
                res.metadata = meta
                if self.config.store_rejected:
                    self._store(attempt, meta, EnvStatus.retired, res)
            if duplicate:
                res.metadata = w.history[-1][1].model_copy(update={"validation": last.report})  # type: ignore[union-attr]
                continue
            if not last.passed:
                res.rejected_stage = last.failed_stage
                res.reasons = (
                    [last.extraction_error] if last.extraction_error else list(last.report.reasons if last.report else [])
                )
                continue
            meta = w.history[-1][1].model_copy(update={"validation": last.report})  # type: ignore[union-attr]
            if self.config.hint.enabled:
                if res.hint is None or not res.hint.accepted:
                    self._reject(res, meta, last, HINT, res.hint.reason if res.hint else "no hint was written")
                    continue
                meta = meta.model_copy(update={"hint": res.hint.hint})
            stored = self._store(last, meta, EnvStatus.admitted, res)
            if stored is None:
                continue
            res.metadata = stored
            res.admitted = True
            res.stages.append(StageOutcome(ADMISSION, True, f"admitted as {stored.id}", last.number))

    def _reject(self, res: CandidateResult, meta: EnvMetadata, attempt: Attempt, stage: str, reason: str) -> None:
        res.rejected_stage = stage
        res.reasons = [reason]
        res.metadata = meta
        if self.config.store_rejected:
            self._store(attempt, meta, EnvStatus.retired, res)

    def _store(self, attempt: Attempt, meta: EnvMetadata, status: EnvStatus, res: CandidateResult) -> EnvMetadata | None:
        """Add one attempt to the store with ``status``; a store refusal rejects the
        candidate at stage ``admission`` with the store's message (nothing else is lost)."""
        if attempt.stored_id is None:
            # a repair that returned the same code would be its own parent
            parents = [p for p in meta.parent_ids if p != meta.id and _exists(self.store, p)]
            meta = meta.model_copy(update={"parent_ids": parents})
        try:
            # the decided status goes in with the record: one write instead of two
            stored = self.store.add(attempt.source, meta.model_copy(update={"status": status}))
            # The same code may be stored already (content addressing): a fresh record
            # takes the decided status; an admitted one is never demoted by a reject.
            if stored.status == EnvStatus.candidate or (
                status == EnvStatus.admitted and stored.status == EnvStatus.retired
            ):
                stored = self.store.set_status(stored.id, status)
        except SpadeError as exc:
            res.stages.append(StageOutcome(ADMISSION, False, f"store refused {meta.id}: {exc}", attempt.number))
            if status == EnvStatus.admitted:  # the decisive write: the candidate is not admitted
                res.rejected_stage = ADMISSION
                res.reasons = [f"store refused {meta.id}: {exc}"]
            return None
        attempt.stored_id = stored.id
        return stored


def _exists(store: EnvStore, env_id: str) -> bool:
    try:
        store.get(env_id)
    except SpadeError:
        return False
    return True
