"""``python -m biaffine.models``: the installed models, their data, licence, size and scores.

``--json`` prints the cards themselves. A model is listed by the name it loads by, its
folder's; a fact its card lacks (a card of one's own may name its files alone) shows as ``?``.
A broken card or models path is one line on stderr and exit status 2 (:mod:`biaffine.cli`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from biaffine import cli
from biaffine.cli import report_user_errors
from biaffine.files import standard_output
from biaffine.installed import InstalledModel, installed, search_path
from biaffine.models.card import score
from biaffine.models.scoring import GOLD, RAW

_HEADER = ("name", "language", "treebank", "UD", "licence", "size", "LAS raw", "LAS gold", "folder")


def main(argv: list[str] | None = None) -> int:
    """Print the table (or the cards as JSON); returns the exit status.

    Raises:
        SystemExit: status 2 after a user error (a broken card, a models path that is no
            folder), printed in one line; 141 when the reader closed standard output (``| head``).
    """
    options = cli.ArgumentParser(prog="python -m biaffine.models", description=__doc__)
    options.add_argument("--json", action="store_true", help="print the cards as JSON")
    args = options.parse_args(argv)
    return report_user_errors(lambda: _print(args.json))


def _print(as_json: bool) -> int:
    """Print the table, or the cards as JSON; returns the exit status.

    Raises:
        ValueError: no model at all, or standard output closed (``>&-``).
    """
    out = standard_output("standard output is closed: nowhere to print the models")
    models = installed()
    if as_json:
        print(json.dumps({name: m.card for name, m in models.items()}, indent=1), file=out)
        out.flush()  # a closed pipe raises here, inside report_user_errors
        return 0
    if not models:
        where = ", ".join(str(p) for p in search_path())
        raise ValueError(f"no models installed (looked in {where})")
    rows = [_HEADER] + [_row(m) for m in models.values()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print(line.rstrip(), file=out)
    out.flush()  # a closed pipe raises here, inside report_user_errors
    return 0


def _row(model: InstalledModel) -> tuple[str, ...]:
    """The model's cells of the table: ``?`` for each fact its card lacks."""
    card = model.card
    tree = _dict(card.get("treebank"))
    licence = _text(tree.get("licence"))
    if tree.get("non_commercial"):
        licence += " (NC)"
    scores = _dict(card.get("scores"))
    size = card.get("size_bytes")
    size = f"{size / 1e6:.1f} MB" if isinstance(size, int | float) else "?"
    release = f"{_text(tree['ud_release'])}+" if "ud_release" in tree else "?"
    raw = _score(_dict(scores.get(RAW)).get("LAS"), missing="-" if scores else "?")
    gold = _score(_dict(scores.get(GOLD)).get("LAS"))
    return (_text(model.name), _text(card.get("language")), _text(tree.get("name")), release,
            licence, size, raw, gold, _text(model.folder))  # fmt: skip


def _dict(value: Any) -> dict[str, Any]:
    """``value`` where it is an object of the card, else an empty one."""
    return value if isinstance(value, dict) else {}


def _score(value: Any, missing: str = "?") -> str:
    """A score of the card as its cell: two decimals, as the docs show it."""
    return missing if value is None else _text(score(value))


def _text(value: Any, missing: str = "?") -> str:
    """A fact of the card as its cell, ``missing`` where the card lacks it.

    A character that is not printable (a newline, a tab, a terminal escape) is written as its
    Python escape: a card of one's own must not break the table's rows or the terminal.
    """
    if value is None:
        return missing
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in str(value)
    )


if __name__ == "__main__":
    sys.exit(main())
