"""A parser's scoring networks as ONNX graphs (``python -m biaffine.export``).

``python -m biaffine.export checkpoint=PATH output=FOLDER`` exports a checkpoint's parser;
``segmenter=PATH`` adds a segmenter for raw text, and ``model=NAME`` exports an installed model
with its own segmenter.

The output is a folder of graphs that together compute every score the parser's family reads,
with dynamic batch and length axes, and ``export.json`` naming them (with the checkpoint's
vocabularies and config, so that the folder alone describes the model):

- ``chars.onnx``: the character model, ``chars`` long[U, C] (the character ids of U word forms,
  padded with 0) to ``char_vectors`` float[U, D]. Apart, so that a runtime computes each
  distinct form's vector once (:class:`biaffine.onnx_chars.CharVectors`), not once per batch.
- ``scores.onnx``: the encoder and the heads that read its states once per batch. Inputs
  ``words`` long[B, N+1], ``char_vectors`` float[B, N+1, D], ``lengths`` long[B] (and ``upos``
  long[B, N+1] for an encoder that embeds the input UPOS, and ``vector_rows`` long[B, N+1] for
  one with pretrained vectors: each word's row of the vectors, which the graph holds, looked up
  by the runtime from the word list in the checkpoint's config). Outputs: the graph parser's
  ``arc_scores`` float[B, N+1, N+1] (dependent-major, impossible heads at ``-inf``), or a
  transition parser's ``slots`` float[B, N+2, K, arc_mlp] (and a combined model's
  ``arc_scores``); ``label_dep`` and ``label_head`` float[B, N+1, rel_mlp]; the encoder
  ``states`` float[B, N+1, H] (with a ``tag_layer``, the top level's and that level's output
  side by side: :func:`exported_width`).
- ``tags.onnx`` (parsers with taggers): ``states`` and ``lengths`` to one ``<column>_scores``
  float[W, n_classes] per tagger, for the W words of the batch row by row, the taggers' own
  BiLSTM level included. Apart, because onnxruntime runs every node of a graph whatever
  outputs are asked for, and a parse that predicts no column needs no tagger (10% of the EWT
  model's time, and 9% more for the level of their own the EWT models' taggers have).
- ``labels.onnx``: the label vectors of W arcs' dependents and heads, ``label_dep`` and
  ``label_head`` float[W, rel_mlp] (gathered by the runtime from ``scores.onnx``'s, at the
  words alone), to ``label_scores`` float[W, R], as ``LabelScorer.at_words`` scores them.
- ``head_labels.onnx`` (graph parsers): the label vectors of W words as dependents,
  ``label_dep`` float[W, rel_mlp], and of K heads of each, ``label_head`` float[W, K, rel_mlp],
  to the label scores of those arcs, ``label_scores`` float[W, K, R], as
  ``LabelScorer.at_heads`` scores them: what decoding with ``joint_labels`` reads for the arcs
  a best tree may take (:func:`biaffine.inference.choices.decode_with_labels`).
- a transition parser's per-step scorer is no graph: ``export.json``'s ``transition_mlp``
  holds the layers after the slots (``TransitionParser.slot_mlp``, a few thousand numbers), and
  the runtime searches on them and the slots (:class:`transitions.SlotScorer`), one compiled
  loop for a greedy search where a graph would be called once per step.
- ``segmenter.onnx`` (with a segmenter): character ``ids`` long[W, T] and ``features``
  float[W, T, F] of W windows of T characters each, none padded, to ``log_probs``
  float[W, T, classes]; ``export.json`` adds its characters, multi-word token expander,
  sentence-end bias and window sizes (:class:`biaffine.segmenting.onnxrun.OnnxSegmenter`).

An ensemble (:mod:`biaffine.parsers.ensemble`) exports as one graph parser: the same graphs,
inputs and outputs, each joining its members' (their character vectors, label vectors and states
side by side; arcs, tags and labels the log of their mean probabilities), so that a runtime
reads it as it reads one parser.

The graphs are traced from the model's own modules (thin wrappers below only turn tensors into
the :class:`~biaffine.data.batching.Batch` they read and their results into tensors). Nothing
packs: the character BiLSTM runs its dense path
(:meth:`biaffine.nn.modules.CharEncoder.dense_rows`) and the biaffine products one chunk
(:func:`biaffine.nn.modules._in_chunks`) while exporting.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from biaffine import checkpoint as checkpoints
from biaffine import installed
from biaffine.cli import exit_on_termination, refuse_missing, report_user_errors
from biaffine.data.batching import Batch
from biaffine.files import checkpoint_digests, file_digest, fsync_dir, is_plain_name, umask_mode
from biaffine.nn import Encoder
from biaffine.parsers.ensemble import TAG_DTYPE, EnsembleParser, mean_log_softmax
from biaffine.parsers.heads import LabelScorer, LabelVectors
from biaffine.segmenting import checkpoint as segmenter_checkpoints
from biaffine.segmenting.features import DEFAULT_CONTEXT, DEFAULT_WINDOW, UNK
from biaffine.segmenting.model import SegmenterModel

__all__ = [
    "FORMAT",
    "MANIFEST",
    "OPSET",
    "Graph",
    "Labels",
    "Scores",
    "SegmenterScores",
    "Tags",
    "export",
    "exported_width",
    "graphs",
    "main",
    "parse_settings",
    "run",
]

OPSET = 17
"""ONNX opset of every graph. Each operator they use (LSTM, MatMul, Gather, GatherElements,
NonZero, Unique, Where, ...) exists since opset 11 or earlier; 17 is well within what the
``export`` extra's onnxruntime (1.20 or later) reads and what torch's TorchScript exporter (the
one that needs no ``onnxscript``) writes, up to 20; pinned, a file does not change with torch's
default."""

FORMAT = 5
"""Version of the folder's layout and of ``export.json`` (2: the character model in a graph of
its own, ``chars.onnx``; ``scores.onnx`` reads its vectors; 3: a transition parser's per-step
scorer as ``transition_mlp`` in ``export.json``, no ``transitions.onnx``; 4: a graph parser's
``arc_labels.onnx``, for decoding heads with their labels; 5: ``head_labels.onnx`` in its
place, the labels of the arcs a best tree may take, and the taggers' own BiLSTM level in
``tags.onnx``)."""

MANIFEST = "export.json"

SETTINGS = ("checkpoint", "model", "segmenter", "output", "int8")
USAGE = (
    "usage: python -m biaffine.export checkpoint=PATH [segmenter=PATH] output=FOLDER, or "
    "model=NAME output=FOLDER (an installed model, with its segmenter); int8=true: int8 weights"
)


@dataclass(frozen=True, slots=True)
class Graph:
    """One graph to export: a module on tensors, its named inputs and outputs, an example.

    Attributes:
        name: the file's stem (``scores``, ``tags``, ``transitions``, ``labels``).
        module: takes the inputs in order and returns the outputs in order.
        inputs: input names.
        outputs: output names.
        example: example inputs the graph is traced on.
        axes: the dynamic axes of each input and output, by name.
    """

    name: str
    module: nn.Module
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    example: tuple[torch.Tensor, ...]
    axes: dict[str, dict[int, str]]


class Scores(nn.Module):
    """The encoder and the heads read once per batch, on tensors: see ``scores.onnx`` above."""

    def __init__(self, model: nn.Module, inputs: tuple[str, ...]) -> None:
        """Wrap ``model`` (a graph or transition parser, in eval mode); it is not copied.

        ``inputs`` names the tensors :meth:`forward` takes, in order: ``words``,
        ``char_vectors``, ``lengths``, then ``upos`` and ``vector_rows`` where the encoder reads
        them.
        """
        super().__init__()
        self.model = model
        self.inputs = inputs
        transition = model.family == "transition"
        first = ["slots"] if transition else ["arc_scores"]
        if transition and model.graph is not None:
            first.append("arc_scores")
        self.outputs = (*first, "label_dep", "label_head", "states")

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The outputs named by ``self.outputs``, from the inputs named by ``self.inputs``."""
        named = dict(zip(self.inputs, tensors, strict=True))
        batch = _batch(named["words"], named["lengths"], named.get("upos"))
        encoder = self.model.encoder
        top, below = encoder.levels(batch, named.get("vector_rows"), named["char_vectors"])
        if self.model.family == "transition":
            encoded = self.model.encode_states(top, batch, tag=False)
            found = {"slots": encoded.slots, "arc_scores": encoded.arc_scores}
        else:
            encoded = self.model.score_states(top, batch, tag=False)
            found = {"arc_scores": encoded.arc_scores}
        found |= {"label_dep": encoded.labels.dep, "label_head": encoded.labels.head}
        found["states"] = top if below is None else torch.cat([top, below], -1)
        return tuple(found[name] for name in self.outputs)


class Chars(nn.Module):
    """The character model on distinct forms: see ``chars.onnx`` above."""

    def __init__(self, encoder: Encoder) -> None:
        """Wrap ``encoder``'s character model; it is not copied."""
        super().__init__()
        self.char_encoder = encoder.char_encoder

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """float[U, D] from long[U, C] (see ``CharEncoder.dense_rows``)."""
        return self.char_encoder.dense_rows(chars)


class Tags(nn.Module):
    """A parser's taggers on the encoder states, on tensors: see ``tags.onnx`` above."""

    def __init__(self, model: nn.Module) -> None:
        """Wrap ``model`` (a parser with taggers, in eval mode); it is not copied."""
        super().__init__()
        self.model = model
        self.outputs = tuple(f"{column}_scores" for column in model.tagged_columns)

    def forward(self, states: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """float[W, n_classes] per tagger, for the W words of the batch row by row.

        ``states`` are ``scores.onnx``'s (:func:`exported_width`): with a tag layer, the
        taggers' own BiLSTM level runs here on the level below, so that a parse of trees
        alone never runs it.
        """
        encoder = self.model.encoder
        if encoder.tag_layer is not None:
            top, below = states.split(encoder.n_out, -1)
            states = encoder.join(top, below, lengths)
        _, tag_states = self.model.split_states(states)
        scores = self.model.taggers(tag_states, _mask(lengths, states.shape[1]))
        return tuple(scores[name.removesuffix("_scores")] for name in self.outputs)


class Labels(nn.Module):
    """Label scores of given arcs, on tensors: see ``labels.onnx`` above."""

    def __init__(self, labels: LabelScorer) -> None:
        """Wrap a parser's label scorer; it is not copied."""
        super().__init__()
        self.labels = labels

    def forward(self, label_dep: torch.Tensor, label_head: torch.Tensor) -> torch.Tensor:
        """float[W, R] from the arcs' vectors float[W, rel_mlp] (``Biaffine.score_pairs``)."""
        return self.labels.attn.score_pairs(label_dep.unsqueeze(0), label_head.unsqueeze(0))[0]


class HeadLabels(nn.Module):
    """The label scores of K arcs into each of W words, on tensors: see ``head_labels.onnx``."""

    def __init__(self, model: nn.Module) -> None:
        """Wrap a graph parser or an ensemble (not copied).

        The parser, not its ``labels``: an ensemble's are no module of their own.
        """
        super().__init__()
        self.model = model

    def forward(self, label_dep: torch.Tensor, label_head: torch.Tensor) -> torch.Tensor:
        """label_scores float[W, K, R] from float[W, rel_mlp] and float[W, K, rel_mlp]."""
        return self.model.labels.at_heads(LabelVectors(label_dep, label_head))


class EnsembleChars(nn.Module):
    """An ensemble's character models on distinct forms: each member's vectors, joined."""

    def __init__(self, model: EnsembleParser) -> None:
        """Wrap the members' character models; they are not copied."""
        super().__init__()
        self.members = nn.ModuleList(Chars(member.encoder) for member in model.members)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """float[U, sum of D] from long[U, C]: the members' vectors side by side, in order."""
        return torch.cat([member(chars) for member in self.members], -1)


class EnsembleScores(nn.Module):
    """An ensemble's encoders and heads, on tensors: ``scores.onnx`` with the members' mean.

    Each member reads its own share of ``char_vectors`` (:class:`EnsembleChars`) and the same
    word ids (and ``vector_rows``: the members share their vectors' words); ``arc_scores`` are
    the log of the members' mean head probabilities (float64), ``label_dep``, ``label_head``
    and ``states`` the members' side by side, as :class:`EnsembleParser` holds them.
    """

    def __init__(
        self, model: EnsembleParser, inputs: tuple[str, ...], char_widths: list[int]
    ) -> None:
        """Wrap ``model`` (in eval mode); nothing is copied.

        ``char_widths`` are its members' character vectors' widths, in order.
        """
        super().__init__()
        self.model = model
        self.inputs = inputs
        self.char_widths = char_widths
        self.members = nn.ModuleList(Scores(member, inputs) for member in model.members)
        self.outputs = ("arc_scores", "label_dep", "label_head", "states")

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The outputs named by ``self.outputs``, from the inputs named by ``self.inputs``."""
        shares = tensors[self.inputs.index("char_vectors")].split(self.char_widths, -1)
        found = []
        for member, share in zip(self.members, shares, strict=True):
            named = zip(self.inputs, tensors, strict=True)
            own = [share if name == "char_vectors" else tensor for name, tensor in named]
            found.append(dict(zip(member.outputs, member(*own), strict=True)))
        vectors = [LabelVectors(f["label_dep"], f["label_head"]) for f in found]
        labels = self.model.labels.join(vectors)
        return (
            mean_log_softmax([f["arc_scores"] for f in found]),
            labels.dep,
            labels.head,
            torch.cat([f["states"] for f in found], -1),
        )


class EnsembleTags(nn.Module):
    """An ensemble's taggers, on its members' states side by side: the log of their mean."""

    def __init__(self, model: EnsembleParser, state_widths: list[int]) -> None:
        """Wrap the members' taggers, whose states are ``state_widths`` wide; not copied."""
        super().__init__()
        self.members = nn.ModuleList(Tags(member) for member in model.members)
        self.state_widths = state_widths
        self.outputs = self.members[0].outputs

    def forward(self, states: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """float32[W, n_classes] per tagger (:data:`TAG_DTYPE`), for the W words row by row."""
        shares = states.split(self.state_widths, -1)
        each = [tags(share, lengths) for tags, share in zip(self.members, shares, strict=True)]
        columns = zip(*each, strict=True)
        return tuple(mean_log_softmax(list(column), TAG_DTYPE) for column in columns)


class EnsembleLabels(nn.Module):
    """Label scores of given arcs under an ensemble: the log of its members' mean (float64)."""

    def __init__(self, model: EnsembleParser) -> None:
        """Wrap the members' label scorers; they are not copied."""
        super().__init__()
        self.model = model
        self.members = nn.ModuleList(Labels(member.labels) for member in model.members)

    def forward(self, label_dep: torch.Tensor, label_head: torch.Tensor) -> torch.Tensor:
        """float64[W, R] from the arcs' joined vectors float[W, sum of rel_mlp]."""
        shares = self.model.labels.split(LabelVectors(label_dep, label_head))
        each = [labels(v.dep, v.head) for labels, v in zip(self.members, shares, strict=True)]
        return mean_log_softmax(each)


class SegmenterScores(nn.Module):
    """A segmenter's class log-probabilities on windows without padding: ``segmenter.onnx``."""

    def __init__(self, model: SegmenterModel) -> None:
        """Wrap ``model`` (in eval mode); it is not copied."""
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """float[W, T, classes], as ``biaffine.segmenting.windows.log_probs`` computes them.

        The windows of one call have the same width, so the BiLSTM packs nothing.
        """
        return self.model(ids, features).log_softmax(-1)


def segmenter_graph(model: SegmenterModel) -> Graph:
    """The graph of a segmenter in eval mode, with example windows of 7 characters."""
    ids = torch.full((2, 7), UNK, dtype=torch.long)  # any id but PAD: no padding
    features = torch.zeros(2, 7, model.settings["n_features"])
    axes = {name: {0: "windows", 1: "characters"} for name in ("ids", "features", "log_probs")}
    scores = SegmenterScores(model)
    return Graph("segmenter", scores, ("ids", "features"), ("log_probs",), (ids, features), axes)


def _batch(words: torch.Tensor, lengths: torch.Tensor, upos: torch.Tensor | None) -> Batch:
    """The batch a parser reads when parsing; its gold fields stay empty (eval mode reads none).

    Its characters are empty: ``scores.onnx`` reads their vectors instead.
    """
    columns = {} if upos is None else {"upos": upos}
    empty = lengths.new_zeros(0)
    mask = _mask(lengths, words.shape[1])
    return Batch(words, empty, empty, empty, mask, lengths, empty, columns)


def _mask(lengths: torch.Tensor, total: int) -> torch.Tensor:
    """bool[B, total], True at the words 1..n of each row, as ``collate`` makes ``Batch.mask``."""
    positions = torch.arange(total, device=lengths.device)
    return (positions > 0) & (positions <= lengths.unsqueeze(1))


def graphs(model: nn.Module) -> list[Graph]:
    """The graphs of a parser in eval mode, with example inputs of two sentences of 3 and 5 words.

    An ensemble (:mod:`biaffine.parsers.ensemble`) exports as one graph parser: the same graphs,
    inputs and outputs, each joining its members' (:class:`EnsembleChars`,
    :class:`EnsembleScores`, :class:`EnsembleTags`, :class:`EnsembleLabels`), so that a runtime
    reads it as it reads one parser.

    Raises:
        ValueError: an encoder that reads a transformer, or pretrained vectors kept out of the
            checkpoint (:func:`check_exportable`), or ensemble members whose pretrained vectors
            differ in their words.
    """
    parsers = list(model.members) if model.kind == EnsembleParser.kind else [model]
    for parser in parsers:
        check_exportable(parser.encoder)
    _check_same_vector_words(parsers)
    encoder = parsers[0].encoder  # an ensemble's members read no input tags, and the same words
    lengths = torch.tensor([3, 5])
    words = torch.tensor([[2, 5, 6, 7, 0, 0], [2, 5, 6, 7, 8, 9]])
    chars = torch.zeros(2, 6, 4, dtype=torch.long)
    chars[:, 0, 0] = 2
    chars[0, 1:4, :2] = 5
    chars[1, 1:6, :3] = 6
    with torch.no_grad():
        char_vectors = torch.cat([p.encoder.char_encoder.dense(chars) for p in parsers], -1)
    example = (words, char_vectors, lengths)
    inputs = ("words", "char_vectors", "lengths")
    if encoder.use_tags:
        example, inputs = (*example, words.clamp(max=2)), (*inputs, "upos")
    if encoder.pretrained is not None:
        rows = (words - 2).clamp(0, len(encoder.pretrained.vectors) - 1)  # 0 at ROOT, padding
        example, inputs = (*example, rows), (*inputs, "vector_rows")
    chars_module, scores, tags, labels = _wrappers(model, parsers, inputs)
    with torch.no_grad():
        outputs = dict(zip(scores.outputs, scores(*example), strict=True))
    axes = {name: {0: "batch", 1: "positions"} for name in (*inputs, *scores.outputs)}
    axes["lengths"] = {0: "batch"}
    found = [
        _chars(chars_module, chars),
        Graph("scores", scores, inputs, scores.outputs, example, axes),
    ]
    if tags is not None:
        found.append(_tags(tags, outputs["states"], lengths))
    found.append(_labels(labels, outputs["label_dep"], outputs["label_head"]))
    if model.family == "graph":
        found.append(_head_labels(model, outputs["label_dep"], outputs["label_head"]))
    return found


def _wrappers(
    model: nn.Module, parsers: Sequence[nn.Module], inputs: tuple[str, ...]
) -> tuple[nn.Module, nn.Module, nn.Module | None, nn.Module]:
    """The modules traced into ``chars.onnx``, ``scores.onnx``, ``tags.onnx`` and ``labels.onnx``.

    One parser's, or an ensemble's joining its ``parsers``; no tagger module (None) without
    taggers.
    """
    if model.kind != EnsembleParser.kind:
        tags = Tags(model) if model.tagged_columns else None
        return Chars(model.encoder), Scores(model, inputs), tags, Labels(model.labels)
    char_widths = [p.encoder.char_encoder.n_out for p in parsers]
    state_widths = [exported_width(p.encoder) for p in parsers]
    tags = EnsembleTags(model, state_widths) if model.tagged_columns else None
    scores = EnsembleScores(model, inputs, char_widths)
    return EnsembleChars(model), scores, tags, EnsembleLabels(model)


def exported_width(encoder: Encoder) -> int:
    """Width of ``scores.onnx``'s ``states`` for one parser's encoder.

    The top level's states, and with a ``tag_layer`` the output of that level beside them
    (:meth:`Encoder.levels`): ``tags.onnx`` runs the taggers' own level on it.
    """
    return encoder.n_out * (1 if encoder.tag_layer is None else 2)


def _check_same_vector_words(parsers: Sequence[nn.Module]) -> None:
    """Refuse ensemble members whose pretrained vectors are of other words.

    The graph's one ``vector_rows`` input gives every member the same rows.
    """
    kept = [p.encoder.config().get("pretrained") for p in parsers]
    words = [(k["vocabulary"], k["lowercase"]) if k else None for k in kept]
    if any(other != words[0] for other in words[1:]):
        raise ValueError(
            "cannot export an ensemble whose members read pretrained vectors of different "
            "words (or some none): export one of its members, or parse with it in torch"
        )


def check_exportable(encoder: nn.Module) -> None:
    """Refuse an encoder no graph on ids can hold, in one line.

    Pretrained vectors export when the checkpoint keeps them: they become a constant of
    ``scores.onnx``, and the runtime looks the words' rows up from the checkpoint's word list
    (``vector_rows``). Vectors recorded by path only and transformers (a tokenizer reads the
    text) do not.

    Raises:
        ValueError: saying which and what to do.
    """
    if not isinstance(encoder, Encoder) or encoder.transformer is not None:
        raise ValueError(
            "cannot export a parser whose encoder reads word forms as text (a transformer); "
            "only the BiLSTM encoder on word and character ids, with or without pretrained "
            "vectors kept in the checkpoint, exports"
        )
    if encoder.pretrained is not None and not encoder.pretrained.kept:
        raise ValueError(
            "cannot export pretrained vectors kept out of the checkpoint (recorded by path "
            "only): train with model.encoder.pretrained.keep_in_checkpoint=true (and "
            "max_words=50000 or so: the vectors become part of the graph)"
        )


def _chars(module: nn.Module, chars: torch.Tensor) -> Graph:
    """``chars.onnx``, traced on the distinct forms of the example batch's characters.

    ``module`` is a :class:`Chars` or an :class:`EnsembleChars`.
    """
    rows = torch.unique(chars.reshape(-1, chars.shape[-1]), dim=0)
    axes = {"chars": {0: "forms", 1: "characters"}, "char_vectors": {0: "forms"}}
    return Graph("chars", module, ("chars",), ("char_vectors",), (rows,), axes)


def _tags(tags: Tags | EnsembleTags, states: torch.Tensor, lengths: torch.Tensor) -> Graph:
    axes = {"states": {0: "batch", 1: "positions"}, "lengths": {0: "batch"}}
    axes |= {name: {0: "words"} for name in tags.outputs}
    return Graph("tags", tags, ("states", "lengths"), tags.outputs, (states, lengths), axes)


def _labels(labels: Labels | EnsembleLabels, dep: torch.Tensor, head: torch.Tensor) -> Graph:
    """``labels.onnx``, traced on the arcs 2 -> 1, 0 -> 2 and 2 -> 3 of the example's first row."""
    arcs = (dep[0, 1:4], head[0, [2, 0, 2]])
    names = ("label_dep", "label_head", "label_scores")
    axes = {name: {0: "arcs"} for name in names}
    return Graph("labels", labels, names[:2], names[2:], arcs, axes)


def _head_labels(model: nn.Module, dep: torch.Tensor, head: torch.Tensor) -> Graph:
    """``head_labels.onnx``, traced on words 1 to 3 of the example's first row, two heads each."""
    names = ("label_dep", "label_head", "label_scores")
    axes = {
        "label_dep": {0: "words"},
        "label_head": {0: "words", 1: "heads"},
        "label_scores": {0: "words", 1: "heads"},
    }
    heads = torch.tensor([[0, 2], [0, 3], [2, 1]])
    example = (dep[0, 1:4], head[0][heads])
    return Graph("head_labels", HeadLabels(model), names[:2], names[2:], example, axes)


def export(
    model: nn.Module,
    folder: Path,
    *,
    about: Mapping[str, Any],
    segmenter: segmenter_checkpoints.Stored | None = None,
    int8: bool = False,
) -> dict[str, Any]:
    """Write the graphs of ``model`` (and ``segmenter``) and ``export.json`` into ``folder``.

    The model is exported in eval mode and left in the mode it was in.

    The folder is written beside its destination and renamed into place; an earlier export
    there (a folder holding an export's ``export.json`` and the graph files it names, nothing
    else) is replaced, anything else refused before any work.

    Args:
        model: a graph or transition parser.
        folder: the destination folder.
        about: plain data added to the manifest (the checkpoint's parser kind, config,
            vocabularies).
        segmenter: a segmenter checkpoint's contents, exported beside the parser for raw text.
        int8: store ``chars.onnx``, ``scores.onnx`` (the encoder and the heads on its
            states: nearly all the weights and time), ``labels.onnx`` and ``head_labels.onnx``
            with int8 weights, activations quantized on the fly (onnxruntime's dynamic
            quantization), as ``predict.py int8=true`` runs torch.

    Returns:
        The manifest written.

    Raises:
        ValueError: a destination that exists and is not an export folder, a model that
            cannot be exported (a segmenter with a sentence model among them), or no onnx
            package.
    """
    if segmenter is not None and segmenter.sentences is not None:
        raise ValueError(
            "the segmenter's sentence model reads a transformer, whose tokenizer no ONNX graph "
            "holds: export a segmenter without one (train_segmenter.py's best.pt)"
        )
    _check_destination(folder)
    _require_onnx()
    training = model.training
    try:
        return _write(model.eval(), folder, about, segmenter, int8)
    finally:
        # The exporter restores the mode of the wrapper it was given, on the model too.
        model.train(training)


def _require_onnx() -> None:
    """Refuse to export without the onnx package (optional), which torch writes ONNX files with."""
    try:
        importlib.import_module("onnx")
    except ImportError:
        raise ValueError(
            "the ONNX export needs the onnx package: pip install 'rootparse[export]'"
        ) from None


def _write(
    model: nn.Module,
    folder: Path,
    about: Mapping[str, Any],
    segmenter: segmenter_checkpoints.Stored | None,
    int8: bool,
) -> dict[str, Any]:
    staging = _staging(folder)  # before the tracing: a place that takes no files fails at once
    try:
        manifest = _write_graphs(model, staging, about, segmenter, int8)
        _replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _staging(folder: Path) -> Path:
    """A new hidden folder beside ``folder``, where the export is written before it is renamed.

    Raises:
        ValueError: no folder can be made there (``/proc``: the error named the hidden
            folder, once every graph had been traced).
    """
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError as error:
        raise ValueError(f"output={folder}: cannot write there ({error.strerror})") from None
    # mkdtemp's folder is private (0o700); the export is a folder like any other.
    staging.chmod(umask_mode() | (umask_mode() & 0o444) >> 2)
    return staging


def _write_graphs(
    model: nn.Module,
    staging: Path,
    about: Mapping[str, Any],
    segmenter: segmenter_checkpoints.Stored | None,
    int8: bool,
) -> dict[str, Any]:
    """Trace ``model`` (and ``segmenter``) into ``staging`` with the manifest; returns it."""
    found = graphs(model)
    manifest = {"format": FORMAT, "opset": OPSET, "family": model.family, **about}
    quantized = ("chars", "scores", "labels", "head_labels")
    manifest["int8"] = [g.name for g in found if g.name in quantized] if int8 else []
    if model.family == "transition":
        manifest["transition_mlp"] = {
            name: value.tolist() if isinstance(value, np.ndarray) else value
            for name, value in model.slot_mlp().items()
        }
    if segmenter is not None:
        found.append(segmenter_graph(segmenter.model.eval()))
        manifest["segmenter"] = _segmenter_manifest(segmenter)
    manifest["graphs"] = {
        g.name: {"file": f"{g.name}.onnx", "inputs": list(g.inputs), "outputs": list(g.outputs)}
        for g in found
    }
    for graph in found:
        _export_graph(graph, staging / f"{graph.name}.onnx")
    for name in manifest["int8"]:
        _quantize(staging / f"{name}.onnx")
    for name, graph in manifest["graphs"].items():  # ties the manifest to these very graphs
        graph["sha256"] = file_digest(staging / f"{name}.onnx")
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _quantize(path: Path) -> None:
    """Rewrite the graph at ``path`` with int8 weights (onnxruntime's dynamic quantization).

    The graph is first folded (onnxruntime's ``quant_pre_process``): a weight the traced graph
    reshapes or transposes (the label biaffine's, flattened for its outer product) reaches its
    MatMul as a constant only then, and only a constant weight is quantized.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic  # the export extra
    from onnxruntime.quantization.shape_inference import quant_pre_process

    folded, quantized = path.with_suffix(".folded.onnx"), path.with_suffix(".int8.onnx")
    with warnings.catch_warnings(), _quiet_root_logger():
        quant_pre_process(path, folded, skip_symbolic_shape=True)
        quantize_dynamic(folded, quantized, weight_type=QuantType.QInt8)
    folded.unlink()
    quantized.replace(path)


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """The quantizer logs a pre-processing hint on the root logger for every graph: not ours."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _segmenter_manifest(stored: segmenter_checkpoints.Stored) -> dict[str, Any]:
    """What the ONNX segmenter reads besides its graph, as plain data."""
    return {
        "treebank": stored.treebank,
        "chars": list(stored.vocab.chars),
        "spaced_words": stored.vocab.spaced_words,
        "cased_words": stored.vocab.cased_words,
        "mwt": None if stored.mwt is None else stored.mwt.to_data(),
        "sentence_bias": stored.model.config()["sentence_bias"],
        "window": DEFAULT_WINDOW,
        "context": DEFAULT_CONTEXT,
    }


def _export_graph(graph: Graph, path: Path) -> None:
    with torch.no_grad(), warnings.catch_warnings():
        # What the tracer warns of is fixed per model (feature sizes read as Python ints), and
        # the LSTMs' initial states are zeros of the input's batch, not of the example's.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", "Exporting a model to ONNX with a batch_size")
        warnings.filterwarnings("ignore", "You are using the legacy TorchScript-based ONNX")
        warnings.filterwarnings("ignore", "The feature will be removed", DeprecationWarning)
        torch.onnx.export(
            graph.module,
            graph.example,
            str(path),
            dynamo=False,  # the dynamo exporter needs onnxscript; this one has dynamic_axes
            opset_version=OPSET,
            input_names=list(graph.inputs),
            output_names=list(graph.outputs),
            dynamic_axes=graph.axes,
        )


def _check_destination(folder: Path) -> None:
    """Refuse a destination that exists and is not an earlier export, which would be replaced.

    An earlier export is a folder whose ``export.json`` is an export's manifest and that holds
    nothing but it and the graph files it names: replacing any other folder loses a user's files.

    Raises:
        ValueError: ``folder`` exists and is not an earlier export, or lies under a file (one
            line saying why).
    """
    if not (folder.exists() or folder.is_symlink()):
        _check_parents(folder)
        return
    problem = _not_an_export(folder)
    if problem is not None:
        raise ValueError(
            f"output={folder}: exists and is not an export folder ({problem}): "
            "give a new folder or an earlier export's"
        )


def _check_parents(folder: Path) -> None:
    """Refuse a new ``folder`` under a file, before the checkpoint is read and traced.

    Without this, the export failed only once every graph was built, on ``mkdir``'s bare
    "File exists" naming the file, not ``output=``.

    Raises:
        ValueError: the nearest existing folder above ``folder`` is a file.
    """
    above = next((p for p in folder.absolute().parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise ValueError(f"output={folder}: {above} is not a folder, so nothing can go under it")


def _not_an_export(folder: Path) -> str | None:
    """Why ``folder`` is not an earlier export (a short phrase), or None if it is one."""
    if folder.is_symlink() or not folder.is_dir():
        return "not a folder"
    path = folder / MANIFEST
    if path.is_symlink() or not path.is_file():
        return f"no {MANIFEST}"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return f"{MANIFEST} is not an export's manifest"
    files = _graph_files(manifest)
    if files is None:
        return f"{MANIFEST} is not an export's manifest"
    for entry in sorted(folder.iterdir()):
        if entry.name not in files | {MANIFEST}:
            return f"it holds {entry.name}, which no export writes"
        if entry.is_symlink() or not entry.is_file():
            return f"{entry.name} is not a plain file"
    return None


def _graph_files(manifest: Any) -> set[str] | None:
    """The graph files an export's manifest names, or None if it is no export's manifest."""
    if not isinstance(manifest, dict) or not {"format", "opset", "family"} <= manifest.keys():
        return None
    graphs = manifest.get("graphs")
    if not isinstance(graphs, dict):
        return None
    files = {graph.get("file") if isinstance(graph, dict) else None for graph in graphs.values()}
    return files if all(is_plain_name(f, ".onnx") for f in files) else None


def _replace(staging: Path, folder: Path) -> None:
    """Rename ``staging`` to ``folder``; an old export there is moved aside first, then removed.

    Raises:
        ValueError: ``folder``, moved aside, is no export now (the graphs take seconds to
            write: a folder made there meanwhile, or a file added to the old export, was
            removed with it); it is put back as it was.
        OSError: the old export cannot be moved aside (an immutable folder), naming
            ``output=``; nothing is left beside it.
    """
    old = None
    if folder.exists() or folder.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old.", dir=folder.parent))
        try:
            folder.rename(old / "export")
        except OSError as error:  # it said "FOLDER: Operation not permitted", left .NAME.old.X/
            old.rmdir()
            reason = error.strerror or type(error).__name__
            replaced = f"the earlier export there cannot be replaced ({reason})"
            raise OSError(error.errno, replaced, f"output={folder}") from None
        problem = _not_an_export(old / "export")
        if problem is not None:
            (old / "export").rename(folder)
            old.rmdir()
            raise ValueError(
                f"output={folder}: came to be no export folder while the graphs were written "
                f"({problem}); left as it is: give a new folder"
            )
    staging.rename(folder)
    fsync_dir(folder.parent)
    if old is not None:
        shutil.rmtree(old)


def parse_settings(argv: Sequence[str]) -> dict[str, str]:
    """``key=value`` arguments as a dict, each of :data:`SETTINGS` given once.

    ``output`` is required, and one of ``checkpoint`` and ``model``; ``segmenter`` is optional.

    Raises:
        ValueError: an argument that is not ``key=value``, an unknown or repeated key, an empty
            value, a missing setting, or both or neither of ``checkpoint`` and ``model``.
    """
    settings: dict[str, str] = {}
    for argument in argv:
        key, equals, value = argument.partition("=")
        if not equals:
            raise ValueError(f"{argument!r} is not key=value ({USAGE})")
        if key not in SETTINGS:
            raise ValueError(f"unknown setting {key!r}; known: {', '.join(SETTINGS)}")
        if key in settings:
            raise ValueError(f"{key}= is given twice")
        if not value:
            raise ValueError(f"{key}= has no value")
        settings[key] = value
    if settings.get("int8", "false") not in ("true", "false"):
        raise ValueError(f"int8={settings['int8']}: give true or false")
    if ("checkpoint" in settings) == ("model" in settings):
        given = "both" if "model" in settings else "neither"
        raise ValueError(f"{given} of checkpoint= and model= given ({USAGE})")
    refuse_missing(["output"] if "output" not in settings else [])
    return settings


def run(settings: Mapping[str, str]) -> dict[str, Any]:
    """Load the checkpoint (and segmenter) and export them; returns the manifest written.

    Raises:
        biaffine.installed.UnknownModelError: ``model=`` names no installed model.
    """
    folder = Path(os.path.abspath(settings["output"]))  # "." has no name, and no parent
    if Path.cwd() == folder or folder in Path.cwd().parents:
        raise ValueError(f"output={settings['output']}: it holds this command's working folder")
    _check_destination(folder)  # before the checkpoints are read
    checkpoint, segmenter = settings.get("checkpoint"), settings.get("segmenter")
    if "model" in settings:
        installed_model = installed.require(settings["model"])
        checkpoint = str(installed_model.parser)
        segmenter = segmenter or installed_model.segmenter
    loaded = checkpoints.load(checkpoint)
    model = checkpoints.build_model(loaded)
    about = {
        "parser": loaded.parser,
        "model_config": loaded.model_config,
        "vocabs": loaded.vocabs.to_dict(),
        "source": checkpoint_digests(checkpoint, segmenter),  # serve.py runtime=onnx checks it
    }
    stored = None if segmenter is None else segmenter_checkpoints.load(segmenter)
    int8 = settings.get("int8") == "true"
    return export(model, folder, about=about, segmenter=stored, int8=int8)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line; a user error is one line on stderr and exit status 2."""
    argv = sys.argv[1:] if argv is None else argv
    if any(argument in ("-h", "--help") for argument in argv):
        print(USAGE)
        return
    settings = report_user_errors(lambda: parse_settings(argv))
    exit_on_termination()  # a kill ends as Ctrl-C does: the staging folder is removed
    manifest = report_user_errors(lambda: run(settings))
    files = ", ".join(graph["file"] for graph in manifest["graphs"].values())
    print(f"wrote {settings['output']}: {files}, {MANIFEST} (opset {OPSET})")
    compile_decoders()


def compile_decoders() -> None:
    """Compile the decoders ahead of time (:mod:`decoding.aot`) if this machine lacks them.

    ``runtime=onnx`` then parses a graph parser without importing numba (about 130 MiB less).
    The export stands without them: a failure (no C compiler, say) is reported, not raised.
    """
    from decoding import aot

    if aot.path().is_file():
        return
    try:
        built = aot.build()
    except Exception as error:  # distutils' compile and link errors are plain Exceptions
        print(f"decoders not compiled ahead of time ({error}): runtime=onnx imports numba")
        return
    print(f"compiled the decoders ahead of time: {built}")


if __name__ == "__main__":
    main()
