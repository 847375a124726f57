"""The human-readable report: bounded whatever the report holds, free of terminal escapes."""

from __future__ import annotations

from io import StringIO

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from spade_core.metadata import Finding, ValidationReport
from spade_designer.validation.render import MAX_FINDINGS_PER_STAGE, report_renderable, terminal_safe


def rendered(report: ValidationReport) -> str:
    buf = StringIO()
    Console(file=buf, width=120, color_system=None).print(report_renderable(report, title="t"))
    return buf.getvalue()


def test_ten_thousand_findings_are_capped_and_summarised():
    findings = [Finding(stage="fuzz", ok=True, message="x" * 120, code=f"note_{i % 3}") for i in range(10_000)]
    findings.append(Finding(stage="fuzz", ok=False, message="the real reason", code="step_exception", actions=["a"] * 500, seed=1))
    report = ValidationReport(passed=False, failed_stage="fuzz", reasons=["step_exception: the real reason"], findings=findings)
    text = rendered(report)
    assert len(text.encode()) < 20_000, len(text.encode())
    assert "the real reason" in text  # the reason is never among the hidden ones
    assert f"{10_001 - MAX_FINDINGS_PER_STAGE} more finding(s)" in text
    assert "note_0" in text and "see --json" in text
    assert "470 more (see --json)" in text  # the replay's actions too


def test_a_huge_message_is_clipped():
    report = ValidationReport(passed=False, failed_stage="load", reasons=["init_error"],
                              findings=[Finding(stage="load", ok=False, message="y" * 1_000_000, code="init_error")])
    assert len(rendered(report)) < 10_000


@given(st.text(alphabet=st.sampled_from(["a", " ", "\n", "\t", "\x1b", "[", "]", "0", ";", "m", "\x07", "\x9b", "\x9d", "\r", "\x00", "\u202e", "é"]), max_size=80))
def test_terminal_safe_leaves_no_control_character(text):
    out = terminal_safe(text)
    assert all(c in "\n\t" or (ord(c) >= 32 and not 0x7F <= ord(c) <= 0x9F and c != "\u202e") for c in out)
    assert terminal_safe(out) == out


def test_plain_text_is_unchanged():
    text = "reward 1.2 outside [0, 1] — λ 中文 😀\n\tnext"
    assert terminal_safe(text) == text
