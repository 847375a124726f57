"""Suite-wide test setup.

The suite never touches the user's ``~/.spade``: ``SPADE_HOME`` points at a fresh folder
for the whole session before any SPADE module is imported, and plugin selection is the
installed set (``SPADE_PLUGINS`` cleared) unless a test sets it.
"""

from __future__ import annotations

import os
import tempfile

_SESSION_HOME = tempfile.mkdtemp(prefix="spade-test-home-")
os.environ["SPADE_HOME"] = _SESSION_HOME
os.environ.pop("SPADE_PLUGINS", None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# --- the settings a user writes reach every part ------------------------------------------
# One hostile environment for every consumer's test that ``[spade.sandbox]`` reaches its
# workers: it allocates 160 MB at reset, so it plays under the default memory_mb (512) and
# is stopped with the sandbox's memory error (kind "memory") under memory_mb = 128.

from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

MEMORY_HOG_SOURCE = '''\
class MemoryHogEnv:
    """Allocates 160 MB at reset."""

    def reset(self, seed=None):
        self.hog = bytearray(160 << 20)
        self.over = False
        return "fed", {}

    def step(self, action):
        if self.over:
            return "over", 0.0, True, False, {}
        self.over = True
        return "fed", 1.0, True, False, {}

    def solution(self):
        return ["anything"]
'''

#: The ``[spade.sandbox]`` table under which MEMORY_HOG_SOURCE is stopped.
TIGHT_SANDBOX = "[spade.sandbox]\nmemory_mb = 128\n"


def flushes_subnormals() -> bool:
    """Whether this thread's floating-point mode flushes subnormal floats to zero."""
    return 2.2250738585072014e-308 / 2 == 0.0


@pytest.fixture(autouse=True)
def floats_as_ieee_after_each_test() -> Iterator[None]:
    """No test leaves flush-to-zero on for the tests after it (Hypothesis refuses to draw
    floats then, and every float property test after the culprit fails far from it)."""
    before = flushes_subnormals()
    yield
    assert before or not flushes_subnormals(), "this test left flush-to-zero on for the process"


@pytest.fixture(scope="session")
def memory_hog_source() -> str:
    """Source of an environment that allocates past ``memory_mb = 128`` at reset."""
    return MEMORY_HOG_SOURCE


@pytest.fixture(scope="session")
def tight_sandbox_table() -> str:
    """A ``spade.toml`` fragment whose ``[spade.sandbox]`` stops :func:`memory_hog_source`."""
    return TIGHT_SANDBOX


# --- one real OpenAI-compatible model server for the whole session -------------------------


@pytest.fixture(scope="session")
def model_server():
    """``(base URL without /v1, model id)`` of one ``transformers serve`` process holding
    the embedded model (``tests/model_server.py``), started on first use and shared by every
    test that needs a real server: each start costs tens of seconds on two cores."""
    from model_server import transformers_serve

    with transformers_serve() as served:
        yield served
