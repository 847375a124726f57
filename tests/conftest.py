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
