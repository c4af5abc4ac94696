"""The segmenter's one checkpoint format: plain data, read with ``torch.load(weights_only=True)``.

A checkpoint is a dict: ``format`` (:data:`FORMAT`), ``kind`` (``"segmenter"``), ``config``
(:meth:`SegmenterModel.config`), ``chars`` (the character vocabulary, ids 2 on), ``weights``
(the state dict), ``treebank`` (the folder it was trained on), ``mwt`` (the multi-word token
expander's plain data, ``rawtext.mwt.MwtExpander.to_data()``, None for a treebank without
multi-word tokens) and, where the network reads them, ``spaced_words`` (the training tokens
with whitespace inside, ``CharVocab.spaced_words``; checkpoints written before it lack the key
and read none) and ``cased_words`` (how the training words were cased inside sentences,
``CharVocab.cased_words``, likewise), and ``sentences`` where a word-level sentence model was
trained for it (:mod:`biaffine.segmenting.sentences`: its config, with the frozen transformer's
folder and sha256, and its weights as float16, computed in float32). Nothing in it names code to
import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from biaffine.cli import written_whole
from biaffine.segmenting.features import CharVocab
from biaffine.segmenting.model import SegmenterModel
from rawtext.mwt import MwtExpander

if TYPE_CHECKING:
    from biaffine.segmenting.sentences import SentenceModel

__all__ = ["FORMAT", "KIND", "SegmenterCheckpointError", "Stored", "load", "save"]

FORMAT = 1
KIND = "segmenter"
_KEYS = ("format", "kind", "config", "chars", "weights", "treebank", "mwt")


class SegmenterCheckpointError(ValueError):
    """A segmenter checkpoint is missing, damaged, of another format or no segmenter's."""


@dataclass(frozen=True, slots=True)
class Stored:
    """What a segmenter checkpoint holds, ready to use (the model in eval mode, on CPU)."""

    model: SegmenterModel
    vocab: CharVocab
    treebank: str
    mwt: MwtExpander | None
    sentences: SentenceModel | None = None


def save(
    path: str | os.PathLike[str],
    model: SegmenterModel,
    vocab: CharVocab,
    *,
    treebank: str,
    mwt: MwtExpander | None = None,
    sentences: SentenceModel | None = None,
) -> None:
    """Write a segmenter checkpoint atomically (a crash leaves the old file or the new one)."""
    payload = {
        "format": FORMAT,
        "kind": KIND,
        "config": model.config(),
        "chars": list(vocab.chars),
        "weights": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "treebank": treebank,
        "mwt": None if mwt is None else mwt.to_data(),
    }
    if vocab.spaced is not None:
        payload["spaced_words"] = vocab.spaced_words
    if vocab.cased is not None:
        payload["cased_words"] = vocab.cased_words
    if sentences is not None:
        # float16 halves the file (EWT's: 0.6 MB against 1.3); it loads into float32 weights.
        weights = {k: v.detach().cpu().half() for k, v in sentences.state_dict().items()}
        payload["sentences"] = {"config": sentences.config(), "weights": weights}
    with written_whole(path) as handle:  # a kill waits for the whole file
        torch.save(payload, handle)


def load(path: str | os.PathLike[str]) -> Stored:
    """Read a checkpoint written by :func:`save`.

    Raises:
        SegmenterCheckpointError: one line naming ``path``: missing, truncated or corrupt, a
            parser checkpoint or another file, another format version, or weights that do not
            fit the stored model.
    """
    path = Path(path)
    if not path.is_file():
        raise SegmenterCheckpointError(f"{path}: no such segmenter checkpoint file")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # unpickling damaged bytes fails in many ways; all mean the same here
        raise SegmenterCheckpointError(
            f"{path}: truncated or corrupt file, or no checkpoint of plain data"
        ) from None
    _check(payload, path)
    try:
        vocab = CharVocab.from_data(payload)
        model = SegmenterModel.from_config(payload["config"])
        if model.settings["n_features"] != vocab.n_features:
            raise ValueError(
                f"the network reads {model.settings['n_features']} flags per character, "
                f"its vocabulary gives {vocab.n_features}"
            )
        model.load_state_dict(payload["weights"])
        mwt = None if payload["mwt"] is None else MwtExpander.from_data(payload["mwt"])
        sentences = _sentences(payload.get("sentences"))
    except ImportError as error:
        raise SegmenterCheckpointError(
            f"{path}: its sentence model reads a transformer, which needs the optional extra "
            f"(pip install 'rootparse[transformer]'): {error}"
        ) from None
    except (TypeError, ValueError, RuntimeError, AttributeError, KeyError) as error:
        # KeyError: an entry missing from the payload (a sentences entry without its config)
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SegmenterCheckpointError(f"{path}: invalid segmenter checkpoint ({first})") from None
    return Stored(model.eval(), vocab, str(payload["treebank"]), mwt, sentences)


def _sentences(stored: dict[str, Any] | None) -> SentenceModel | None:
    """The sentence model a checkpoint's ``sentences`` entry holds (None without one)."""
    if stored is None:
        return None
    from biaffine.segmenting.sentences import SentenceModel  # loads a transformer when used

    model = SentenceModel.from_config(stored["config"])
    model.load_state_dict(stored["weights"])
    return model.eval()


def _check(payload: Any, path: Path) -> None:
    if not isinstance(payload, dict) or payload.get("kind") != KIND:
        parser = isinstance(payload, dict) and "parser" in payload
        raise SegmenterCheckpointError(
            f"{path}: {'a parser checkpoint' if parser else 'another kind of file'}, not a "
            "segmenter checkpoint: give the best.pt that train_segmenter.py wrote"
        )
    if payload.get("format") != FORMAT:
        raise SegmenterCheckpointError(
            f"{path}: segmenter checkpoint format {payload.get('format')!r}; this version reads "
            f"format {FORMAT}"
        )
    missing = [key for key in _KEYS if key not in payload]
    if missing:
        raise SegmenterCheckpointError(f"{path}: segmenter checkpoint lacks {', '.join(missing)}")
