"""Building parsers in tests from one flat dict of options (encoder and parser keys mixed)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence, write_conllu
from biaffine.data.vocab import SPECIALS, Vocab, Vocabs
from biaffine.nn import Encoder
from biaffine.parsers import BiaffineParser, TransitionParser
from biaffine.training import compose

ENCODER_OPTIONS = set(inspect.signature(Encoder).parameters) - {"vocabs"}
TINY_PARSER = {"word_dim": 8, "char_dim": 6, "char_hidden": 5, "char_out": 7, "lstm_hidden": 10}
TINY_PARSER |= {"lstm_layers": 1, "arc_mlp": 12, "rel_mlp": 6}
"""Options (encoder and parser mixed) of a parser small enough to build and run in milliseconds."""
BERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", ".", "a", "is"]
BERT_VOCAB += ["un", "##believ", "##ably", "##s", "hear", "##ing", "on", "issue", "today", "you"]
"""The WordPiece vocabulary of the ``tiny_bert`` fixture."""


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(encoder options, parser options) of a flat dict."""
    encoder = {k: v for k, v in options.items() if k in ENCODER_OPTIONS}
    return encoder, {k: v for k, v in options.items() if k not in ENCODER_OPTIONS}


def biaffine_parser(vocabs: Vocabs, **options: Any) -> BiaffineParser:
    """A biaffine parser on a BiLSTM encoder, both sized by ``vocabs``."""
    encoder, parser = split_options(options)
    return BiaffineParser(vocabs, Encoder(vocabs, **encoder), **parser)


def sized_vocabs(
    *, words: int, chars: int, upos: int, rels: int, xpos: int = 3, feats: int = 3
) -> Vocabs:
    """Vocabularies of the given sizes (specials included), filled with made-up strings."""

    def vocab(prefix: str, size: int) -> Vocab:
        return Vocab([*SPECIALS, *(f"{prefix}{i}" for i in range(size - len(SPECIALS)))])

    relations = Vocab([f"rel{i}" for i in range(rels)], specials=False)
    columns = {"upos": vocab("t", upos), "xpos": vocab("x", xpos), "feats": vocab("f", feats)}
    return Vocabs(vocab("w", words), vocab("c", chars), relations, columns)


def save_model(path: Path, model: nn.Module, vocabs: Vocabs) -> Path:
    """``path``: a checkpoint of ``model`` (weights, config, vocabularies), no training state."""
    checkpoint.save(
        path,
        parser=model.kind,
        model_config=model.config(),
        vocabs=vocabs,
        state_dict=model.state_dict(),
        metadata={},
    )
    return path


# A small transition parser, shared by the transition parser, beam search and dynamic oracle tests.
ENCODER = {"word_dim": 16, "char_dim": 8, "char_hidden": 8, "char_out": 16, "lstm_hidden": 24}
ENCODER |= {"lstm_layers": 1, "embed_dropout": 0.0, "lstm_dropout": 0.0}
HEADS = {"arc_mlp": 32, "rel_mlp": 16, "mlp_dropout": 0.0}


def training_vocabs(sentences: list[Sentence], system: str) -> tuple[list[Sentence], Vocabs]:
    """Prepared training sentences and their vocabularies, as biaffine.training builds them."""
    prepared = TransitionParser.prepare_training(sentences, {"system": system})
    return prepared, compose.training_vocabs(sentences, prepared, min_word_count=1)


def untrained(vocabs: Vocabs, system: str, seed: int = 0) -> TransitionParser:
    torch.manual_seed(seed)
    encoder = Encoder(vocabs, **ENCODER)
    return TransitionParser(vocabs, encoder, system=system, **HEADS).eval()


def trees(sentences: list[Sentence]) -> list[tuple[list[int], list[str]]]:
    return [(s.heads, s.deprels) for s in sentences]


# Random taggers, and what they write: shared by the tests of predicted columns and lemmas.
def randomized(model: torch.nn.Module, scale: float = 0.5) -> torch.nn.Module:
    """Random, untied weights: taggers that disagree with the gold tags somewhere."""
    with torch.no_grad():
        for param in model.parameters():
            param.add_(scale * torch.randn_like(param))
    return model


def cells(sentence: Sentence) -> list[list[str]]:
    return [sentence.lines[k].rstrip("\r\n").split("\t") for k in sentence.word_lines]


def row_scores(scores: torch.Tensor, batch, row: int) -> torch.Tensor:
    """Row ``row``'s words of tagger scores float[W, C] (the batch's words, row by row)."""
    lengths = batch.lengths.tolist()
    start = sum(lengths[:row])
    return scores[start : start + lengths[row]]


def expected_tags(parser: Parser, sentences: list[Sentence], column: str) -> list[list[str]]:
    """The tagger's argmax over the non-special classes, computed here from the raw scores of
    every word (a transition parser's encoder states' scores)."""
    itos = parser.vocabs.columns[column].itos
    scored = getattr(parser.model, "encode", parser.model)
    found = []
    with torch.inference_mode():
        for batch in batches_by_tokens(encode(sentences, parser.vocabs), 10_000, shuffle=False):
            scores = scored(batch).tag_scores[column]
            for row, index in enumerate(batch.indices.tolist()):
                assert len(sentences[index]) == batch.lengths[row]
                best = row_scores(scores, batch, row)[:, len(SPECIALS) :].argmax(-1) + len(SPECIALS)
                found.append((index, [itos[i] for i in best.tolist()]))
    return [tags for _, tags in sorted(found)]


CHECKOUT = Path(__file__).parents[2]


def run_script(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python ARGS`` in ``cwd``, without JIT; assert it succeeds and return it."""
    # This checkout's packages, also for scripts outside the root (experiments/), which would
    # otherwise import the installed ones.
    path = os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "HYDRA_FULL_ERROR": "1", "PYTHONPATH": path}
    result = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_module(module: str, *arguments: str | Path) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGUMENTS`` from this checkout's root, its output captured (any exit)."""
    command = [sys.executable, "-m", module, *map(str, arguments)]
    return subprocess.run(command, cwd=CHECKOUT, capture_output=True, text=True, check=False)


def conllu_file(folder: Path, sentences: list[Sentence]) -> Path:
    """``sentences`` written to ``folder / "dev.conllu"``."""
    path = folder / "dev.conllu"
    with path.open("w", encoding="utf-8") as out:
        write_conllu(out, sentences)
    return path


def tagging_model(folder: Path, vocabs: Vocabs, seed: int = 5) -> Path:
    """A tiny graph parser with every tagger, random weights, and the vocabularies' lexicon,
    saved as ``folder / "best.pt"``."""
    torch.manual_seed(seed)
    weights = {"tag_loss_weight": 1.0, "feats_loss_weight": 1.0, "lemma_loss_weight": 1.0}
    model = biaffine_parser(vocabs, **TINY_PARSER, **weights)
    return save_model(folder / "best.pt", randomized(model), vocabs)
