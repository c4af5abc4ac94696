"""Parsing from Python: load a checkpoint once, parse words, CoNLL-U text or sentences.

Example::

    from biaffine.api import Parser

    parser = Parser.load("outputs/train/ud_english_ewt/.../best.pt", threads=2)
    [tree] = parser.parse([["The", "cat", "sat", "."]], probabilities=True)
    tree.heads          # [2, 3, 0, 3]: head of word i at index i - 1, 0 = ROOT
    tree.deprels        # ['det', 'nsubj', 'root', 'punct']
    tree.head_probs     # marginal probability of each chosen arc under the single-root trees
    tree.log_prob       # log-probability of the whole tree under the same distribution
    print(parser.to_conllu([tree]), end="")

A shipped model by name (``python -m biaffine.models`` lists them), plain text in::

    parser = Parser.load("en_ewt")
    trees = parser.parse(text="The cat sat. It slept.")  # two sentences, every column

Your own checkpoints, with a segmenter trained by ``train_segmenter.py`` for plain text::

    parser = Parser.load("run/best.pt", segmenter="segmenter/best.pt")

What the probabilities mean is said where they are computed: :mod:`biaffine.inference.graph`
(tree-CRF marginals) and :mod:`biaffine.inference.transition` (transition paths).
"""

from __future__ import annotations

import io
import numbers
import os
from collections.abc import Iterable, Sequence

import torch
from torch import nn

from biaffine import checkpoint, installed
from biaffine.data.conllu import Sentence, write_conllu
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, Request, SentenceResult, predict
from biaffine.inputs import Inputs, asked_columns, check_flags, head_lists, input_sentences
from biaffine.parsers.transition import check_partner
from biaffine.pipeline import segmented
from biaffine.results import ParsedTree, parsed_trees
from biaffine.runtime import check_bf16, select_device, set_threads
from biaffine.segmenting import Segmenter

__all__ = ["ParsedTree", "Parser"]

PLAIN_TEXT_HINT = ", or plain text as parse(text=...) with a segmenter"
"""What the refusal of a string without word lines adds: this parser reads plain text too."""


class Parser:
    """A trained parser with its vocabularies, ready to parse (load once, parse many times)."""

    def __init__(
        self,
        model: nn.Module,
        vocabs: Vocabs,
        *,
        device: torch.device,
        bf16: bool = False,
        segmenter: Segmenter | None = None,
        name: str | None = None,
    ) -> None:
        """Wrap a model (in eval mode) and the vocabularies it was trained with.

        ``name`` is the installed model's name where it was loaded by name, else None.

        Raises:
            TypeError: ``bf16`` that is no bool (``"no"`` would have been true).
            ValueError: ``bf16`` on a CPU without native bfloat16.
        """
        check_flags(bf16=bf16)
        if bf16:
            check_bf16(device)
        self.model = model.eval()
        self.vocabs = vocabs
        self.device = device
        self.bf16 = bf16
        self.segmenter = segmenter
        self.name = name

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        device: str = "cpu",
        threads: int | None = None,
        bf16: bool = False,
        segmenter: str | os.PathLike[str] | None = None,
        partner: str | os.PathLike[str] | None = None,
    ) -> Parser:
        """Load an installed model by name, or a checkpoint written by training.

        Args:
            path: a model name (``en_ewt``; see :meth:`named`), or a checkpoint file
                (``best.pt`` or ``last.pt``). A string with no folder and no suffix is a name
                unless a file of that name exists.
            device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
            threads: torch CPU threads (None = torch's default).
            bf16: run the network in bfloat16 (``torch.autocast``; decoders and probabilities
                stay float64): on CPUs with native bfloat16 (AVX512-BF16, AMX) and GPUs.
            segmenter: a ``best.pt`` of ``train_segmenter.py``, for ``parse(text=...)``
                (an installed model brings its own).
            partner: transition parsers: a graph parser's checkpoint whose arc scores the
                search adds (:meth:`pair`).

        Raises:
            biaffine.installed.UnknownModelError: a name that is not installed.
            biaffine.checkpoint.CheckpointError: the file is not a readable checkpoint.
            biaffine.segmenting.SegmenterCheckpointError: nor is ``segmenter``.
            TypeError: ``bf16`` that is no bool.
            ValueError: ``bf16`` on a CPU without native bfloat16; a ``partner`` that
                :meth:`pair` refuses.
        """
        if not isinstance(path, (str, os.PathLike)):
            kind = type(path).__name__
            raise TypeError(f"path is a {kind}: give a model name or a checkpoint file")
        options = {"device": device, "threads": threads, "bf16": bf16, "segmenter": segmenter}
        # A file of that name wins; a folder of that name (models/en_ewt_small, where the
        # shipped models lie) was read as a checkpoint: "is not a file, so not a checkpoint".
        if _meant_as_name(path) and not os.path.isfile(path):
            parser = cls.named(str(path), **options)
        else:
            parser = cls._load(path, **options)
        if partner is not None:
            parser.pair(partner)
        return parser

    @classmethod
    def named(
        cls,
        name: str,
        *,
        device: str = "cpu",
        threads: int | None = None,
        bf16: bool = False,
        segmenter: str | os.PathLike[str] | None = None,
    ) -> Parser:
        """Load the installed model ``name`` (never a path: what a server offers its clients).

        The model's own segmenter comes with it unless ``segmenter`` names another; the other
        arguments are :meth:`load`'s.

        Raises:
            biaffine.installed.UnknownModelError: no installed model of that name (the message
                lists those that are).
            biaffine.installed.MissingRequirementError: its inputs need an extra this Python
                lacks (the message says what to install).
        """
        model = installed.require(name)
        segmenter = model.segmenter if segmenter is None else segmenter
        options = {"device": device, "threads": threads, "bf16": bf16, "segmenter": segmenter}
        return cls._load(model.parser, **options, name=name)

    @classmethod
    def _load(
        cls,
        path: str | os.PathLike[str],
        *,
        device: str,
        threads: int | None,
        bf16: bool,
        segmenter: str | os.PathLike[str] | None,
        name: str | None = None,
    ) -> Parser:
        check_flags(bf16=bf16)  # before the loading, which takes seconds
        set_threads(threads)
        where = select_device(device)
        segments = None if segmenter is None else Segmenter.load(segmenter)
        saved = checkpoint.load(path, map_location=where)
        model = checkpoint.build_model(saved).to(where)
        return cls(model, saved.vocabs, device=where, bf16=bf16, segmenter=segments, name=name)

    def pair(self, partner: str | os.PathLike[str]) -> None:
        """Add a separately trained graph parser's arc scores to this transition parser's search.

        Zhang & Clark's (2008) combined search, with two models joined at parsing time: parse
        with ``search="beam"`` and ``graph_weight`` > 0, which weighs the partner's arc
        log-probabilities against the transition scores (choose it on dev).

        Args:
            partner: a graph parser's checkpoint trained on the same training file (its words
                and characters are read with this parser's vocabularies).

        Raises:
            biaffine.checkpoint.CheckpointError: ``partner`` is not a readable checkpoint.
            ValueError: this is not a transition parser, or the partner is not a graph parser
                with the same vocabularies.
        """
        if getattr(type(self.model), "family", None) != "transition":
            raise ValueError("partner: only a transition parser takes a graph parser's arc scores")
        saved = checkpoint.load(partner, map_location=self.device)
        graph = checkpoint.build_model(saved).to(self.device).eval()
        check_partner(graph, self.vocabs, saved.vocabs)
        self.model.pair(graph)

    def parse(
        self,
        inputs: Inputs | None = None,
        *,
        text: str | None = None,
        decoder: str = "mst",
        root_constraint: bool = True,
        search: str = "greedy",
        beam_size: int = 1,
        graph_weight: float = 0.0,
        joint_labels: bool = True,
        probabilities: bool = False,
        columns: Sequence[str] | None = None,
        overwrite: bool = False,
        max_tokens: int = 5000,
    ) -> list[ParsedTree]:
        """Parse pre-tokenized sentences, or plain text with the segmenter.

        Args:
            inputs: lists of word forms, :class:`Sentence` objects, or CoNLL-U text (one
                string; every byte but HEAD, DEPREL and the predicted columns comes back).
            text: instead of ``inputs``, plain text (paragraphs separated by blank lines):
                the segmenter given to :meth:`load` finds its tokens, multi-word tokens and
                sentences.
            decoder: a name in :data:`decoding.DECODERS` (``mst``, ``eisner``, ``greedy``).
            root_constraint: exactly one word on ROOT (``mst`` and ``eisner``).
            search: transition parsers: ``greedy``, ``beam``, or ``graph`` (a combined model's
                graph head alone).
            beam_size: transition parsers: items per sentence with ``search="beam"``.
            graph_weight: combined models (transition parsers with a graph head, or paired
                with a graph parser: :meth:`pair`): weight of the arc log-probabilities in the
                search score.
            joint_labels: graph parsers decode the best labelled tree (each arc's head and
                best label log-probabilities summed); False: the best unlabelled tree,
                labelled afterwards.
            probabilities: also compute head, label and tree probabilities (graph parsers), or
                label and transition-path probabilities (transition parsers).
            columns: tagged columns to predict (``upos``, ``xpos``, ``feats``, ``lemma``, or
                ``["all"]``: every column the model has a tagger for); None: none for
                ``inputs``, every column the model tags for ``text`` (none for a model
                without taggers).
            overwrite: write them over the input's values (default: only ``_`` cells).
            max_tokens: words per batch.

        Returns:
            One :class:`ParsedTree` per input sentence, in input order.

        Raises:
            ValueError: an unknown decoder or search, a request the parser cannot answer (one
                line saying why), an empty sentence, both or neither of ``inputs`` and
                ``text``, ``text`` without a segmenter, ``max_tokens`` < 1.
            TypeError: ``text`` that is not a str, ``max_tokens`` that is not an int, inputs
                that are not sentences (see :meth:`kbest`), ``columns`` that is one str, a
                yes/no option that is not a bool.
            biaffine.data.conllu.ConlluError: malformed CoNLL-U text or words (named
                ``<input>:LINE`` for CoNLL-U text, ``<input>:k`` for the k-th list of words).
        """
        check_flags(
            probabilities=probabilities,
            overwrite=overwrite,
            root_constraint=root_constraint,
            joint_labels=joint_labels,
        )
        settings = _decoder_settings(
            decoder, root_constraint, search, beam_size, graph_weight, joint_labels
        )
        # Plain text has no column to keep: every column the model tags (none, tree-only).
        default = () if text is None else tuple(self.model.tagged_columns)
        asked = asked_columns(columns, default, overwrite=overwrite)
        request = Request(probabilities, columns=asked, overwrite=overwrite)
        sentences = self._sentences_of(inputs, text)
        found = self._predict(sentences, request, settings, max_tokens)
        return [parsed_trees(s, r, request)[0] for s, r in zip(sentences, found, strict=True)]

    def to_conllu(self, trees: Sequence[ParsedTree]) -> str:
        """The parsed sentences as CoNLL-U text.

        Raises:
            TypeError: ``trees`` is not a sequence of :class:`ParsedTree` (one tree, or
                :meth:`kbest`'s list per sentence: pass one of its lists, or flatten them).
        """
        if isinstance(trees, ParsedTree):
            raise TypeError("to_conllu takes a list of ParsedTree, not one: pass [tree]")
        if not isinstance(trees, Iterable) or isinstance(trees, (str, bytes)):
            raise TypeError(f"to_conllu takes a list of ParsedTree, not a {type(trees).__name__}")
        trees = list(trees)
        wrong = next((tree for tree in trees if not isinstance(tree, ParsedTree)), None)
        if wrong is not None:
            raise TypeError(
                f"to_conllu takes a list of ParsedTree, and this one holds a "
                f"{type(wrong).__name__}: pass parse()'s list, or one of kbest()'s lists"
            )
        out = io.StringIO()
        write_conllu(out, [tree.sentence for tree in trees])
        return out.getvalue()

    def kbest(
        self,
        inputs: Inputs,
        k: int,
        *,
        decoder: str = "mst",
        root_constraint: bool = True,
        joint_labels: bool = True,
        columns: Sequence[str] | None = None,
        overwrite: bool = False,
        max_tokens: int = 5000,
    ) -> list[list[ParsedTree]]:
        """The k highest-scoring trees of each sentence, best first (graph parsers).

        Args:
            inputs: as :meth:`parse`.
            k: trees per sentence (fewer when a sentence has fewer trees).
            decoder: ``mst`` (non-projective trees, :func:`decoding.kbest`) or ``eisner``.
            root_constraint: exactly one word on ROOT in every tree.
            joint_labels: rank trees by their arcs' head and best label log-probabilities
                (as :meth:`parse` decodes); False: by head log-probabilities alone.
            columns: tagged columns to predict, as :meth:`parse` (None: none); every tree of a
                sentence carries the same ones.
            overwrite: as :meth:`parse`.
            max_tokens: words per batch.

        Returns:
            Per sentence, up to k :class:`ParsedTree`, each with its best labels, whose
            ``log_prob`` is the tree's score as the decoder maximizes it (the sum of its arcs'
            head log-probabilities, plus their labels' with ``joint_labels``).

        Raises:
            ValueError: k not an integer >= 1, a decoder without k-best, or a parser that is not
                a graph parser.
            TypeError: ``inputs`` that is neither a str nor an iterable of sentences (bytes, one
                :class:`Sentence`), or a sentence that is neither a :class:`Sentence` nor an
                ordered iterable of words (bytes, a dict, a set); ``columns`` that is one str;
                a yes/no option that is not a bool.
        """
        # Checked here, not by Request: there kbest=None means "one tree", which k must not.
        # A numpy integer is one (numbers.Integral), as fixed heads accept it.
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"k={k!r} must be an integer >= 1")
        k = int(k)
        check_flags(root_constraint=root_constraint, joint_labels=joint_labels, overwrite=overwrite)
        settings = _decoder_settings(decoder, root_constraint, joint_labels=joint_labels)
        sentences = list(input_sentences(inputs, PLAIN_TEXT_HINT))
        asked = asked_columns(columns, overwrite=overwrite)
        request = Request(kbest=k, columns=asked, overwrite=overwrite)
        found = self._predict(sentences, request, settings, max_tokens)
        return [parsed_trees(s, r, request) for s, r in zip(sentences, found, strict=True)]

    def parse_constrained(
        self,
        inputs: Inputs,
        fixed_heads: Sequence[Sequence[int | None]],
        *,
        decoder: str = "mst",
        root_constraint: bool = True,
        joint_labels: bool = True,
        columns: Sequence[str] | None = None,
        overwrite: bool = False,
        max_tokens: int = 5000,
    ) -> list[ParsedTree]:
        """The best trees that keep some heads fixed (partially annotated input), graph parsers.

        Args:
            inputs: as :meth:`parse`.
            fixed_heads: per sentence, one entry per word: its fixed head (an int, 0 = ROOT),
                or None where the parser chooses.
            decoder: ``mst`` or ``eisner`` (exact under the constraints).
            root_constraint: exactly one word on ROOT.
            joint_labels: as :meth:`parse`.
            columns: tagged columns to predict, as :meth:`parse` (None: none).
            overwrite: as :meth:`parse`.
            max_tokens: words per batch.

        Raises:
            ValueError: a head that is not an int or None, a head outside 0..n, lengths that
                do not match, or constraints that admit no tree (the message names the
                sentence as ``FILE:LINE``, or ``<input>:k`` for the k-th list of words, and
                why).
            TypeError: one sentence's fixed heads that are not a list (None, a str), inputs or
                ``columns`` as :meth:`kbest` refuses them, a yes/no option that is not a bool.
        """
        check_flags(root_constraint=root_constraint, joint_labels=joint_labels, overwrite=overwrite)
        settings = _decoder_settings(decoder, root_constraint, joint_labels=joint_labels)
        fixed = head_lists(fixed_heads)
        asked = asked_columns(columns, overwrite=overwrite)
        request = Request(fixed_heads=fixed, columns=asked, overwrite=overwrite)
        sentences = list(input_sentences(inputs, PLAIN_TEXT_HINT))
        _check_head_range(sentences, fixed)
        found = self._predict(sentences, request, settings, max_tokens)
        return [parsed_trees(s, r, request)[0] for s, r in zip(sentences, found, strict=True)]

    def _sentences_of(self, inputs: Inputs | None, text: str | None) -> list[Sentence]:
        if inputs is None and text is None:
            raise ValueError("nothing to parse: give inputs (sentences) or text= (plain text)")
        if inputs is not None and text is not None:
            raise ValueError("give either inputs (sentences) or text= (plain text), not both")
        if text is None:
            return list(input_sentences(inputs, PLAIN_TEXT_HINT))
        if not isinstance(text, str):
            raise TypeError(f"text= must be a str of plain text, got {type(text).__name__}")
        if self.segmenter is None:
            raise ValueError(
                "text= needs a segmenter: load an installed model by name (Parser.load('en_ewt')) "
                "or give one, Parser.load(..., segmenter=PATH)"
            )
        return segmented(self.segmenter, text)

    def _predict(
        self,
        sentences: list[Sentence],
        request: Request,
        settings: DecoderSettings,
        max_tokens: int,
    ) -> list[SentenceResult]:
        options = {"max_tokens": max_tokens, "bf16": self.bf16}
        found = predict(self.model, self.vocabs, sentences, request, {"": settings}, **options)
        return found[""].results


def _check_head_range(
    sentences: Sequence[Sentence], fixed_heads: Sequence[Sequence[int | None]]
) -> None:
    """Refuses a fixed head outside 0..n (ints, as :class:`Request` checked).

    The decoders read -1 as "free": a negative head would silently leave its word free.
    Sentences and head lists of other counts or lengths are the decoders' to report.
    """
    for sentence, heads in zip(sentences, fixed_heads, strict=False):
        n = len(sentence)
        for i, head in enumerate(heads, 1):
            if head is not None and not 0 <= head <= n:
                raise ValueError(
                    f"{sentence.source}:{sentence.line}: word {i}: fixed head {head} "
                    f"is not in 0..{n}"
                )


def _meant_as_name(path: object) -> bool:
    """Whether ``path`` names a model: spelled as one, or a str with no folder or suffix.

    ``"EN_EWT"`` or ``"en_ewt "`` was looked for as a file, and refused as "no such
    checkpoint file" without the installed models' names.
    """
    if installed.is_name(path):
        return True
    return isinstance(path, str) and not any(mark in path for mark in ("/", os.sep, "."))


def _decoder_settings(decoder: object, *args: object, **kwargs: object) -> DecoderSettings:
    """:class:`DecoderSettings` of the API's arguments; a refusal names ``decoder`` as they do.

    The settings call the tree decoder ``algorithm``, which is no argument here.
    """
    try:
        return DecoderSettings(decoder, *args, **kwargs)  # type: ignore[arg-type]
    except ValueError as error:
        message = str(error)
        if message.startswith("algorithm="):  # not another setting's value that holds it
            message = "decoder=" + message.removeprefix("algorithm=")
        raise ValueError(message) from None
