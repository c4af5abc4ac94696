"""The child processes of ``benchmarks/peers.py``: one measurement each, in a fresh interpreter.

``python -m benchmarks.peer_children parse KEY CHECKPOINT ONNX PEERS INPUT THREADS`` loads
system KEY, reads INPUT into its own sentence objects, warms up on the first sentences, times
parsing all of them once and prints ``{"rate": sentences/s}``;
``python -m benchmarks.peer_children command KEY ... OUTPUT`` (peers only: ours is
``predict.py``) loads, reads, parses and writes CoNLL-U, as a user's script would.

Each system imports its own package only (torch is never imported for spaCy, UDPipe or
``runtime=onnx``), so the command's memory is its own.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

WARM_SENTENCES = 100


class Peer(Protocol):
    """What a measured system does: read its input, parse it, write CoNLL-U."""

    def read(self, path: Path) -> list[Any]:
        """The input's sentences as the system's own objects."""

    def parse(self, items: list[Any]) -> list[Any]:
        """Parse them all; returns what :meth:`write` takes."""

    def write(self, parsed: list[Any], dest: Path) -> None:
        """Write the parsed sentences as CoNLL-U."""


class Ours:
    """The project's parser: torch in fp32, int8 or bf16, or the export in onnxruntime.

    Parse only: its whole command is ``predict.py``, which ``benchmarks/peers.py`` times.
    """

    def __init__(self, key: str, checkpoint: Path, onnx: Path, threads: int) -> None:
        """Load the model as ``key`` says (``onnx``: the export folder of an ONNX key)."""
        if key in ("onnx", "onnx_int8"):
            from biaffine.onnxrun import OnnxParser

            self.parser = OnnxParser.load(onnx, threads=threads)
            return
        from biaffine.api import Parser

        parser = Parser.load(checkpoint, threads=threads, bf16=key == "bf16")
        if key == "int8":
            from biaffine.predicting import quantized

            parser = Parser(quantized(parser.model), parser.vocabs, device=parser.device)
        self.parser = parser

    def read(self, path: Path) -> list[Any]:
        """The input's sentences as this system's objects."""
        from biaffine.data.conllu import read_conllu

        return list(read_conllu(path))

    def parse(self, items: list[Any]) -> list[Any]:
        """Parse them all."""
        return self.parser.parse(items)


class Spacy:
    """spaCy's parser on the gold words (a ``Doc`` per sentence; its tokenizer is not run)."""

    def __init__(self, folder: Path) -> None:
        """Load the pipeline."""
        import spacy

        self.nlp = spacy.load(folder)

    def read(self, path: Path) -> list[Any]:
        """The input's sentences as this system's objects."""
        from spacy.tokens import Doc

        from biaffine.data.conllu import read_conllu

        self.sentences = list(read_conllu(path))
        return [Doc(self.nlp.vocab, words=sentence.forms) for sentence in self.sentences]

    def parse(self, items: list[Any]) -> list[Any]:
        """Parse them all."""
        return list(self.nlp.pipe(items))

    def write(self, parsed: list[Any], dest: Path) -> None:
        """Write the parsed sentences as CoNLL-U."""
        from biaffine.data.conllu import write_conllu

        trees = [
            s.with_tree(*spacy_tree(doc)) for s, doc in zip(self.sentences, parsed, strict=True)
        ]
        write_conllu(dest, trees)


def spacy_tree(doc: Any) -> tuple[list[int], list[str]]:
    """HEAD and DEPREL of each word of a parsed ``Doc`` (a root is its own head in spaCy).

    spaCy may split a sentence into several (one root each); each root is written on ROOT.
    """
    heads = [0 if token.head.i == token.i else token.head.i + 1 for token in doc]
    deprels = ["root" if token.dep_ == "ROOT" else token.dep_ or "dep" for token in doc]
    return heads, deprels


class Udpipe:
    """UDPipe 1's parser (Parsito) on the gold words: ``Model.parse`` on each sentence."""

    def __init__(self, path: Path) -> None:
        """Load the model."""
        import ufal.udpipe as udpipe

        self.udpipe = udpipe
        self.model = udpipe.Model.load(str(path))
        if self.model is None:
            raise SystemExit(f"{path}: not a UDPipe model")

    def read(self, path: Path) -> list[Any]:
        """The input's sentences as this system's objects."""
        from benchmarks.peer_models import udpipe_sentences

        # The vector itself: its items are views into it, which must not outlive it.
        return udpipe_sentences(path.read_text(encoding="utf-8"), str(path))

    def parse(self, items: list[Any]) -> list[Any]:
        """Parse them all."""
        for k in range(len(items)):  # indexed: the vector's iterator may yield bare pointers
            self.model.parse(items[k], self.udpipe.Model.DEFAULT)
        return items

    def write(self, parsed: list[Any], dest: Path) -> None:
        """Write the parsed sentences as CoNLL-U."""
        from biaffine.files import atomic_open

        writer = self.udpipe.OutputFormat.newConlluOutputFormat()
        with atomic_open(dest, "w", encoding="utf-8") as handle:
            for k in range(len(parsed)):
                handle.write(writer.writeSentence(parsed[k]))
            handle.write(writer.finishDocument())


def load(key: str, checkpoint: Path, onnx: Path, peers: Path, threads: int) -> Peer | Ours:
    """The system ``key``, loaded."""
    from benchmarks.peer_models import SPACY_MODEL, UDPIPE_MODEL

    if key == "spacy":
        return Spacy(peers / SPACY_MODEL)
    if key == "udpipe":
        return Udpipe(peers / UDPIPE_MODEL)
    return Ours(key, checkpoint, onnx, threads)


def parse_rate(system: Peer | Ours, source: Path) -> float:
    """Sentences/s of one timed parse of ``source``, after a warm-up on its first sentences."""
    system.parse(system.read(source)[:WARM_SENTENCES])
    items = system.read(source)
    started = time.perf_counter()
    system.parse(items)
    return len(items) / (time.perf_counter() - started)


def child(argv: Sequence[str]) -> None:
    """Run one measurement (see the module docstring for the arguments)."""
    mode, key, checkpoint, onnx, peers, source, threads, *rest = argv
    system = load(key, Path(checkpoint), Path(onnx), Path(peers), int(threads))
    if mode == "parse":
        print(json.dumps({"rate": parse_rate(system, Path(source))}))
        return
    system.write(system.parse(system.read(Path(source))), Path(rest[0]))


if __name__ == "__main__":
    child(sys.argv[1:])
