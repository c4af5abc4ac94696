"""Segmenter speed: characters of raw text per second, best of N.

Usage: ``python -m benchmarks.segmenter_speed CHECKPOINT [--input FILE.conllu] [--repeats 3]
[--threads N]`` (default input: EWT test under $UD_ROOT, its raw text rebuilt by
``rawtext.labelled_documents``; default threads: torch's).

Times :meth:`Segmenter.classes` on the file's whole raw text (its documents joined by a blank
line, as one text file of them would read; the model loaded once, before timing; one warm-up
pass). Each operation runs on one CPU thread whatever torch's count (two were 2.4x slower: the
matrices are too small to share); ``--threads`` batches of windows run side by side. Prints a
markdown row with the CPU and the load average, since timings on shared cores are noisy. torch
is imported through ``biaffine`` only, so that OpenMP's threads wait passively
(``biaffine/openmp.py``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from biaffine.runtime import cpu_description, set_threads
from biaffine.segmenting import Segmenter
from rawtext.labels import labelled_documents

EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"


def main() -> None:
    """Time the segmenter; print chars/s and KB/s (UTF-8)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch's threads")
    args = parser.parse_args()
    set_threads(args.threads)
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    documents = labelled_documents(source)
    text = "\n\n".join(document.text for document in documents)
    kilobytes = len(text.encode("utf-8")) / 1000
    segmenter = Segmenter.load(args.checkpoint)
    print(f"{source.name}: {len(documents)} documents, {len(text)} characters, {kilobytes:.0f} KB")
    threads = args.threads or "torch's default"
    print(f"{cpu_description()}; threads: {threads}; load average {os.getloadavg()[0]:.2f}\n")
    print(f"| seconds (best of {args.repeats}) | chars/s | KB/s |")
    print("|---|---|---|")
    segmenter.classes(text)  # warm-up
    best = min(_seconds(segmenter, text) for _ in range(args.repeats))
    print(f"| {best:.2f} | {len(text) / best:,.0f} | {kilobytes / best:,.0f} |")


def _seconds(segmenter: Segmenter, text: str) -> float:
    started = time.perf_counter()
    segmenter.classes(text)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
