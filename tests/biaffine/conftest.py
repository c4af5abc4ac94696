"""Fixtures shared by the model-level tests: the tiny treebank, its vocabularies, one thread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

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
