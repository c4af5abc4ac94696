"""CoNLL-U written for segmented documents (rawtext.conllu_out): exact lines, read back by two
readers, and UD treebanks round-tripped through text, classes, segmentation and CoNLL-U."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import conllu
import numpy as np
import pytest
from hypothesis import given
from rawtext_cases import labelled, texts_and_labels

from rawtext import labelled_documents, read_sentences, segment, to_conllu

EXPECTED = """\
# newdoc id = d1
# newpar
# sent_id = d1-1
# text = Du vin, dit-il.
1-2\tDu\t_\t_\t_\t_\t_\t_\t_\t_
1\tde\t_\t_\t_\t_\t_\t_\t_\t_
2\tle\t_\t_\t_\t_\t_\t_\t_\t_
3\tvin\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
4\t,\t_\t_\t_\t_\t_\t_\t_\t_
5\tdit-il\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
6\t.\t_\t_\t_\t_\t_\t_\t_\t_

# sent_id = d1-2
# text = Oui vraiment
1\tOui\t_\t_\t_\t_\t_\t_\t_\t_
2\tvraiment\t_\t_\t_\t_\t_\t_\t_\t_

# newpar
# sent_id = d1-3
# text = Au revoir.
1-2\tAu\t_\t_\t_\t_\t_\t_\t_\t_
1\tà\t_\t_\t_\t_\t_\t_\t_\t_
2\tle\t_\t_\t_\t_\t_\t_\t_\t_
3\trevoir\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
4\t.\t_\t_\t_\t_\t_\t_\t_\t_

"""

EXPANSIONS = {"Du": ["de", "le"], "Au": ["à", "le"]}


def small_document():
    text, labels = labelled("Du+ vin|,| dit-il|.# Oui\tvraiment#\r\n\r\nAu+ revoir|.#\n")
    return segment(text, labels, expand=EXPANSIONS.get)


def test_lines_are_exactly_as_expected() -> None:
    lines = list(to_conllu(small_document(), doc_id="d1", sent_id_prefix="d1-"))
    assert "".join(lines) == EXPECTED
    assert all(line.endswith("\n") and "\n" not in line[:-1] for line in lines)


def test_the_conllu_package_reads_it_back() -> None:
    sentences = conllu.parse("".join(to_conllu(small_document(), doc_id="d1")))
    assert [s.metadata["text"] for s in sentences] == [
        "Du vin, dit-il.",
        "Oui vraiment",
        "Au revoir.",
    ]
    assert sentences[0].metadata["newdoc id"] == "d1"
    assert [s.metadata["sent_id"] for s in sentences] == ["1", "2", "3"]
    first = sentences[0]
    assert first[0]["id"] == (1, "-", 2)
    assert [t["form"] for t in first if isinstance(t["id"], int)] == [
        "de",
        "le",
        "vin",
        ",",
        "dit-il",
        ".",
    ]
    assert first[3]["misc"] == {"SpaceAfter": "No"}


def test_biaffine_reads_it_back() -> None:
    from biaffine.data.conllu import read_conllu

    text = "".join(to_conllu(small_document(), doc_id=None, sent_id_prefix="s"))
    sentences = list(read_conllu(io.StringIO(text)))
    assert [s.forms for s in sentences] == [
        ["de", "le", "vin", ",", "dit-il", "."],
        ["Oui", "vraiment"],
        ["à", "le", "revoir", "."],
    ]
    assert sentences[0].metadata["sent_id"] == "s1"
    assert "# newdoc" in sentences[0].comments
    assert [s.heads for s in sentences] == [None, None, None]


@pytest.mark.parametrize("text", ["", " ", "\n\n\r\n \t\u00a0\u3000"])
def test_a_document_without_sentences_writes_nothing(text: str) -> None:
    document = segment(text, np.ones(len(text), np.uint8))
    assert document.paragraphs == ()
    assert list(to_conllu(document, doc_id="empty", sent_id_prefix="x")) == []


def unwritable(char: str) -> bool:
    """TAB and what str.splitlines breaks at: independent of rawtext.chars."""
    return char == "\t" or len(f"a{char}b".splitlines()) > 1


@given(texts_and_labels())
def test_text_comment_is_the_input_slice_with_documented_replacements(case) -> None:
    text, labels = case
    document = segment(text, labels)
    comments = [line for line in to_conllu(document) if line.startswith("# text = ")]
    expected = [
        "".join(" " if unwritable(c) else c for c in text[s.start : s.end])
        for s in document.sentences()
    ]
    assert [line[len("# text = ") : -1] for line in comments] == expected
    if comments:
        assert len(conllu.parse("".join(to_conllu(document)))) == len(comments)


def replay(expansions: list[list[str]]) -> Callable[[str], list[str]]:
    """An ``expand`` that returns the given expansions in turn, whatever the token."""
    remaining = iter(expansions)
    return lambda _form: next(remaining)


@pytest.mark.ud
@pytest.mark.slow
def test_treebanks_round_trip_through_segmentation_and_conllu(
    ud_root: Path, tmp_path: Path
) -> None:
    # The gold words of each MWT, in order, stand in for a model's expansion.
    for treebank in ("UD_French-Sequoia", "UD_Vietnamese-VTB", "UD_Turkish-IMST", "UD_English-EWT"):
        (path,) = (ud_root / treebank).glob("*-test.conllu")
        gold = [token for sentence in read_sentences(path) for token in sentence.tokens]
        expand = replay([list(token.words) for token in gold if token.is_mwt])
        written = tmp_path / f"{treebank}.conllu"
        with open(written, "w", encoding="utf-8") as file:
            for k, document in enumerate(labelled_documents(path)):
                segmented = segment(document.text, document.labels, expand=expand)
                file.writelines(to_conllu(segmented, doc_id=str(k), sent_id_prefix=f"{k}-"))
        back = [token for sentence in read_sentences(written) for token in sentence.tokens]
        assert [(t.form, t.words) for t in back] == [(t.form, t.words) for t in gold], treebank
        differ = sum(b.space_after != g.space_after for b, g in zip(back, gold, strict=True))
        assert differ == 0, treebank


@pytest.mark.parametrize("first", [0, -1, 1.0, True, "1"])
def test_a_first_number_below_one_or_not_whole_is_refused_at_once(first) -> None:
    """first=0 wrote "# sent_id = 0" and no "# newdoc"; nothing was checked until iterated."""
    text, labels = labelled("Hi#")
    with pytest.raises(ValueError, match=rf"first={first!r} must be a whole number >= 1"):
        to_conllu(segment(text, labels), first=first)


@pytest.mark.parametrize("doc_id", ["", " ", "\t"])
def test_an_empty_document_id_is_refused_rather_than_written_as_no_id(doc_id: str) -> None:
    text, labels = labelled("Hi#")
    with pytest.raises(ValueError, match="is empty: give None"):
        to_conllu(segment(text, labels), doc_id=doc_id)
    assert next(to_conllu(segment(text, labels), doc_id="d1")) == "# newdoc id = d1\n"
