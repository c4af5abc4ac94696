"""Fixtures shared by the model-level tests: the tiny treebank, its vocabularies, one thread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from builders import BERT_VOCAB, TINY_PARSER, biaffine_parser, save_model

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


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BERT with 8 hidden units and the 21 pieces of ``BERT_VOCAB``, saved to disk."""
    transformers = pytest.importorskip(
        "transformers", reason="transformer encoders need it: pip install 'rootparse[transformer]'"
    )
    folder = tmp_path_factory.mktemp("tiny-bert")
    (folder / "vocab.txt").write_text("\n".join(BERT_VOCAB) + "\n", encoding="utf-8")
    # Positional: the vocabulary file is `vocab_file` in transformers 4, `vocab` in 5.
    tokenizer = transformers.BertTokenizerFast(str(folder / "vocab.txt"))
    tokenizer.save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=len(BERT_VOCAB),
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=40,
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(folder)
    return folder
