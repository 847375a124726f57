"""What sandboxed environment code gets in place of an allow-listed module whose real
objects reach the interpreter's ``eval`` (:data:`spade_sandbox.allowlist.MODULE_FACADES`).

Trusted code, imported by the zygote only when a domain allows the module."""
