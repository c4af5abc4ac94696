"""Fixtures shared by the model-level tests: the tiny treebank, its vocabularies, one thread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from builders import TINY_PARSER, biaffine_parser, save_model

from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.vocab import Vocabs, build_vocabs

TINY_CONLLU = Path(__file__).parents[1] / "data" / "tiny.conllu"


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny matrices: a second intra-op thread only adds synchronisation (10x slower when busy)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def sentences() -> list[Sentence]:
    """The tiny fixture treebank."""
    return list(read_conllu(TINY_CONLLU))


@pytest.fixture(scope="module")
def vocabs(sentences: list[Sentence]) -> Vocabs:
    """Vocabularies of the tiny treebank, every word kept."""
    return build_vocabs(sentences, min_word_count=1)


@pytest.fixture(scope="module")
def graph_checkpoint(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs) -> Path:
    """``best.pt`` (alone in its folder) of a tiny biaffine parser with random, untied weights.

    No training: random weights scaled up give informative, moderate scores in a second, which
    is all the tests of parsing, probabilities, k-best and constraints need.
    """
    torch.manual_seed(0)
    model = biaffine_parser(vocabs, **TINY_PARSER)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.3 * torch.randn_like(param))  # informative, untied, moderate scores
    path = tmp_path_factory.mktemp("api") / "best.pt"
    save_model(path, model, vocabs)
    return path
