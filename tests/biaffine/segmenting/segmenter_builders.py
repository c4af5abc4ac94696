"""Small segmenter models with random weights, for the window and checkpoint tests."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
from builders import biaffine_parser, sized_vocabs

from biaffine.segmenting import checkpoint
from biaffine.segmenting.features import FEATURES, CharVocab
from biaffine.segmenting.model import SegmenterModel

TEXT = (
    'Dr. Smith arrived at 9:30. "Why?" she asked\u00a0\u2014 nobody knew!\n\n'
    "Zweite Zeile, mit Umlauten: \u00e4\u00f6\u00fc. \u4e2d\u6587\u3002 \U0001f600 done\n"
) * 3


def head(source: Path, target: Path, sentences: int) -> None:
    """Write the first ``sentences`` sentences of a CoNLL-U file to ``target``."""
    blocks = source.read_text(encoding="utf-8").split("\n\n")[:sentences]
    target.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")


def small_vocab() -> CharVocab:
    """The characters of the start of TEXT: the rest holds unknown ones."""
    return CharVocab.build([TEXT[:150]], min_count=1)


def random_model(
    vocab: CharVocab, *, rnn_hidden: int, seed: int = 0, n_features: int = len(FEATURES)
) -> SegmenterModel:
    """A model whose weights are large enough that every class wins somewhere.

    It reads ``n_features`` flags per character (those of :data:`FEATURES` unless told).
    """
    torch.manual_seed(seed)
    model = SegmenterModel(
        len(vocab), embed_dim=8, channels=12, rnn_hidden=rnn_hidden, n_features=n_features
    )
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_()
    return model.eval()


def exported_segmenter(path: Path, folder: Path) -> Any:
    """The segmenter checkpoint at ``path`` exported beside a tiny parser into ``folder``, as
    ONNX Runtime runs it (``OnnxSegmenter``); the test is skipped without the export extra."""
    pytest.importorskip("onnx", reason="onnx is not installed (the export extra)")
    onnxruntime = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from biaffine.export import export
    from biaffine.segmenting.onnxrun import OnnxSegmenter

    parser = biaffine_parser(sized_vocabs(words=20, chars=10, upos=6, rels=6)).eval()
    manifest = export(parser, folder, about={}, segmenter=checkpoint.load(path))
    session = onnxruntime.InferenceSession(str(folder / "segmenter.onnx"))
    return OnnxSegmenter(session, manifest["segmenter"])


def scoring_outlasts_the_budget(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, scorer: str
) -> None:
    """``module``'s clock stands still but for its dev scorer ``scorer``, which takes two minutes
    a call: a one-minute budget runs out while the first epoch is scored."""
    now = [0.0]
    scored = getattr(module, scorer)

    def slow(*args: Any, **kwargs: Any) -> Any:
        now[0] += 120.0
        return scored(*args, **kwargs)

    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(module, scorer, slow)
