"""How training words are cased inside sentences, as a segmenter feature: counts, flags, files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from segmenter_builders import exported_segmenter, random_model

from biaffine.segmenting import Segmenter, checkpoint
from biaffine.segmenting.features import FEATURES, CasedWords, CharVocab, char_features
from biaffine.segmenting.training import cased_words
from rawtext.labels import labelled_documents

SENTENCES = [
    ["They", "sell", "kits", "to", "Price", "."],
    ["Price", "said", "they", "sell", "to", "Price", "."],
    ["So", "(they)", "sell", "It", "."],
    ["They", "said", "so", "."],
]
TEXT = "They sell kits to Price. Price said they sell to Price.\n\nSo (they) sell It.\n" * 3


def test_words_count_past_each_sentence_start_and_twice_or_more() -> None:
    cased = CasedWords.count(SENTENCES)
    # "They" starts two sentences (not counted); "(they)" is "they" inside; "It" and "kits"
    # were seen once, "said" and "to" twice; "." has no letter.
    assert cased.to_data() == {"lower": ["said", "sell", "they", "to"], "upper": ["price"]}
    assert CasedWords.count(SENTENCES, min_count=1).to_data() == {
        "lower": ["kits", "said", "sell", "so", "they", "to"],
        "upper": ["it", "price"],
    }


def flags(text: str) -> list[str]:
    """Each character's two flags as a string: '.', 'l' (lower), 'U' (upper) or 'B' (both)."""
    cased = CasedWords(["they", "sell", "price"], ["price", "it"])
    return "".join(".lUB"[int(a) + 2 * int(b)] for a, b in cased.flags(text))


def test_every_character_of_a_chunk_carries_its_word_s_flags() -> None:
    assert flags("They sell it") == "llll.llll.UU"
    assert flags("(THEY), Price! x") == "lllllll.BBBBBB.."
    assert flags("they\nPRICE") == "llll.BBBBB"


@given(
    st.lists(st.sampled_from(["They", "price", "It", "x", ".", " ", "\n", "(", "é"]), max_size=25)
)
def test_whitespace_is_never_flagged_and_a_chunk_is_flagged_as_a_whole(parts: list[str]) -> None:
    text = "".join(parts)
    found = CasedWords(["they", "price"], ["price", "it"]).flags(text)
    assert found.shape == (len(text), 2)
    assert not found[[i for i, c in enumerate(text) if c.isspace()]].any()
    for chunk in text.split():
        start = text.index(chunk)
        assert (found[start : start + len(chunk)] == found[start]).all()


def test_the_vocabulary_adds_two_columns_after_the_others() -> None:
    cased = CasedWords(["they"], ["price"])
    vocab = CharVocab(["a"], cased_words=cased)
    assert vocab.n_features == len(FEATURES) + 2
    both = CharVocab(["a"], spaced_words=["thủ đô"], cased_words=cased)
    assert both.n_features == len(FEATURES) + 3
    features = both.features("thủ đô Price")
    np.testing.assert_array_equal(features[:, : len(FEATURES)], char_features("thủ đô Price"))
    np.testing.assert_array_equal(features[:, len(FEATURES)], [0, 0, 0, 1, 0, 0, 0] + [0] * 5)
    np.testing.assert_array_equal(features[:, -2:], cased.flags("thủ đô Price"))
    assert CharVocab.from_data({"chars": ["a"], "cased_words": cased.to_data()}).n_features == 10
    assert CharVocab.from_data({"chars": ["a"]}).cased is None  # older files: no casing


def test_training_counts_the_gold_sentences_of_the_labelled_text(tmp_path: Path) -> None:
    conllu = tmp_path / "x.conllu"
    blocks = []
    for k, sentence in enumerate(SENTENCES):
        lines = [f"# sent_id = {k}", f"# text = {' '.join(sentence)}"]
        lines += [
            f"{i}\t{form}\t_\tX\t_\t_\t{i - 1}\tdep\t_\t_" for i, form in enumerate(sentence, 1)
        ]
        blocks.append("\n".join(lines) + "\n")
    conllu.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    assert (
        cased_words(labelled_documents(conllu)).to_data() == CasedWords.count(SENTENCES).to_data()
    )


def cased_segmenter(tmp_path: Path) -> Path:
    """A random segmenter that reads casing flags, saved."""
    vocab = CharVocab.build([TEXT], min_count=1, cased_words=CasedWords.count(SENTENCES))
    model = random_model(vocab, rnn_hidden=6, n_features=vocab.n_features)
    path = tmp_path / "best.pt"
    checkpoint.save(path, model, vocab, treebank="UD_English-X")
    return path


def test_the_casing_round_trips_and_the_network_reads_it(tmp_path: Path) -> None:
    segmenter = Segmenter.load(cased_segmenter(tmp_path))
    assert segmenter.vocab.cased_words == CasedWords.count(SENTENCES).to_data()
    blind = CharVocab(segmenter.vocab.chars, cased_words=CasedWords([], []))
    with torch.inference_mode():
        ids = torch.from_numpy(blind.ids(TEXT))[None]
        unseen = segmenter.model(ids, torch.from_numpy(blind.features(TEXT))[None])
        seen = segmenter.model(ids, torch.from_numpy(segmenter.vocab.features(TEXT))[None])
    assert not torch.equal(unseen, seen)  # the flags reach the classes


def test_the_onnx_segmenter_reads_the_casing_as_torch_does(tmp_path: Path) -> None:
    path = cased_segmenter(tmp_path)
    onnx = exported_segmenter(path, tmp_path / "export")
    assert onnx.vocab.cased_words == CasedWords.count(SENTENCES).to_data()
    np.testing.assert_array_equal(onnx.classes(TEXT), Segmenter.load(path).classes(TEXT))
