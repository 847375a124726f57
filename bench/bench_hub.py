"""Hub sharing benchmark: ``spade export --to-hub ./DIR`` and ``spade import hf:./DIR``.

Run: ``python -m bench.bench_hub [N]`` (or ``python -m bench hub``; N defaults to 2,000,
about the size of the published tool-use pool).

N distinct environments (the reference-format fixtures, each copy made unique) are
stored, written in the export layout (``spade_core.app.hub.write_hub_folder``: datasets,
parquet, the card), read back (``read_hub_items``) and imported into a fresh SQLite store
(``import_items``, no validation). Side by side: the bare store write of the same items
(``EnvStore.add_many``), the floor any import pays. Each step runs ``REPEAT`` times; the
table shows medians. Machines are shared and noisy: compare ratios, not absolute seconds.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table
from spade_core.app.exporter import iter_envs
from spade_core.app.hub import HubRef, read_hub_items, write_hub_folder
from spade_core.app.importer import import_items
from spade_core.metadata import EnvMetadata
from spade_core.store import EnvStore

from bench.bench_cli import REPEAT, median_seconds

N_ITEMS = 2000
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "core" / "fixtures" / "reference_envs"


def _items(n: int) -> list[tuple[str, EnvMetadata]]:
    codes = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.py"))]
    return [
        (codes[i % len(codes)] + f"\n# copy {i}\n", EnvMetadata(name=f"game_{i}", domain="games", skill="bench"))
        for i in range(n)
    ]


def main(n: int = N_ITEMS) -> None:
    items = _items(n)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with EnvStore(f"sqlite:///{root / 'source.db'}") as store:
            store.add_many(items)

            def export(rep: int) -> None:
                write_hub_folder(iter_envs(store), root / f"export{rep}")

            t_export = median_seconds(export)
        folder = root / "export0"
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        t_read = median_seconds(lambda rep: read_hub_items(HubRef("bench", path=folder)))
        rows = read_hub_items(HubRef("bench", path=folder))

        def import_fresh(rep: int) -> None:
            with EnvStore(f"sqlite:///{root / f'import{rep}.db'}") as fresh:
                report = import_items(fresh, rows)
                assert report.count("imported") == n, report.outcomes[:3]

        def bare(rep: int) -> None:
            with EnvStore(f"sqlite:///{root / f'bare{rep}.db'}") as fresh:
                fresh.add_many(items)

        t_import = median_seconds(import_fresh)
        t_bare = median_seconds(bare)
    table = Table(title=f"hub layout, {n} environments ({size / 1e6:.2f} MB on disk), median of {REPEAT}")
    for col in ("step", "seconds", "per env (ms)", "x bare store write"):
        table.add_column(col, justify="right" if col != "step" else "left")
    for step, t in (
        ("write_hub_folder (store -> parquet + card)", t_export),
        ("read_hub_items (folder -> rows, checked)", t_read),
        ("import_items into a fresh store", t_import),
        ("EnvStore.add_many (floor)", t_bare),
    ):
        table.add_row(step, f"{t:.2f}", f"{1000 * t / n:.2f}", f"{t / t_bare:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else N_ITEMS)
