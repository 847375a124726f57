"""spade_tooluse: the tool-use domain of SPADE.

* :mod:`spade_tooluse.base` — :class:`~spade_tooluse.base.ToolEnv`, the base class of
  tool-use environments (the one module generated environments may import);
* :mod:`spade_tooluse.catalog` — the seed pool (``envs/*.py``), three per skill;
* :mod:`spade_tooluse.bfcl` — the BFCL-v4 multi-turn environments, the ``bfcl`` eval suite and
  their self-check (``python -m spade_tooluse.bfcl``);
* :mod:`spade_tooluse.plugin` — the ``spade_register_domains`` and ``spade_register_eval_suites`` hooks.
"""

# ``import spade_core`` registers every plugin's seed environments, which imports this
# package's plugin module. Finishing that first means no submodule of this package is ever
# seen half-initialised by the registration (a circular import otherwise).
import spade_core  # noqa: F401
