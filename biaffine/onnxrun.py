"""Parsing with an exported graph parser in ONNX Runtime, without torch (``runtime=onnx``).

``OnnxParser.load(folder).parse([["The", "cat", "sat", "."]])`` reads a folder written by
``python -m biaffine.export`` (:mod:`biaffine.export`, docs/onnx.md) and parses with its graphs
in onnxruntime, the :mod:`decoding` decoders and the choices the torch path makes
(:mod:`biaffine.inference.choices`: the same code on the same scores), so that its CoNLL-U is
the torch path's. ``predict.py runtime=onnx onnx=FOLDER`` calls :func:`predict_file`.

Nothing here imports torch (``tests/biaffine/test_onnxrun.py`` runs it where ``import torch``
fails): batches are :func:`biaffine.data.encoding.pad`'s numpy arrays, fed to the graphs as
they are. It answers the plain request: one tree per sentence and the predicted columns; graph
parsers decode with ``mst`` and one word on ROOT, transition parsers search with the
:mod:`transitions` systems (greedy, or a beam, with a combined model's graph weight) on
``scores.onnx``'s slots and the transition MLP that ``export.json`` holds
(:class:`transitions.SlotScorer`, as the torch path does). The rest is refused in one line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from biaffine.installed import MissingRequirementError

try:
    import onnxruntime
except ImportError:  # the export extra's: predict.py and serve.py then fail in one line
    raise MissingRequirementError(
        "runtime=onnx needs onnxruntime: pip install 'rootparse[export]'"
    ) from None

from biaffine.cli import check_threads, stop_if_terminated
from biaffine.data.columns import LOSS_WEIGHTS
from biaffine.data.conllu import Sentence
from biaffine.data.encoding import (
    PARSING_COLUMNS,
    Padded,
    VectorIndex,
    encode,
    pad,
    plan_batches,
)
from biaffine.data.vocab import Vocabs
from biaffine.files import checkpoint_digests, file_digest, is_plain_name
from biaffine.inference.choices import (
    MST,
    best_head_labels,
    decode_arc_scores,
    decode_with_labels,
    deprojectivize_batch,
    find_trees,
    labelled_tree,
    missing_taggers,
    predicted_columns,
    root_label_id,
    word_label_ids,
)
from biaffine.inference.request import Refused, Request, SentenceResult, check_wanted
from biaffine.inference.settings import DEFAULT_DECODER, DecoderSettings, TransitionSearch
from biaffine.inputs import asked_columns, check_flags, input_sentences
from biaffine.onnx_chars import CharVectors
from biaffine.pipeline import read_raw
from biaffine.predict_options import (
    STDIO,
    InputSentences,
    PredictOptions,
    check_arguments,
    next_chunk,
    read_sentences,
    request_of,
    write_sentences,
)
from biaffine.results import ParsedTree, parsed_trees, with_result
from biaffine.segmenting.onnxrun import OnnxSegmenter

# A graph parser decodes without numba where decoding.aot's build is there: transitions (numba
# kernels) is imported for a transition parser's search only.
if TYPE_CHECKING:
    import transitions

__all__ = [
    "FORMATS",
    "MAX_TOKENS",
    "SUPPORTED",
    "OnnxParser",
    "Searcher",
    "check_exported_from",
    "check_supported",
    "predict_file",
]

MANIFEST = "export.json"  # biaffine.export.MANIFEST, which imports torch
FORMAT = 5  # biaffine.export.FORMAT: the folder layout read here

FORMATS = ("conllu", "text", "raw")
"""Input formats of :func:`predict_file` (``raw``: an export with a segmenter)."""

SUPPORTED = (
    "runtime=onnx supports graph parsers with decoder=mst and the root constraint, transition "
    "parsers with search=greedy or beam (and a combined model's graph_weight), format=conllu, "
    "text or raw (an export with a segmenter), columns= and overwrite_columns="
)
"""What every refusal of this module ends with."""

MAX_TOKENS = 500
"""Words per batch by default: smaller than torch's 5000, since ONNX Runtime parses small batches
as fast and keeps less memory for them (EWT test, ``predict.py runtime=onnx threads=2`` on the
2-core AMD EPYC, fp32 export: 2.37 s and 332 MiB at 500, 2.40 s and 374 MiB at 1,000, 2.64 s
and 403 MiB at 5,000; the int8 export 1.90 s and 317 MiB at 500 against 2.05 s and 392 MiB).
The fp32 graphs give the same bytes at any batch size; int8 graphs quantize each batch's
activations with a scale of their own, so their choices may differ by batch size."""

ARRAYS = ("bias", "weight", "out_bias")
"""The arrays of ``export.json``'s ``transition_mlp`` (its ``leak`` is a number)."""

LABEL_PAIRS = 256
"""Arcs per run of ``labels.onnx``. Its biaffine product makes an intermediate of about 10,000
floats per arc (the eager path makes it in cache-sized chunks, a graph in one): 256 arcs keep
it near 10 MB."""


HEAD_LABEL_WORDS = 256
"""Words per run of ``head_labels.onnx``, whose biaffine product makes an intermediate of
about 10,000 floats per word, as ``labels.onnx``'s per arc (:data:`LABEL_PAIRS`)."""


@dataclass(frozen=True, slots=True)
class Searcher:
    """What a transition parser's search reads besides its scores (from ``export.json``).

    Attributes:
        system: the transition system, with the checkpoint's options.
        n_stack: stack words read per configuration.
        n_buffer: buffer words read per configuration.
        global_scores: trained with the beam: a search ranks paths by raw score sums.
        graph_head: ``scores.onnx`` gives a combined model's ``arc_scores``.
        slot_mlp: the transition MLP after the slots (``TransitionParser.slot_mlp``):
            ``bias``, ``weight``, ``out_bias`` as float32 arrays and ``leak``.
    """

    system: transitions.TransitionSystem
    n_stack: int
    n_buffer: int
    global_scores: bool
    graph_head: bool
    slot_mlp: dict[str, Any]

    @classmethod
    def of(cls, manifest: dict[str, Any]) -> Searcher:
        """The search of an exported transition parser."""
        import transitions

        config = manifest["model_config"]
        system = transitions.get_system(
            config["system"],
            attach_leftovers=config.get("attach_leftovers"),
            swap_oracle=config.get("swap_oracle"),
        )
        # Checkpoints written before beam training lack beam_loss: the local loss.
        trained_with_beam = (config.get("beam_loss") or {}).get("size", 0) > 0
        graph_head = "arc_scores" in manifest["graphs"]["scores"]["outputs"]
        layers = manifest["transition_mlp"]
        slot_mlp = {name: np.asarray(layers[name], dtype=np.float32) for name in ARRAYS}
        slot_mlp["leak"] = layers["leak"]
        return cls(
            system, config["n_stack"], config["n_buffer"], trained_with_beam, graph_head, slot_mlp
        )

    def heads(
        self, scores: dict[str, np.ndarray], lengths: np.ndarray, settings: TransitionSearch
    ) -> np.ndarray:
        """int64[B, N+1]: the search's trees on ``scores.onnx``'s ``slots`` (and arc scores).

        As :func:`biaffine.inference.transition.search` on the same scores.
        """
        import transitions

        score = transitions.SlotScorer.of(scores["slots"], **self.slot_mlp)
        arc_scores = scores["arc_scores"] if settings.graph_weight > 0 else None
        found = find_trees(
            self.system,
            lengths,
            score,
            settings,
            n_stack=self.n_stack,
            n_buffer=self.n_buffer,
            global_scores=self.global_scores,
            arc_scores=arc_scores,
        )
        return found.heads


@dataclass(frozen=True, slots=True)
class OnnxParser:
    """An exported parser in onnxruntime: its sessions and vocabularies.

    Attributes:
        vocabs: the checkpoint's vocabularies (``export.json``).
        tagged_columns: the columns its taggers predict (``tags.onnx``), in order.
        sessions: ``chars``, ``scores``, ``labels``, a graph parser's ``head_labels``, and
            with taggers ``tags``.
        upos_input: the encoder embeds the input's UPOS (``scores.onnx`` reads ``upos``).
        char_vectors: the character model's vectors of the forms seen (``chars.onnx``), which
            ``scores.onnx`` reads.
        vectors: the rows of the pretrained vectors ``scores.onnx`` holds, by word form
            (it reads ``vector_rows``), or None without them.
        searcher: a transition parser's search; None for a graph parser.
        segmenter: the export's segmenter for raw text, or None without one.
        workers: threads the training lexicon's character models read on (as many as the
            sessions run).
    """

    vocabs: Vocabs
    tagged_columns: tuple[str, ...]
    sessions: dict[str, LoadedGraph]
    upos_input: bool
    char_vectors: CharVectors
    vectors: VectorIndex | None = None
    searcher: Searcher | None = None
    segmenter: OnnxSegmenter | None = None
    workers: int = 1

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, threads: int | None = None) -> OnnxParser:
        """Open an export folder.

        Args:
            folder: written by ``python -m biaffine.export``.
            threads: onnxruntime's intra-op threads, at least 1 (None: its default, one per core).

        Raises:
            ValueError: ``threads`` that is not a positive int, no export there, another format,
            an unknown parser family, or a damaged export (a manifest that is not JSON or lacks
            keys, a missing or unreadable graph file): the message names the file.
        """
        check_threads(threads, default="onnxruntime's")
        path = Path(folder)
        manifest = _manifest(path)
        family = manifest.get("family")
        if family not in ("graph", "transition"):
            raise ValueError(f"onnx={folder}: an export of a {family} parser; {SUPPORTED}")
        graphs = manifest["graphs"]
        try:  # the manifest's contents: a damaged one is the file's fault, named
            sessions = {
                name: _session(path, graph, threads)
                for name, graph in graphs.items()
                if name in ("chars", "scores", "tags", "labels", "head_labels")
            }
            outputs = graphs.get("tags", {}).get("outputs", ())
            tagged = tuple(o.removesuffix("_scores") for o in outputs)
            vocabs = Vocabs.from_dict(manifest["vocabs"])
            searcher = Searcher.of(manifest) if family == "transition" else None
            segmenter = None
            if "segmenter" in manifest:
                session = _session(path, graphs["segmenter"], threads)
                segmenter = OnnxSegmenter(session, manifest["segmenter"])
            upos_input = "upos" in graphs["scores"]["inputs"]
            reads_vectors = "vector_rows" in graphs["scores"]["inputs"]
            vectors = _vector_index(manifest) if reads_vectors else None
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as error:
            if isinstance(error, ValueError) and str(path) in str(error):
                raise  # a graph file's problem, named already
            problem = f"damaged ({type(error).__name__}: {error})"
            raise ValueError(f"{path / MANIFEST}: {problem}: {_EXPORT_AGAIN}") from None
        char_vectors = CharVectors(sessions["chars"], vocabs.chars)
        workers = threads or os.cpu_count() or 1  # onnxruntime's default: one per core
        return cls(
            vocabs,
            tagged,
            sessions,
            upos_input,
            char_vectors,
            vectors,
            searcher,
            segmenter,
            workers,
        )

    def parse(
        self,
        inputs: Iterable[Sequence[str] | Sentence] | str,
        *,
        search: str = "greedy",
        beam_size: int = 1,
        graph_weight: float = 0.0,
        joint_labels: bool = True,
        columns: Sequence[str] | None = (),
        overwrite: bool = False,
        max_tokens: int = MAX_TOKENS,
    ) -> list[ParsedTree]:
        """Parse pre-tokenized sentences (lists of words, or :class:`Sentence` objects).

        As :meth:`biaffine.api.Parser.parse` with its default decoder (graph parsers) or the
        search asked (transition parsers), which reads and refuses the same inputs.

        Args:
            inputs: the sentences, or CoNLL-U text (one string).
            search: transition parsers: ``greedy`` or ``beam``.
            beam_size: items per sentence with ``search="beam"``.
            graph_weight: combined models: weight of the graph head's arc log-probabilities.
            joint_labels: graph parsers decode the best labelled tree (False: the best
                unlabelled tree, labelled afterwards), as :meth:`biaffine.api.Parser.parse`.
            columns: tagged columns to predict (or ``["all"]``: every column the model tags;
                None: none).
            overwrite: write them over the input's values (default: only ``_`` cells).
            max_tokens: words per batch.

        Raises:
            Refused: a search this parser does not run, a column it has no tagger for.
            ValueError: a string given as one sentence, or a string of no CoNLL-U.
            TypeError: inputs or a sentence that is no ordered sequence (a dict, None, an
                int), ``columns`` as one string, a yes/no option that is not a bool.
            biaffine.data.conllu.ConlluError: a sentence CoNLL-U cannot hold (no words, a form
                with a tab), named ``<input>:k`` for the k-th list of words.
        """
        check_flags(joint_labels=joint_labels, overwrite=overwrite)
        columns = asked_columns(columns, overwrite=overwrite)
        sentences = list(input_sentences(inputs))
        decoder = DecoderSettings(
            search=search,
            beam_size=beam_size,
            graph_weight=graph_weight,
            joint_labels=joint_labels,
        )
        request = Request(columns=tuple(columns), overwrite=overwrite)
        found = self.results(sentences, request, decoder, max_tokens=max_tokens)
        return [parsed_trees(s, r, request)[0] for s, r in zip(sentences, found, strict=True)]

    def check(self, request: Request, decoder: DecoderSettings = DEFAULT_DECODER) -> Request:
        """``request`` with ``columns=("all",)`` resolved, or :class:`Refused` in one line."""
        searcher = self.searcher
        check_supported(request, decoder, "graph" if searcher is None else "transition")
        if searcher is not None and decoder.graph_weight > 0 and not searcher.graph_head:
            raise Refused(
                f"graph_weight={decoder.graph_weight} needs a combined model's export "
                "(model=combined); this transition parser has no graph head"
            )
        request = request.for_model(self.tagged_columns)
        reason = missing_taggers(request.columns, self.tagged_columns)
        if reason is not None:
            raise Refused(reason)
        return request

    def results(
        self,
        sentences: Sequence[Sentence],
        request: Request,
        decoder: DecoderSettings = DEFAULT_DECODER,
        *,
        max_tokens: int = MAX_TOKENS,
        abandoned: Callable[[], bool] | None = None,
    ) -> list[SentenceResult]:
        """One result per sentence, in input order (see :meth:`check` for what is refused).

        ``abandoned``: asked before each batch whether the answer is still wanted (a
        server's); :class:`~biaffine.inference.request.Abandoned` where it is not.
        """
        request = self.check(request, decoder)
        encoded = encode(sentences, self.vocabs, columns=PARSING_COLUMNS, with_chars=False)
        found: list[SentenceResult | None] = [None] * len(sentences)
        plan = plan_batches([len(e) for e in encoded], max_tokens, shuffle=False)
        for index in plan:
            check_wanted(abandoned)
            padded = pad([encoded[i] for i in index], index)
            rows = index.tolist()
            batch = [sentences[i] for i in rows]
            for row, result in zip(rows, self._batch(padded, batch, request, decoder), strict=True):
                found[row] = result
        return found  # type: ignore[return-value]  (every row is filled once)

    def _batch(
        self,
        padded: Padded,
        sentences: list[Sentence],
        request: Request,
        decoder: DecoderSettings,
    ) -> list[SentenceResult]:
        positions = padded.words.shape[1]
        feed = {
            "words": padded.words,
            "char_vectors": self.char_vectors.of(padded.forms, positions),
            "lengths": padded.lengths,
        }
        if self.upos_input:
            feed["upos"] = padded.columns["upos"]
        if self.vectors is not None:
            feed["vector_rows"] = self.vectors.lookup(padded.forms, positions)
        settings = decoder.transition_search()
        searcher = self.searcher
        names = ["arc_scores"] if searcher is None else ["slots"]
        if searcher is not None and settings.graph_weight > 0:
            names.append("arc_scores")
        names += ["label_dep", "label_head"]
        if request.columns:
            names.append("states")
        scores = dict(zip(names, self.sessions["scores"].run(names, feed), strict=True))
        joint = searcher is None and decoder.joint_labels
        if joint:
            label = self._head_labels(scores["label_dep"], scores["label_head"])
            heads, rels = decode_with_labels(scores["arc_scores"], padded.lengths, MST, label)
        else:
            if searcher is None:
                heads = decode_arc_scores(scores["arc_scores"], padded.lengths, MST)
            else:
                heads = searcher.heads(scores, padded.lengths, settings)
            label_scores = self._label_scores(scores["label_dep"], scores["label_head"], heads)
            rels = word_label_ids(label_scores, heads, root_label=root_label_id(self.vocabs.rels))
        if searcher is not None and searcher.system.projective:
            deprojectivize_batch(heads, rels, self.vocabs.rels.itos)
        lengths = padded.lengths.tolist()
        trees = [
            labelled_tree(heads, rels, row, n, self.vocabs.rels) for row, n in enumerate(lengths)
        ]
        columns: list[dict[str, list[str]]] = [{} for _ in sentences]
        if request.columns:
            tags = self.sessions["tags"]
            outputs = tags.outputs
            tagged = tags.run(outputs, {"states": scores["states"], "lengths": padded.lengths})
            by_column = {o.removesuffix("_scores"): s for o, s in zip(outputs, tagged, strict=True)}
            relations = [tree.rels for tree in trees]
            columns = predicted_columns(
                by_column, request.columns, self.vocabs, sentences, self.workers, relations
            )
        return [SentenceResult([tree], c) for tree, c in zip(trees, columns, strict=True)]

    def _head_labels(
        self, dep: np.ndarray, head: np.ndarray
    ) -> Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """What :func:`decode_with_labels` calls for the labels of a batch's arcs.

        ``head_labels.onnx`` on :data:`HEAD_LABEL_WORDS` words at a time, as
        ``LabelScorer.at_heads`` scores them in torch.

        Args:
            dep: ``scores.onnx``'s label vectors of the words as dependents,
                float[B, N+1, rel_mlp].
            head: the same as heads.
        """
        root = root_label_id(self.vocabs.rels)
        session = self.sessions["head_labels"]

        def head_labels(
            rows: np.ndarray, dependents: np.ndarray, heads: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray]:
            dep_vectors = dep[rows, dependents]  # [W, rel_mlp]
            head_vectors = head[rows[:, None], heads]  # [W, K, rel_mlp]
            parts = []
            for start in range(0, len(rows), HEAD_LABEL_WORDS):
                words = slice(start, start + HEAD_LABEL_WORDS)
                feed = {"label_dep": dep_vectors[words], "label_head": head_vectors[words]}
                parts.append(session.run(None, feed)[0])
            return best_head_labels(np.concatenate(parts), heads, root_label=root)

        return head_labels

    def _label_scores(self, dep: np.ndarray, head: np.ndarray, heads: np.ndarray) -> np.ndarray:
        """float[W, R]: the label scores of the W words' arcs ``heads[b, d] -> d``, row by row.

        As ``LabelScorer.at_words``: no ROOT, padding or headless word (about 38% more arcs
        on EWT test's batches), ``labels.onnx`` on :data:`LABEL_PAIRS` arcs at a time.

        Args:
            dep: ``scores.onnx``'s label vectors of the words as dependents,
                float[B, N+1, rel_mlp].
            head: the same as heads.
            heads: int64[B, N+1] chosen heads, -1 at ROOT and padding.
        """
        rows, dependents = np.nonzero(heads >= 0)
        dep_vectors = dep[rows, dependents]  # [W, rel_mlp]
        head_vectors = head[rows, heads[rows, dependents]]  # [W, rel_mlp]
        parts = []
        for start in range(0, len(rows), LABEL_PAIRS):
            arcs = slice(start, start + LABEL_PAIRS)
            feed = {"label_dep": dep_vectors[arcs], "label_head": head_vectors[arcs]}
            parts.append(self.sessions["labels"].run(None, feed)[0])
        return np.concatenate(parts)


def check_exported_from(
    folder: str | os.PathLike[str], parser: Path, segmenter: Path | None, name: str
) -> None:
    """Refuse an export that was not made from the checkpoints ``parser`` and ``segmenter``.

    A server serves ``onnx_dir/NAME`` as model NAME, with NAME's treebank and licence: another
    model's export there (or one of an older NAME) was served in silence.

    Args:
        folder: the export.
        parser: the parser checkpoint it must be made from.
        segmenter: the segmenter checkpoint it must be made from, or None (none exported).
        name: the model's name, for the message.

    Raises:
        ValueError: no export in ``folder``, or one that records other checkpoints, or none
            (an export made before exports recorded them): one line, naming the folder and
            the fix.
    """
    path = Path(folder)
    export = f"python -m biaffine.export model={name} output={path}"
    if not (path / MANIFEST).is_file():  # the server's setting is onnx_dir=, not predict.py's onnx=
        problem = f"no export of model {name} ({path / MANIFEST} is missing)"
        raise ValueError(f"onnx_dir={path.parent}: {problem}: write it with {export}")
    source = _manifest(path).get("source")
    again = f"export it again ({export})"
    if not isinstance(source, dict):
        raise ValueError(f"{path}: its export records no checkpoint to check: {again}")
    for key, value in checkpoint_digests(parser, segmenter).items():
        if source.get(key) != value:
            what = key.removesuffix("_sha256")
            raise ValueError(f"{path}: not an export of model {name}'s {what}: {again}")


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise ValueError(
            f"onnx={folder}: no {MANIFEST} there (write one with python -m biaffine.export "
            "checkpoint=PATH output=FOLDER)"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not an export's manifest ({error}): {_EXPORT_AGAIN}") from None
    except RecursionError:  # json nests one Python call per level
        problem = f"not an export's manifest (nested too deeply): {_EXPORT_AGAIN}"
        raise ValueError(f"{path}: {problem}") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: not an export's manifest (not a JSON object): {_EXPORT_AGAIN}")
    if manifest.get("format") != FORMAT:
        raise ValueError(
            f"{path}: export format {manifest.get('format')!r}, expected {FORMAT}: {_EXPORT_AGAIN}"
        )
    _check_manifest(path, manifest)
    return manifest


_EXPORT_AGAIN = (
    "export the checkpoint again (python -m biaffine.export checkpoint=PATH output=FOLDER)"
)

_REQUIRED = ("family", "graphs", "vocabs", "model_config")
"""The manifest's keys every export writes and :meth:`OnnxParser.load` reads."""


def _check_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Refuse a manifest without what loading reads: a damaged file, not a KeyError later.

    Raises:
        ValueError: a missing key, or graphs without one the export writes for this model
            (``tags`` for one with taggers: without it the columns went unsaid) or without each
            graph's file, inputs and outputs (the message names ``path``).
    """
    family = manifest.get("family")
    if family not in ("graph", "transition"):
        return  # another family: OnnxParser.load says what it answers
    required = [*_REQUIRED, *(["transition_mlp"] if family == "transition" else [])]
    missing = [key for key in required if key not in manifest]
    graphs = manifest.get("graphs")
    if not missing and isinstance(graphs, dict):
        written = ["chars", "scores", "labels", *(["head_labels"] if family == "graph" else [])]
        written += ["tags"] if _has_taggers(path, manifest["model_config"]) else []
        missing = [f"graphs.{name}" for name in written if name not in graphs]
        missing += (
            ["graphs.segmenter"] if "segmenter" in manifest and "segmenter" not in graphs else []
        )
        missing += [
            f"graphs.{name}.{key}"
            for name, graph in graphs.items()
            for key in ("file", "inputs", "outputs")
            if not isinstance(graph, dict) or key not in graph
        ]
    elif not missing:
        missing = ["graphs (an object)"]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)} in the manifest: {_EXPORT_AGAIN}")
    for name, graph in graphs.items():
        file = graph["file"]
        # A graph lies in the export's folder, under the name the exporter gave it.
        if not is_plain_name(file, ".onnx"):
            problem = f"graphs.{name}.file={file!r} is not a graph file's name in its folder"
            raise ValueError(f"{path}: {problem}: {_EXPORT_AGAIN}")


def _has_taggers(path: Path, config: Any) -> bool:
    """Whether the exported parser (an ensemble's first member) has a tagger: a loss weight > 0.

    Raises:
        ValueError: a config without the weights' types (the message names ``path``).
    """
    try:
        if "members" in config:
            config = config["members"][0]["config"]
        return any(float(config.get(option) or 0) > 0 for option in LOSS_WEIGHTS.values())
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as error:
        problem = f"damaged model_config ({type(error).__name__}: {error})"
        raise ValueError(f"{path}: {problem}: {_EXPORT_AGAIN}") from None


def _vector_index(manifest: dict[str, Any]) -> VectorIndex:
    """The rows of the vectors ``scores.onnx`` holds, by word, from the checkpoint's config.

    An ensemble's members read the same words (``biaffine.export`` refuses others): its first
    member's config says which.
    """
    config = manifest["model_config"]
    encoder = (config["members"][0]["config"] if "members" in config else config)["encoder"]
    pretrained = encoder["pretrained"]
    return VectorIndex.of(pretrained["vocabulary"], lowercase=pretrained["lowercase"])


class LoadedGraph:
    """A graph of an export in onnxruntime, whose failures at run time name its file.

    A graph that does not fit the others (one copied over another's in an export written
    before the manifest kept digests) failed in onnxruntime's traceback (``InvalidArgument ...
    idx=4359 must be within [-3642,3641]``), naming nothing.

    Attributes:
        session: the graph in onnxruntime.
        path: its file.
        outputs: the names of its outputs, in order.
    """

    def __init__(self, session: onnxruntime.InferenceSession, path: Path) -> None:
        """Keep the loaded ``session`` of the graph file ``path``."""
        self.session = session
        self.path = path
        self.outputs = [node.name for node in session.get_outputs()]

    def run(self, outputs: Sequence[str] | None, feed: Mapping[str, np.ndarray]) -> list:
        """``InferenceSession.run``.

        Raises:
            ValueError: onnxruntime refused the inputs or failed, naming the file.
        """
        try:
            return self.session.run(outputs, feed)
        except _RUN_ERRORS as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            problem = f"the export's graphs do not fit together ({reason})"
            raise ValueError(f"{self.path}: {problem}: {_EXPORT_AGAIN}") from None


def _session(folder: Path, graph: Mapping[str, Any], threads: int | None) -> LoadedGraph:
    """The graph the manifest's entry ``graph`` names in ``folder``, loaded.

    Raises:
        ValueError: naming the file: it is not there, not ONNX, or not the graph named (its
            inputs or outputs are another's: a graph file copied over another).
    """
    path = folder / graph["file"]
    options = onnxruntime.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle threads sleep at once: ONNX Runtime's spin is on or off, and spinning threads take
    # the cores from the work on a busy machine (torch's spin briefly: biaffine/openmp.py).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if not path.is_file():
        raise ValueError(f"{path}: no such graph file: {_EXPORT_AGAIN}")
    _check_digest(path, graph)
    try:
        session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
    except _LOAD_ERRORS as error:
        # onnxruntime's own exceptions (a traceback, exit 1) for a damaged file: a user error.
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"{path}: not a loadable ONNX graph ({reason}): {_EXPORT_AGAIN}") from None
    for side, nodes in (("inputs", session.get_inputs()), ("outputs", session.get_outputs())):
        names = [node.name for node in nodes]
        if names != list(graph[side]):
            problem = f"not the graph the manifest names ({side} {names}, expected {graph[side]})"
            raise ValueError(f"{path}: {problem}: {_EXPORT_AGAIN}")
    return LoadedGraph(session, path)


def _check_digest(path: Path, graph: Mapping[str, Any]) -> None:
    """Refuse a graph file other than the one its manifest was written with.

    An ``export.json`` copied from another model's export, or another export's graph copied
    in, has the same names: it parsed without a word into another model's tags and trees, or
    failed in a traceback. Exports written before the digests were kept are not checked.

    Raises:
        ValueError: naming the file.
    """
    if "sha256" in graph and file_digest(path) != graph["sha256"]:
        problem = "not the graph export.json was written with (its SHA-256 differs)"
        raise ValueError(f"{path}: {problem}: {_EXPORT_AGAIN}")


_LOAD_ERRORS = tuple(
    getattr(onnxruntime.capi.onnxruntime_pybind11_state, name)
    for name in ("Fail", "InvalidProtobuf", "InvalidGraph", "InvalidArgument", "NoSuchFile")
)
"""What onnxruntime raises for a graph file it cannot read (truncated, not ONNX, ...)."""
_RUN_ERRORS = (onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument,)
"""What onnxruntime raises for inputs a graph cannot take (another graph's shapes, ids); not
its other failures (memory), which are no fault of the export."""


def check_supported(request: Request, decoder: DecoderSettings, family: str | None = None) -> None:
    """Refuse what this runtime does not answer: one line naming it all.

    Args:
        request: what is asked besides the trees.
        decoder: the decoder or search asked.
        family: ``graph`` or ``transition`` to check the decoder and search too; None (the
            export not read yet) checks the request alone.

    Raises:
        Refused: probabilities, k-best trees, given heads; for graph parsers another decoder or
            a search; for transition parsers another decoder or ``search=graph``.
    """
    asked = {
        "probabilities=true": request.probabilities,
        f"kbest={request.kbest}": request.kbest is not None,
        "keep_given_heads=true": request.fixed_heads is not None,
    }
    if family == "graph":
        asked |= {
            f"decoder={decoder.algorithm}": decoder.algorithm != MST.algorithm,
            "decoder.root_constraint=false": not decoder.root_constraint,
            f"search={decoder.search}": decoder.asks_search and decoder.search != "greedy",
            f"search.graph_weight={decoder.graph_weight}": decoder.graph_weight != 0,
        }
    if family == "transition":  # a decoder= it would ignore, as the torch path refuses it
        asked[f"decoder={decoder.algorithm}"] = decoder.algorithm != MST.algorithm
        asked["decoder.root_constraint=false"] = not decoder.root_constraint
        asked["search=graph"] = decoder.search == "graph"
    given = [name for name, on in asked.items() if on]
    if given:
        raise Refused(f"{', '.join(given)}: {SUPPORTED}")


def predict_file(
    folder: str | os.PathLike[str],
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str] = STDIO,
    *,
    input_format: str = "conllu",
    decoder: DecoderSettings | None = None,
    max_tokens: int = MAX_TOKENS,
    chunk_sentences: int = 10000,
    threads: int | None = None,
    options: PredictOptions | None = None,
) -> tuple[int, float]:
    """Parse ``source`` with the export in ``folder`` and write CoNLL-U to ``dest``.

    The bytes :func:`biaffine.predicting.predict` writes with the checkpoint exported, read,
    parsed and written ``chunk_sentences`` sentences at a time, ``dest`` written atomically
    (:func:`biaffine.predict_options.write_sentences`). With ``input_format="raw"`` the
    export's segmenter (:class:`~biaffine.segmenting.onnxrun.OnnxSegmenter`) finds the tokens,
    multi-word tokens and sentences, and every column the model tags is predicted unless
    ``options`` names the columns.

    Returns:
        The number of sentences and the seconds spent reading, parsing and writing them.

    Raises:
        ValueError: an export or option this runtime does not answer, bad arguments (as
            ``predict``), malformed input.
    """
    decoder = decoder if decoder is not None else DecoderSettings()
    options = options if options is not None else PredictOptions()
    exported = [path for path in Path(folder).glob("*") if path.is_file()]
    check_arguments(
        source, dest, input_format, chunk_sentences, decoder, options, FORMATS, exported
    )
    check_threads(threads, default="onnxruntime's")
    check_supported(request_of(options, []), decoder)
    parser = OnnxParser.load(folder, threads=threads)
    if input_format == "raw":
        if parser.segmenter is None:
            raise ValueError(
                f"onnx={folder}: format=raw needs a segmenter in the export (python -m "
                "biaffine.export model=NAME output=..., or checkpoint=... segmenter=PATH)"
            )
        if options.columns is None:  # raw text has no column to keep: fill all, as torch's path
            options = dataclasses.replace(options, columns=parser.tagged_columns)
    request = parser.check(request_of(options, []), decoder)
    warm_up = [Sentence.from_forms(["warm", "up"])]
    parser.results(warm_up, request, decoder)  # kernels loaded: part of start-up
    started, counted = time.perf_counter(), [0]
    if input_format == "raw":
        raw = read_raw(source, parser.segmenter)
        sentences = InputSentences(raw, raw)
    else:
        sentences = read_sentences(source, input_format)
    chunks = _chunks(sentences, chunk_sentences)
    parsed = _parsed(parser, chunks, request, decoder, max_tokens, counted)
    write_sentences(dest, parsed, sentences.trailer)
    return counted[0], time.perf_counter() - started


def _chunks(sentences: InputSentences, size: int) -> Iterator[list[Sentence]]:
    while True:
        stop_if_terminated()  # before a read that may wait on a pipe for good
        chunk = next_chunk(sentences, size)
        if not chunk:
            return
        yield chunk


def _parsed(
    parser: OnnxParser,
    chunks: Iterable[list[Sentence]],
    request: Request,
    decoder: DecoderSettings,
    max_tokens: int,
    counted: list[int],
) -> Iterator[Sentence]:
    for chunk in chunks:
        found = parser.results(chunk, request, decoder, max_tokens=max_tokens)
        counted[0] += len(chunk)
        for sentence, result in zip(chunk, found, strict=True):
            yield from with_result(sentence, result, request)
