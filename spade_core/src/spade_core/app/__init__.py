"""SPADE's application layer, above the kernel: what a user runs rather than what an
environment or a plugin is written against.

* the ``spade`` command and the core's commands (``cli``, ``commands``, ``builtin``,
  ``plugin_template``), ``spade play`` (``play``) and one view over what a user can name
  (``catalog``);
* pools in and out: ``importer``, ``exporter``, ``dataset_files``, ``published_pools``,
  the Hub (``hub``, ``hub_layout``);
* the evaluation harness (``eval_harness``), a run's JSON-lines files (``jsonl``) and
  reading HTTP answers from servers SPADE does not control (``http_reads``).

The kernel (the rest of ``spade_core``: the contract, metadata, store, registry, hooks,
plugins, configuration) imports nothing from here; plugins and the sandbox use the kernel
only (``docs/architecture.md``). The old paths (``spade_core.importer``...) still import,
with a warning (:mod:`spade_core.moved`).
"""
