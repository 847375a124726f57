"""``python -m spade_trainer [OPTIONS]``: the ``spade selfplay`` command as a module, so
``accelerate launch --config_file configs/accelerate/<file>.yaml -m spade_trainer ...``
runs self-play under accelerate / DeepSpeed (see docs/trainer.md)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    from spade_core.app.cli import main as spade_main

    spade_main(["selfplay", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
