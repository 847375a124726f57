"""pytest plugin of spade_designer (entry point ``pytest11: spade``): validate and fuzz the
environments a plugin ships, in one line.

Either generate one test per seed environment of a domain, at module level::

    from spade_designer.pytest_plugin import seed_env_tests

    test_seed_envs = seed_env_tests("games")            # fuzz (static, load, fuzz stages)
    test_seed_envs_full = seed_env_tests("games", full=True)   # every stage but novelty

or use the ``spade_fuzz`` fixture inside a test::

    def test_my_env(spade_fuzz):
        spade_fuzz.source(MY_ENV_SOURCE, max_turns=10)
        spade_fuzz.domain("games")                     # all of them, one report on failure

``--spade-examples N`` sets the Hypothesis examples of the fuzz stage, with or without
``full``. A failure shows the rendered validation report: stage, reason code and the shrunk,
replayable action list. Environments run in a sandbox pool shared by the session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from spade_core.domains import Domain, SeedEnv
    from spade_core.metadata import ValidationReport

    from .validation import Validator


def _metadata(domain: Domain, seed: SeedEnv, **overrides: Any) -> Any:
    from spade_core.metadata import EnvMetadata

    fields: dict[str, Any] = {
        "name": seed.name,
        "domain": domain.name,
        "skill": seed.skill,
        "max_turns": seed.max_turns,
        "class_name": seed.class_name,
        "action_format": domain.action_format,
    }
    fields.update(overrides)
    return EnvMetadata(**fields)


def _verdict(label: str, report: ValidationReport) -> str:
    """One line saying what failed: pytest's short summary shows a failure's first line."""
    reason = " ".join((report.reasons[0] if report.reasons else "no reason given").split())
    return f"{label} rejected at stage {report.failed_stage or '?'}: {reason}"


def _explain(label: str, report: ValidationReport) -> str:
    """The verdict in one line, then the rendered report (stages, reason, replay)."""
    from io import StringIO

    from rich.console import Console

    from .validation.render import report_renderable

    buf = StringIO()
    Console(file=buf, width=110, color_system=None).print(report_renderable(report, title=label))
    return f"{_verdict(label, report)}\n{buf.getvalue()}"


class SpadeFuzz:
    """What the ``spade_fuzz`` fixture gives a test: assertions that environments pass."""

    def __init__(self, validator: Validator, examples: int) -> None:
        self.validator = validator
        self.examples = examples

    def _stages(self, full: bool) -> Any:
        from .validation import Stage

        # ``--spade-examples`` sets the fuzz stage's examples in both modes.
        if full:
            stages = tuple(s for s in Stage if s is not Stage.novelty)
        else:
            stages = (Stage.static, Stage.load, Stage.fuzz)
        return self.validator.config.model_copy(update={"stages": stages, "fuzz_examples": self.examples})

    def source(
        self,
        source: str,
        *,
        domain: Domain | str | None = None,
        full: bool = False,
        label: str = "environment",
        **metadata: Any,
    ) -> ValidationReport:
        """Validate one source (``metadata`` fields such as ``max_turns`` may be given);
        fails the test with the rendered report when it is rejected."""
        from spade_core.metadata import EnvMetadata

        meta = None
        if metadata:
            metadata.setdefault("name", "candidate")
            metadata.setdefault("domain", domain.name if hasattr(domain, "name") else (domain or "test"))
            metadata.setdefault("skill", "test")
            meta = EnvMetadata(**metadata)
        report = self.validator.validate(source, metadata=meta, domain=domain, config=self._stages(full))
        if not report.passed:
            pytest.fail(_explain(label, report), pytrace=False)
        return report

    def seed(self, domain: Domain | str, name: str, *, full: bool = False) -> ValidationReport:
        """Validate one seed environment of a domain."""
        dom = _domain(domain)
        seed = dom.seed(name)
        report = self.validator.validate(
            seed.source(), metadata=_metadata(dom, seed), domain=dom, config=self._stages(full)
        )
        if not report.passed:
            pytest.fail(_explain(seed.id, report), pytrace=False)
        return report

    def domain(self, domain: Domain | str, *, full: bool = False) -> dict[str, ValidationReport]:
        """Validate every seed environment of a domain; one failure lists every rejected one."""
        dom = _domain(domain)
        if not dom.seed_envs:
            pytest.fail(f"domain {dom.name!r} ships no seed environments", pytrace=False)
        reports = {}
        failed = []
        for seed in dom.seed_envs:
            report = self.validator.validate(
                seed.source(), metadata=_metadata(dom, seed), domain=dom, config=self._stages(full)
            )
            reports[seed.id] = report
            if not report.passed:
                failed.append((seed.id, report))
        if failed:
            named = "; ".join(_verdict(label, report) for label, report in failed)
            pytest.fail(f"{len(failed)} of {len(dom.seed_envs)} environments rejected: {named}\n"
                        + "\n".join(_explain(label, report) for label, report in failed), pytrace=False)
        return reports


def _domain(domain: Domain | str) -> Domain:
    from spade_core.plugins import get_plugins

    return get_plugins().domain(domain) if isinstance(domain, str) else domain


@pytest.fixture(scope="session")
def spade_validator() -> Iterator[Validator]:
    """A session-wide :class:`~spade_designer.validation.Validator` with its own sandbox pool."""
    from .validation import Validator

    validator = Validator()
    yield validator
    validator.close()


@pytest.fixture
def spade_fuzz(spade_validator: Validator, request: pytest.FixtureRequest) -> SpadeFuzz:
    """Validate/fuzz environments and fail with the rendered report (``--spade-examples``)."""
    return SpadeFuzz(spade_validator, request.config.getoption("spade_examples"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spade")
    group.addoption(
        "--spade-examples",
        dest="spade_examples",
        type=int,
        default=200,
        help="Hypothesis examples per environment for spade_fuzz / seed_env_tests (default 200)",
    )


def seed_env_tests(domain: str, *, full: bool = False) -> Callable[..., None]:
    """A test function parametrised over the seed environments of ``domain``; assign it to
    a ``test_*`` name in a test module."""
    from spade_core.plugins import get_plugins

    dom = get_plugins().domain(domain)
    ids = [s.id for s in dom.seed_envs]

    @pytest.mark.parametrize("spade_seed_env", ids)
    def test_seed_env(spade_fuzz: SpadeFuzz, spade_seed_env: str) -> None:
        spade_fuzz.seed(dom, spade_seed_env, full=full)

    test_seed_env.__doc__ = f"Every seed environment of domain {domain!r} passes {'validation' if full else 'fuzzing'}."
    return test_seed_env
