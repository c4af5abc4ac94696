"""Raw-text results side by side with Stanza's and UDPipe 2's published ones: a table and a plot.

Reads the ``--json`` files of ``experiments/raw_text.py`` (one per treebank), prints a Markdown
table with the published raw-text scores of the same treebanks beside ours, and draws Words F1,
Sentences F1 and LAS F1 per treebank and system into a PNG.

Published numbers, both end to end from raw text with the CoNLL 2018 scorer:

- Stanza 1.5.1 on UD 2.12, models with a character language model, no transformer
  (stanfordnlp/stanza, ``_pages/performance.md``);
- UDPipe 2 on UD 2.15 (models 241121, which read multilingual BERT), "Raw text" rows of
  ufal/udpipe ``docs/models_ud215.md``.

Usage::

    python experiments/raw_text_plot.py runs/raw_*.json --png docs/raw_text.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from biaffine.cli import report_user_errors

PUBLISHED_COLUMNS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags")
PUBLISHED_COLUMNS += ("Lemmas", "UAS", "LAS", "CLAS", "MLAS", "BLEX")
# Treebank (UD_ folder less its prefix), then the scores in PUBLISHED_COLUMNS order.
_STANZA = """
English-EWT 99.17 89.16 98.92 96.20 95.75 96.39 94.64 96.63 88.90 86.77 84.11 80.27 81.54
French-Sequoia 99.88 87.46 99.64 98.80 99.64 97.87 97.52 98.50 93.22 91.57 87.74 84.88 86.36
Turkish-IMST 99.86 98.16 97.75 93.44 93.27 91.06 89.07 95.55 73.39 64.07 60.96 54.70 59.51
Vietnamese-VTB 88.02 99.25 88.02 81.48 80.61 88.02 80.56 81.66 58.82 51.49 46.60 42.58 42.47
Afrikaans-AfriBooms 99.99 99.65 99.99 98.60 95.77 98.41 95.66 98.29 89.54 86.14 80.10 76.71 77.53
Galician-TreeGal 99.68 88.02 98.53 93.89 91.51 93.11 90.64 94.52 77.27 71.86 64.38 58.14 60.30
"""
# UDPipe 2 publishes no Tokens and no CLAS column: "-" there.
_UDPIPE = """
English-EWT - 87.55 99.01 96.57 96.24 97.06 95.27 96.94 90.97 89.14 - 82.66 83.86
French-Sequoia - 88.77 99.12 98.38 - 97.41 97.00 98.24 93.98 92.72 - 86.71 89.23
Turkish-IMST - 97.38 97.31 92.73 92.53 89.44 86.59 93.55 76.48 69.29 - 58.17 63.97
Vietnamese-VTB - 93.73 86.06 78.47 77.51 - 77.34 85.77 56.62 49.62 - 41.05 45.25
Afrikaans-AfriBooms - 99.65 99.94 98.68 95.67 98.30 95.48 98.38 90.38 87.46 - 78.88 79.86
Galician-TreeGal - 87.99 98.74 96.29 94.37 95.37 93.52 97.27 83.29 79.18 - 68.58 72.41
"""


def _by_treebank(text: str) -> dict[str, str]:
    lines = (line.split(" ", 1) for line in text.strip().splitlines())
    return {f"UD_{name}": scores for name, scores in lines}


PUBLISHED = {
    "Stanza 1.5.1 (UD 2.12, charlm)": _by_treebank(_STANZA),
    "UDPipe 2 (UD 2.15, mBERT)": _by_treebank(_UDPIPE),
}
PLOTTED = ("Words", "Sentences", "LAS")


def published_row(system: str, treebank: str) -> dict[str, str] | None:
    """A published system's scores for a treebank by column, or None if it has none."""
    numbers = PUBLISHED[system].get(treebank)
    if numbers is None:
        return None
    return {"system": f"{treebank}: {system}"} | dict(
        zip(PUBLISHED_COLUMNS, numbers.split(), strict=True)
    )


def table(results: list[dict]) -> list[str]:
    """Markdown lines: for each treebank, our rows, then the published ones."""
    lines = [
        "| system | " + " | ".join(PUBLISHED_COLUMNS) + " |",
        "|---|" + "--:|" * len(PUBLISHED_COLUMNS),
    ]
    for result in results:
        treebank = result["rows"][0]["system"].split(":")[0]
        rows = list(result["rows"])
        rows += filter(None, (published_row(system, treebank) for system in PUBLISHED))
        for row in rows:
            cells = [str(row.get(column, "-")) for column in PUBLISHED_COLUMNS]
            lines.append(f"| {row['system']} | " + " | ".join(cells) + " |")
    return lines


def plot(results: list[dict], png: Path) -> None:
    """One panel per plotted score: bars per treebank, one per system."""
    figure, axes = plt.subplots(1, len(PLOTTED), figsize=(5 * len(PLOTTED), 4.2))
    for axis, column in zip(axes, PLOTTED, strict=True):
        series: dict[str, list[float]] = {}
        names = []
        for k, result in enumerate(results):
            treebank = result["rows"][0]["system"].split(":")[0]
            names.append(treebank.removeprefix("UD_"))
            rows = list(result["rows"])
            rows += filter(None, (published_row(s, treebank) for s in PUBLISHED))
            for row in rows:
                system = row["system"].split(": ", 1)[1]
                value = row.get(column, "-")
                series.setdefault(system, [float("nan")] * len(results))[k] = (
                    float(value) if value != "-" else float("nan")
                )
        width = 0.8 / max(len(series), 1)
        for s, (system, values) in enumerate(series.items()):
            positions = [k + (s - (len(series) - 1) / 2) * width for k in range(len(results))]
            axis.bar(positions, values, width, label=system)
        axis.set_xticks(range(len(results)), names, rotation=30, ha="right", fontsize=8)
        axis.set_title(f"{column} F1, raw text")
        axis.set_ylim(40 if column == "LAS" else 50, 100)
    axes[0].legend(fontsize=7, loc="lower left")
    figure.tight_layout()
    figure.savefig(png, dpi=110)


def main() -> None:
    """Print the table; draw the plot when asked."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("results", nargs="+", type=Path)
    options.add_argument("--png", type=Path, default=None)
    args = options.parse_args()
    results = [json.loads(path.read_text()) for path in args.results]
    print("\n".join(table(results)))
    if args.png:
        plot(results, args.png)


if __name__ == "__main__":
    report_user_errors(main)
