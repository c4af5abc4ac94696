"""``python -m biaffine.models``: the installed models, their data, licence, size and scores.

``--json`` prints the cards themselves.
"""

from __future__ import annotations

import argparse
import json
import sys

from biaffine.installed import installed, search_path
from biaffine.models.scoring import GOLD, RAW

_HEADER = ("name", "language", "treebank", "UD", "licence", "size", "LAS raw", "LAS gold", "folder")


def main(argv: list[str] | None = None) -> int:
    """Print the table (or the cards as JSON); returns the exit status."""
    options = argparse.ArgumentParser(prog="python -m biaffine.models", description=__doc__)
    options.add_argument("--json", action="store_true", help="print the cards as JSON")
    args = options.parse_args(argv)
    models = installed()
    if args.json:
        print(json.dumps({name: m.card for name, m in models.items()}, indent=1))
        return 0
    if not models:
        where = ", ".join(str(p) for p in search_path())
        print(f"no models installed (looked in {where})", file=sys.stderr)
        return 1
    rows = [_HEADER] + [_row(m.card, str(m.folder)) for m in models.values()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    return 0


def _row(card: dict, folder: str) -> tuple[str, ...]:
    tree = card["treebank"]
    licence = tree["licence"] + (" (NC)" if tree["non_commercial"] else "")
    scores = card["scores"]
    raw = str(scores[RAW]["LAS"]) if RAW in scores else "-"
    size = f"{card['size_bytes'] / 1e6:.1f} MB"
    release = f"{tree.get('ud_release', '?')}+"
    return (card["name"], card["language"], tree["name"], release, licence, size, raw,
            str(scores[GOLD]["LAS"]), folder)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
