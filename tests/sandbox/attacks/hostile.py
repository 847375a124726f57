"""Hostile environments as data: one :class:`Attack` per escape attempt.

Every attack is a small reference-format environment whose ``step`` (or ``reset``)
performs the attack and, if it got anywhere, returns what it obtained as the observation,
so a test can check that no secret ever reaches the caller. Sources are templates: the
``{SECRET_FILE}``-style fields are filled in by :func:`render` with paths and ports of the
decoys the tests set up (a root-only file, a canary path, loopback listeners...).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from spade_sandbox.errors import (
    EnvCodeError,
    EnvContractViolation,
    SandboxCrash,
    SandboxError,
    SandboxMemoryError,
    SandboxPolicyViolation,
    SandboxTimeout,
    StaticCheckError,
)


@dataclass(frozen=True)
class Outcome:
    """What a containing sandbox must answer: an error class and a regex its message must
    match. ``error=None`` means the call may return normally (the attack failed quietly);
    the side-effect checks alone then decide."""

    error: type[SandboxError] | None
    match: str = ""


@dataclass(frozen=True)
class Attack:
    """One hostile environment.

    ``body`` is the body of ``step(self, action)`` (no indentation; may ``return``);
    ``prelude`` is module-level code placed before the class. ``guarded`` is the outcome on
    the normal path (static layer and runtime guard on), ``os_only`` with both switched off
    so that only the OS layers stand in the way. ``stops`` names what stops it (for the
    catalogue in docs/sandbox-security.md).
    """

    id: str
    body: str
    guarded: Outcome
    os_only: Outcome
    stops: str
    prelude: str = ""
    in_reset: bool = False
    tags: frozenset[str] = field(default_factory=frozenset)

    def source(self, **decoys: object) -> str:
        return render(self, **decoys)


def render(attack: Attack, **decoys: object) -> str:
    body = textwrap.dedent(attack.body).strip()
    prelude = textwrap.dedent(attack.prelude).strip()
    for key, value in decoys.items():
        body = body.replace("{" + key + "}", str(value))
        prelude = prelude.replace("{" + key + "}", str(value))
    lines = "\n".join("        " + line for line in body.splitlines())
    if "return" not in body.splitlines()[-1]:
        lines += '\n        return "nothing happened", 0.0, False, False, {}'
    if attack.in_reset:
        reset = lines.replace("return \"nothing happened\", 0.0, False, False, {}", 'return "nothing happened", {}')
        return f'''
{prelude}

class AttackEnv:
    def reset(self, seed=None):
{reset}

    def step(self, action):
        return "ok", 0.0, True, False, {{}}
'''
    return f'''
{prelude}

class AttackEnv:
    def reset(self, seed=None):
        return "ready", {{}}

    def step(self, action):
{lines}
'''


def static(rule: str) -> Outcome:
    """Rejected by the static layer with a finding of ``rule``."""
    return Outcome(StaticCheckError, rf"\[{rule}\]")


POLICY = Outcome(SandboxPolicyViolation, r"forbidden operation: \[Errno 1\] Operation not permitted|Permission denied")
KILLED = Outcome(SandboxPolicyViolation, "syscall filter")
TIMEOUT = Outcome(SandboxTimeout, "did not answer within|CPU-time limit")
MEMORY = Outcome(SandboxMemoryError, "memory")
CRASH = Outcome(SandboxCrash, "")
QUIET = Outcome(None)


def env_error(match: str) -> Outcome:
    return Outcome(EnvCodeError, match)


def contract(match: str = "") -> Outcome:
    return Outcome(EnvContractViolation, match)


__all__ = [
    "CRASH",
    "KILLED",
    "MEMORY",
    "POLICY",
    "QUIET",
    "TIMEOUT",
    "Attack",
    "Outcome",
    "contract",
    "env_error",
    "render",
    "static",
]
