"""What the server reads of a loaded model, whichever runtime holds it: torch or ONNX Runtime.

:class:`Served` is all :mod:`biaffine.serving.jobs` asks of a model: its segmenter (raw text)
and how many pieces between whitespace one of its words may hold, its tagged columns, a
one-line refusal of what it cannot do, and a parse of many sentences in one call.
:class:`TorchServed` wraps :class:`biaffine.api.Parser` (``serve.py``'s default);
:class:`OnnxServed` wraps an export folder in ONNX Runtime (``serve.py runtime=onnx``), and
neither this module nor the ONNX one imports torch. Each imports its runtime only when a model
is loaded with it, so a server of one runtime needs only that runtime installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from biaffine.data.conllu import Sentence
from biaffine.inference.settings import DecoderSettings
from biaffine.pipeline import TextSegmenter
from biaffine.predict_options import PredictOptions, request_of
from biaffine.results import with_result

if TYPE_CHECKING:
    from biaffine.api import Parser
    from biaffine.onnxrun import OnnxParser

__all__ = ["OnnxServed", "Served", "TorchServed", "pieces_per_word"]


class Served(Protocol):
    """A model as the server uses it.

    Attributes:
        segmenter: reads raw text (UDPipe's ``tokenizer``), or None.
        pieces_per_word: the most pieces between whitespace of one word the segmenter was
            trained on (:func:`pieces_per_word`), by which the server refuses raw text over
            its word limit before segmenting it.
        tagged_columns: the columns its taggers predict (UDPipe's ``tagger``).
    """

    segmenter: TextSegmenter | None
    pieces_per_word: int
    tagged_columns: tuple[str, ...]

    def check(self, decoder: DecoderSettings, options: PredictOptions) -> None:
        """Raise ValueError, in one line, for what this model cannot answer."""
        ...

    def parse(
        self,
        sentences: list[Sentence],
        decoder: DecoderSettings,
        options: PredictOptions,
        max_tokens: int | None,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[list[Sentence]]:
        """Per input sentence, the sentences to write (several with k-best).

        ``max_tokens``: words per batch of the network; None for ``predict.py``'s default in
        this runtime. ``abandoned``: asked before each batch whether the answer is still
        wanted; :class:`~biaffine.inference.request.Abandoned` where it is not.
        """
        ...


class TorchServed:
    """A :class:`biaffine.api.Parser` for the server (every option ``predict.py`` has)."""

    def __init__(self, parser: Parser) -> None:
        """Keep the loaded parser."""
        self.parser = parser
        self.segmenter = parser.segmenter
        self.pieces_per_word = pieces_per_word(parser.segmenter)
        self.tagged_columns = tuple(parser.model.tagged_columns)

    @classmethod
    def load(cls, name: str, **options: Any) -> TorchServed:
        """The installed model ``name`` (:func:`biaffine.models.load`'s options).

        The server's warm-up then loads the decoders' machine code, which a short-lived process
        skips for small calls (:func:`tiered.prefer_machine_code`): no request waits for it.
        """
        import tiered  # numba, loaded with the first model of this runtime
        from biaffine import models  # torch, likewise

        tiered.prefer_machine_code()
        return cls(models.load(name, **options))

    def check(self, decoder: DecoderSettings, options: PredictOptions) -> None:
        """:func:`biaffine.predicting.check_model`."""
        from biaffine.predicting import check_model

        check_model(self.parser.model, self.parser.vocabs, decoder, options)

    def parse(
        self,
        sentences: list[Sentence],
        decoder: DecoderSettings,
        options: PredictOptions,
        max_tokens: int | None,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[list[Sentence]]:
        """As ``predict.py`` parses one chunk (:func:`biaffine.predicting.chunk_parser`)."""
        from biaffine.predicting import MAX_TOKENS, chunk_parser

        parser = self.parser
        how = {
            "max_tokens": MAX_TOKENS if max_tokens is None else max_tokens,
            "bf16": parser.bf16,
            "abandoned": abandoned,
        }
        return chunk_parser(parser.model, parser.vocabs, decoder, options, **how)(sentences)


class OnnxServed:
    """An export folder in ONNX Runtime for the server: what ``predict.py runtime=onnx`` does."""

    def __init__(self, parser: OnnxParser, segmenter: TextSegmenter | None) -> None:
        """Keep the sessions."""
        self.parser = parser
        self.segmenter = segmenter
        self.pieces_per_word = pieces_per_word(segmenter)
        self.tagged_columns = parser.tagged_columns

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, threads: int | None = None) -> OnnxServed:
        """The export in ``folder`` (``python -m biaffine.export``), with its segmenter if any.

        Raises:
            ValueError: no export there, or one this runtime cannot parse with.
        """
        from biaffine.onnxrun import OnnxParser  # onnxruntime, loaded with the first model

        parser = OnnxParser.load(folder, threads=threads)
        return cls(parser, parser.segmenter)

    @classmethod
    def load_model(
        cls, name: str, onnx_dir: str | os.PathLike[str], *, threads: int | None = None
    ) -> OnnxServed:
        """The installed model ``name`` from its export ``onnx_dir/name``.

        Raises:
            ValueError: no export there, or one not made from the model's checkpoints (a stale
                export, or another model's: :func:`biaffine.onnxrun.check_exported_from`).
        """
        from biaffine import installed
        from biaffine.onnxrun import check_exported_from

        model, folder = installed.require(name), Path(onnx_dir) / name
        check_exported_from(folder, model.parser, model.segmenter, name)  # before its graphs load
        return cls.load(folder, threads=threads)

    def check(self, decoder: DecoderSettings, options: PredictOptions) -> None:
        """:meth:`biaffine.onnxrun.OnnxParser.check` (probabilities, k-best... are refused)."""
        self.parser.check(request_of(options, []), decoder)

    def parse(
        self,
        sentences: list[Sentence],
        decoder: DecoderSettings,
        options: PredictOptions,
        max_tokens: int | None,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[list[Sentence]]:
        """One sentence written per input sentence (no k-best in this runtime)."""
        from biaffine.onnxrun import MAX_TOKENS

        request = self.parser.check(request_of(options, []), decoder)
        max_tokens = MAX_TOKENS if max_tokens is None else max_tokens
        found = self.parser.results(
            sentences, request, decoder, max_tokens=max_tokens, abandoned=abandoned
        )
        return [
            list(with_result(sentence, result, request))
            for sentence, result in zip(sentences, found, strict=True)
        ]


def pieces_per_word(segmenter: Any) -> int:
    """The most pieces between whitespace in one word of ``segmenter``, as its training shows.

    1 for a segmenter (torch's or ONNX Runtime's) trained on no word with a space inside: it
    ends a token with each piece (it did on every piece of EWT test, ``en_ewt_small``, though
    nothing forces it to). One trained on such words (Vietnamese, ``CharVocab.spaced_words``)
    joins up to as many pieces as its longest one holds. 1 without a segmenter (no raw text).
    """
    spaced = None if segmenter is None else segmenter.vocab.spaced
    return 1 if spaced is None else spaced.longest
