"""The tree viewer: SVG geometry, error marking, escaping, the command line, a real browser."""

from __future__ import annotations

import io
import itertools
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import decoding
from biaffine.data.conllu import ConlluError, Sentence, read_conllu, write_conllu
from biaffine.metrics import is_well_formed
from biaffine.render import (
    COLOURS,
    Arc,
    arc_levels,
    compare_arcs,
    crossing_pairs,
    has_crossing,
    is_right_to_left,
    layout_sentence,
    main,
    multiword_tokens,
    parse_selection,
    render_file,
    render_page,
    sentence_arcs,
    sentence_svg,
    tree_problem,
)

TINY_CONLLU = Path(__file__).parents[1] / "data" / "tiny.conllu"
SVG = "{http://www.w3.org/2000/svg}"
LABELS = ("det", "nsubj", "obl:tmod", "x", "a-rather-long-relation", "_")


@st.composite
def trees(draw: st.DrawFn, max_words: int = 10) -> list[int]:
    """Heads [-1, h1..hn] of any tree over n words (several words may hang from ROOT)."""
    n = draw(st.integers(1, max_words))
    order = draw(st.permutations(range(1, n + 1)))
    heads = [-1] * (n + 1)
    for k, word in enumerate(order):
        heads[word] = draw(st.sampled_from([0, *order[:k]]))
    return heads


@st.composite
def parsed_sentences(draw: st.DrawFn) -> Sentence:
    heads = draw(trees())
    n = len(heads) - 1
    forms = draw(
        st.lists(
            st.sampled_from(["a", "cat", "10 000", "<b>", "日本語", "x&y"]), min_size=n, max_size=n
        )
    )
    labels = draw(st.lists(st.sampled_from(LABELS), min_size=n, max_size=n))
    return Sentence(forms, heads=heads[1:], deprels=labels)


def _points(d: str) -> list[tuple[float, float]]:
    """The points an SVG path visits (commands M, L, H, V, Q with absolute coordinates)."""
    points: list[tuple[float, float]] = []
    for command, args in re.findall(r"([MLHVQZ])([^MLHVQZ]*)", d):
        numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", args)]
        if command in "ML":
            points.append((numbers[0], numbers[1]))
        elif command == "H":
            points.append((numbers[0], points[-1][1]))
        elif command == "V":
            points.append((points[-1][0], numbers[0]))
        elif command == "Q":
            points.append((numbers[2], numbers[3]))
    return points


def _box(group: ET.Element) -> tuple[float, float, float, float]:
    rect = group.find(f"{SVG}rect")
    return tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))


def _drawn(svg: str) -> tuple[list[float], dict[int, dict], list[tuple[float, ...]]]:
    """Word centres, the arcs drawn above the words by dependent, and all label boxes.

    An arc is a dict: head, points (its line's corners), tip (of the arrowhead), top (the
    y of its highest point), colour, and box (x, y, width, height of its label, if any).
    """
    root = ET.fromstring(svg)
    centres = [float(t.get("x")) for t in root.iter(f"{SVG}text") if t.get("class") == "form"]
    arcs, boxes = {}, []
    for group in root.iter(f"{SVG}g"):
        kind, status = (group.get("class") or "").split()
        dependent = int(group.get("data-dependent"))
        if kind == "label":
            boxes.append(_box(group))
            if status != "gold":
                arcs[dependent]["box"] = boxes[-1]
            continue
        if status == "gold":
            continue
        line, arrow = group.iter(f"{SVG}path")
        points = _points(line.get("d"))
        arcs[dependent] = {
            "head": int(group.get("data-head")),
            "points": points,
            "tip": _points(arrow.get("d"))[2],
            "top": min(y for _, y in points),
            "colour": line.get("stroke"),
        }
    return centres, arcs, boxes


def _nearest_word(centres: list[float], x: float) -> int:
    return 1 + int(np.argmin([abs(c - x) for c in centres]))


def _check_ends(sentence: Sentence, centres: list[float], arcs: dict[int, dict]) -> None:
    """Every word has its arc, from over its head to over itself."""
    assert sorted(arcs) == list(range(1, len(sentence) + 1))
    for dependent, arc in arcs.items():
        assert arc["head"] == sentence.heads[dependent - 1]
        assert _nearest_word(centres, arc["tip"][0]) == dependent
        start = arc["points"][0]
        if arc["head"] == 0:  # a vertical line from the top down to the word
            assert start[0] == arc["tip"][0]
            assert start[1] == min(a["top"] for a in arcs.values())
        else:
            assert _nearest_word(centres, start[0]) == arc["head"]
            assert start[1] == arc["tip"][1]  # both ends on the words' edge


def _reach(arc: dict) -> tuple[float, float]:
    """The x range an arc covers; a ROOT arc comes from the left of every word, at the top."""
    x_head, x_tip = arc["points"][0][0], arc["tip"][0]
    return (-1.0, x_tip) if arc["head"] == 0 else (min(x_head, x_tip), max(x_head, x_tip))


def _check_crossings(sentence: Sentence, drawn: dict[int, dict]) -> None:
    """Drawn arcs cross exactly where the tree's arcs cross; nested ones are drawn inside."""
    tree = {arc.dependent: arc for arc in sentence_arcs(sentence)}
    for a, b in itertools.permutations(drawn, 2):
        (a_low, a_high), (b_low, b_high) = _reach(drawn[a]), _reach(drawn[b])
        drawn_crossing = a_low < b_low < a_high < b_high or b_low < a_low < b_high < a_high
        assert drawn_crossing is tree[a].crosses(tree[b])
        if tree[a].head == 0 or tree[b].head == 0:
            continue
        if a_low < b_high and b_low < a_high:  # stretches overlap: horizontal lines must not
            assert drawn[a]["top"] != drawn[b]["top"]
        (ta_low, ta_high), (tb_low, tb_high) = tree[a].span, tree[b].span
        if ta_low <= tb_low and tb_high <= ta_high:  # b nested in a: drawn inside, lower
            assert a_low < b_low
            assert b_high < a_high
            assert drawn[b]["top"] > drawn[a]["top"]


def _check_labels(sentence: Sentence, arcs: dict[int, dict]) -> None:
    """Labels sit on their arc's horizontal stretch (clear of the corners) or over ROOT arrows."""
    for dependent, arc in arcs.items():
        if sentence.deprels[dependent - 1] == "_":
            assert "box" not in arc
            continue
        x, y, width, height = arc["box"]
        low, high = sorted((arc["points"][0][0], arc["tip"][0]))
        if arc["head"] == 0:  # over the ROOT arrow, centred on it
            assert x + width / 2 == pytest.approx(low, abs=0.1)
            assert y + height < arc["top"]
        else:  # on the horizontal stretch, clear of the rounded corners
            assert y < arc["top"] < y + height
            assert low + 5 <= x
            assert x + width <= high - 5


# A hub with many arc ends beside short words: its ends fan out far from its centre.
@example(Sentence(["a", ",", "a", "a", "a", "a", "a", "a"], heads=[2, 0, 2, 2, 2, 2, 2, 2]))
@given(parsed_sentences())
def test_every_arc_joins_its_head_and_its_dependent(sentence):
    centres, arcs, _ = _drawn(sentence_svg(sentence))
    _check_ends(sentence, centres, arcs)


@given(parsed_sentences())
def test_drawn_arcs_cross_exactly_where_the_tree_arcs_cross_and_nested_ones_sit_inside(sentence):
    _check_crossings(sentence, _drawn(sentence_svg(sentence))[1])


@given(parsed_sentences())
def test_every_label_fits_on_its_arc(sentence):
    _check_labels(sentence, _drawn(sentence_svg(sentence))[1])


@pytest.mark.ud
@pytest.mark.slow
def test_a_real_treebank_is_drawn_right(ewt_dir: Path, tmp_path: Path):
    path = ewt_dir / "en_ewt-ud-dev.conllu"
    out = tmp_path / "dev.html"
    assert main([str(path), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    sentences = list(read_conllu(path))
    assert page.count("<svg ") == len(sentences)
    heads = [np.array([-1, *s.heads], dtype=np.int64) for s in sentences]
    assert page.count("; non-projective)") == sum(not decoding.is_projective(h) for h in heads)
    for sentence in sentences:
        centres, arcs, _ = _drawn(sentence_svg(sentence))
        _check_ends(sentence, centres, arcs)
        _check_crossings(sentence, arcs)
        _check_labels(sentence, arcs)


def test_a_right_to_left_treebank_is_drawn_from_the_right(ud_root: Path):
    """Uyghur UDT (Arabic script) was laid out left to right, its first word leftmost."""
    path = ud_root / "UD_Uyghur-UDT" / "ug_udt-ud-test.conllu"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    sentences = list(read_conllu(path))[:300]
    assert sum(is_right_to_left(s.forms) for s in sentences) > 250
    for sentence in sentences:
        centres, arcs, _ = _drawn(sentence_svg(sentence))
        _check_ends(sentence, centres, arcs)
        _check_crossings(sentence, arcs)
        _check_labels(sentence, arcs)
        if len(sentence) > 1:
            backwards = centres == sorted(centres, reverse=True)
            assert backwards == is_right_to_left(sentence.forms)


@given(parsed_sentences())
def test_a_right_to_left_layout_is_the_left_to_right_one_mirrored(sentence):
    arcs = sentence_arcs(sentence)
    ltr = layout_sentence(sentence.forms, sentence.upos, arcs)
    rtl = layout_sentence(sentence.forms, sentence.upos, arcs, right_to_left=True)
    assert (rtl.width, rtl.height, rtl.column) == (ltr.width, ltr.height, ltr.column)
    assert rtl.x == [ltr.width - x for x in ltr.x]
    # whole pixels both ways (a width of text widths put right-to-left words at x="152.6")
    assert all(float(x).is_integer() for x in [rtl.width, *ltr.x, *rtl.x])
    for mirrored, placed in zip(rtl.above, ltr.above, strict=True):
        assert mirrored.x_head == ltr.width - placed.x_head
        assert mirrored.x_dependent == ltr.width - placed.x_dependent
        assert (mirrored.level, mirrored.y_turn) == (placed.level, placed.y_turn)


@pytest.mark.parametrize(
    ("forms", "expected"),
    [
        (["ئۇ", "كەلدى", "."], True),  # Uyghur, Arabic script
        (["הוא", "בא", "."], True),  # Hebrew
        (["He", "came", "."], False),
        (["Windows", "نى", "ئىشلەتتى"], True),  # a Latin word among Arabic ones
        (["Windows", "10", "نى"], False),  # more Latin letters than Arabic ones
        (["2024", "."], False),  # no letters
    ],
)
def test_is_right_to_left_by_the_letters(forms, expected):
    assert is_right_to_left(forms) is expected


def test_a_multiword_token_right_to_left_spans_its_words():
    text = (
        "# text = وبالبيت كتب\n"
        "1-2\tوبالبيت\t_\t_\t_\t_\t_\t_\t_\t_\n"  # noqa: RUF001 (Arabic alef)
        "1\tو\tو\tCCONJ\t_\t_\t3\tcc\t_\t_\n"
        "2\tبالبيت\tبيت\tNOUN\t_\t_\t3\tobl\t_\t_\n"  # noqa: RUF001 (Arabic alef)
        "3\tكتب\tكتب\tVERB\t_\t_\t0\troot\t_\t_\n\n"
    )
    [sentence] = read_conllu_text(text)
    root = ET.fromstring(sentence_svg(sentence))
    centres = [float(t.get("x")) for t in root.iter(f"{SVG}text") if t.get("class") == "form"]
    assert centres == sorted(centres, reverse=True)
    [bracket] = [p for p in root.iter(f"{SVG}path") if p.get("class") == "token"]
    xs = [x for x, _ in _points(bracket.get("d"))]
    left, right = min(xs), max(xs)
    assert left < centres[1] < centres[0] < right < centres[0] + 60
    assert right > left + 20


@given(trees())
def test_crossing_pairs_exactly_when_not_projective(heads):
    arcs = [Arc(h, d, "") for d, h in enumerate(heads[1:], 1)]
    projective = decoding.is_projective(np.array(heads, dtype=np.int64))
    assert (not crossing_pairs(arcs)) is projective


@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=12))
def test_has_crossing_exactly_when_crossing_pairs_finds_a_pair(pairs):
    # Any arcs, not only trees': ties, repeats, self-loops, several ROOT arcs.
    arcs = [Arc(head, dependent, "") for head, dependent in pairs]
    assert has_crossing(arcs) is bool(crossing_pairs(arcs))


@given(st.integers(1, 6).flatmap(lambda n: st.lists(st.integers(0, n), min_size=n, max_size=n)))
def test_tree_problem_exactly_when_not_a_tree(heads):
    assert (tree_problem(heads) is None) is is_well_formed(heads)


def test_a_page_names_what_keeps_a_sentence_from_being_a_tree(tmp_path: Path) -> None:
    # A cycle, a word headed by itself, two roots and a partial HEAD column were drawn with
    # nothing to say so, and the partial column lost every arc, its annotated ones too.
    rows = {
        "cycle": ("2", "1", "1"),
        "rooted cycle": ("0", "3", "2"),
        "self": ("1", "0", "2"),
        "roots": ("0", "0", "2"),
        "partial": ("_", "1", "1"),
        "tree": ("0", "1", "1"),
        "words": ("_", "_", "_"),
    }
    text = "".join(
        f"# sent_id = {name}\n"
        + "".join(
            f"{i}\t{form}\t_\tX\t_\t_\t{head}\tdep\t_\t_\n"
            for i, form, head in zip((1, 2, 3), "abc", heads, strict=True)
        )
        + "\n"
        for name, heads in rows.items()
    )
    sentences = read_conllu_text(text)
    page = render_page([(sentence, None) for sentence in sentences], title="t")
    notes = re.findall(r'<span class="id">([^<]*)</span>.*?<span class="note">\(([^<]*)\)', page)
    problems = {name: note.partition("; ")[2] for name, note in notes}
    assert problems == {
        "cycle": "not a tree: no word on ROOT",
        "self": "not a tree: a cycle through word 1",
        "rooted cycle": "not a tree: a cycle through word 2",
        "roots": "not a tree: 2 words on ROOT",
        "partial": "not a tree: HEAD of 1 word not given",
        "tree": "",
        "words": "",
    }
    [partial] = [s for s in sentences if s.metadata["sent_id"] == "partial"]
    assert [(arc.head, arc.dependent) for arc in sentence_arcs(partial)] == [(1, 2), (1, 3)]


def test_crossing_pairs_of_the_nonprojective_tiny_sentence():
    sentence = list(read_conllu(TINY_CONLLU))[1]
    arcs = sentence_arcs(sentence)
    found = {
        (arcs[i].head, arcs[i].dependent, arcs[j].head, arcs[j].dependent)
        for i, j in crossing_pairs(arcs)
    }
    # hearing -> issue (2 -> 7) spans "scheduled", the root word, and its dependents 8, 9
    assert found == {(0, 4, 2, 7), (2, 7, 4, 8), (2, 7, 4, 9)}


def test_arc_levels_by_hand():
    # The cat sat . : det and nsubj at level 1, punct at 1 (shares only "sat" with them).
    arcs = [Arc(2, 1, "det"), Arc(3, 2, "nsubj"), Arc(0, 3, "root"), Arc(3, 4, "punct")]
    assert arc_levels(arcs) == [1, 1, 0, 1]
    # An arc over two others goes above both; one crossing it goes higher still.
    arcs = [Arc(1, 4, ""), Arc(1, 2, ""), Arc(3, 2, ""), Arc(2, 5, "")]
    assert arc_levels(arcs) == [2, 1, 1, 3]


def test_compare_arcs_marks_wrong_heads_and_wrong_labels():
    gold = next(iter(read_conllu(TINY_CONLLU)))  # 2 det, 3 nsubj, 0 root, 3 punct
    pred = gold.with_tree([2, 3, 0, 2], ["det", "obj", "root", "punct"])
    predicted, gold_arcs = compare_arcs(pred, gold)
    assert [a.status for a in predicted] == ["correct", "wrong-label", "correct", "wrong-head"]
    assert "gold nsubj" in predicted[1].label
    assert "gold head 3 (sat)" in predicted[3].note
    assert gold_arcs == [Arc(3, 4, "punct", "gold", gold_arcs[0].note)]


def test_compare_arcs_rejects_other_words():
    gold, other = list(read_conllu(TINY_CONLLU))[:2]
    with pytest.raises(
        ValueError, match=r"tiny.conllu:10: 9 words, but the gold sentence at .*:1 has 4"
    ):
        compare_arcs(other, gold)


def test_compare_arcs_rejects_other_words_of_the_same_number():
    # Only the word counts were compared: a gold file of other sentences drew silently.
    gold = next(iter(read_conllu(TINY_CONLLU)))
    text = TINY_CONLLU.read_text(encoding="utf-8").replace("\tcat\t", "\tdog\t", 1)
    other = next(iter(read_conllu_text(text)))
    with pytest.raises(ValueError, match=r":1: word 2 is 'dog', but the gold .*:1 has 'cat'"):
        compare_arcs(other, gold)


def read_conllu_text(text: str) -> list[Sentence]:
    return list(read_conllu(io.StringIO(text)))


@pytest.mark.parametrize("which", ["input", "gold", "link"])
def test_cli_refuses_an_output_that_is_an_input_and_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str
):
    # -o x.conllu (the input or the gold file) replaced the CoNLL-U with the page, exit 0.
    pred, gold = tmp_path / "pred.conllu", tmp_path / "gold.conllu"
    shutil.copy(TINY_CONLLU, pred)
    shutil.copy(TINY_CONLLU, gold)
    out = {"input": pred, "gold": gold, "link": tmp_path / "link.conllu"}[which]
    if which == "link":
        os.link(pred, out)
    assert main([str(pred), "-o", str(out), "--gold", str(gold)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: output {out} is the input file ")
    assert pred.read_bytes() == gold.read_bytes() == TINY_CONLLU.read_bytes()


def test_cli_errors_name_the_output_not_a_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    folder = tmp_path / "outdir"
    folder.mkdir()
    assert main([str(TINY_CONLLU), "-o", str(folder)]) == 2
    assert capsys.readouterr().err == f"error: {folder}: Is a directory\n"
    missing = tmp_path / "nodir" / "x.html"
    assert main([str(TINY_CONLLU), "-o", str(missing)]) == 2
    assert capsys.readouterr().err == f"error: {missing}: No such file or directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outdir"]  # no temporary left


def test_text_is_escaped_and_comes_back_as_written():
    forms = ["<script>alert(1)</script>", "&", '"q"', "it's"]
    sentence = Sentence(forms, heads=[2, 0, 2, 2], deprels=["a<b", "root", "&amp;", "x"])
    page = render_page([(sentence, None)], title="<title>&")
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    svg = sentence_svg(sentence)
    root = ET.fromstring(svg)  # well-formed XML
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    for text in [*forms, "a<b", "&amp;"]:
        assert text in texts


def test_multiword_tokens_are_drawn_under_their_words():
    sentence = list(read_conllu(TINY_CONLLU))[2]
    assert multiword_tokens(sentence) == [(2, 3, "can't")]
    root = ET.fromstring(sentence_svg(sentence))
    token_texts = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "token"]
    assert token_texts == ["can't"]


def test_malformed_predictions_still_draw_one_arc_per_word():
    # 1 <-> 2 is a cycle, word 3 is its own head, 4 and 5 both hang from ROOT.
    sentence = Sentence(list("abcde"), heads=[2, 1, 3, 0, 0], deprels=list("vwxyz"))
    _, arcs, _ = _drawn(sentence_svg(sentence))
    assert {d: arc["head"] for d, arc in arcs.items()} == {1: 2, 2: 1, 3: 3, 4: 0, 5: 0}
    assert arcs[1]["top"] != arcs[2]["top"]  # the two arcs of the cycle stay apart


def test_words_only_when_heads_are_missing():
    sentence = Sentence(["Just", "words"])
    root = ET.fromstring(sentence_svg(sentence))
    assert not [g for g in root.iter(f"{SVG}g")]
    assert [t.text for t in root.iter(f"{SVG}text")] == ["Just", "words"]


def test_a_selection_does_not_read_the_sentence_after_its_last(tmp_path: Path) -> None:
    # A bad sentence after the last one chosen refused the page (its HEAD out of range).
    bad = "1\ta\t_\tX\t_\t_\t7\troot\t_\t_\n\n"
    source = tmp_path / "in.conllu"
    source.write_text(TINY_CONLLU.read_text(encoding="utf-8") + bad, encoding="utf-8")
    out = tmp_path / "trees.html"
    count = len(list(read_conllu(TINY_CONLLU)))
    assert main([str(source), "-o", str(out), "--sentences", f"2,{count}"]) == 0
    with pytest.raises(ConlluError, match="HEAD 7"):
        render_file(source, out, ranges=[(count + 1, count + 1)])


def test_parse_selection():
    assert parse_selection("1-20") == [(1, 20)]
    assert parse_selection("3, 7-9") == [(3, 3), (7, 9)]
    for bad in ("0", "5-3", "a", "1-", "", "\u0663", "1-\u0663"):  # Arabic-Indic 3: not N
        with pytest.raises(ValueError, match="--sentences"):
            parse_selection(bad)


def test_cli_refuses_an_empty_selection_rather_than_drawing_every_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = tmp_path / "trees.html"
    assert main([str(TINY_CONLLU), "-o", str(out), "--sentences", ""]) == 2
    assert "--sentences ''" in capsys.readouterr().err
    assert not out.exists()


def test_cli_writes_the_chosen_sentences(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "trees.html"
    assert main([str(TINY_CONLLU), "-o", str(out), "--sentences", "2-3,7"]) == 0
    page = out.read_text(encoding="utf-8")
    assert re.findall(r'<span class="id">([^<]*)</span>', page) == [
        "tiny-2-nonprojective",
        "tiny-3-multiword",
        "tiny-7-one-word",
    ]
    assert "non-projective" in page
    assert "<script" not in page
    assert "http://" not in page.replace(SVG[1:-1], "")
    assert capsys.readouterr().out.strip() == f"{out}: 3 sentence(s)"
    assert [p.name for p in tmp_path.iterdir()] == ["trees.html"]  # no temporary file left


def test_chosen_sentences_keep_their_numbers_in_the_file(tmp_path: Path) -> None:
    # Without a sent_id, --sentences 2-3,7 captioned them #1 to #3 and linked #sentence-1..3.
    source = tmp_path / "plain.conllu"
    text = TINY_CONLLU.read_text(encoding="utf-8")
    source.write_text(re.sub(r"# sent_id = .*\n", "", text), encoding="utf-8")
    out = tmp_path / "trees.html"
    assert main([str(source), "-o", str(out), "--sentences", "2-3,7"]) == 0
    page = out.read_text(encoding="utf-8")
    assert re.findall(r'<span class="id">([^<]*)</span>', page) == ["#2", "#3", "#7"]
    assert re.findall(r'<figure id="([^"]*)"', page) == ["sentence-2", "sentence-3", "sentence-7"]


def test_cli_with_gold_counts_the_errors(tmp_path: Path):
    sentences = list(read_conllu(TINY_CONLLU))
    sentences[0] = sentences[0].with_tree([2, 3, 0, 2], ["det", "obj", "root", "punct"])
    write_conllu(tmp_path / "pred.conllu", sentences)
    out = tmp_path / "trees.html"
    assert main([str(tmp_path / "pred.conllu"), "-o", str(out), "--gold", str(TINY_CONLLU)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "heads 3/4, labelled 2/4" in page
    assert 'class="legend"' in page
    assert page.count('class="arc wrong-head"') == 1
    assert page.count('class="arc gold"') == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1\tA\t_\t_\t_\t_\t0\troot\t_\n\n", r"bad.conllu:1: expected 10 tab-separated columns"),
        ("1\tA\t_\t_\t_\t_\tx\troot\t_\t_\n\n", r"bad.conllu:1: HEAD 'x' is not an integer"),
    ],
)
def test_cli_reports_bad_input_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
):
    bad = tmp_path / "bad.conllu"
    bad.write_text(content, encoding="utf-8")
    out = tmp_path / "trees.html"
    assert main([str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert re.search(message, err)
    assert not out.exists()


def test_cli_reports_a_short_gold_file_a_missing_file_and_an_empty_selection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    short = tmp_path / "short.conllu"
    write_conllu(short, list(read_conllu(TINY_CONLLU))[:2])
    out = str(tmp_path / "trees.html")
    assert main([str(TINY_CONLLU), "-o", out, "--gold", str(short)]) == 2
    assert "short.conllu: no sentence 3" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.conllu"), "-o", out]) == 2
    assert "missing.conllu:0: no such file" in capsys.readouterr().err
    assert main([str(TINY_CONLLU), "-o", out, "--sentences", "50-60"]) == 2
    assert "no sentence in the selected range 50-60" in capsys.readouterr().err
    assert main([str(TINY_CONLLU), "-o", str(tmp_path / "no" / "dir.html")]) == 2
    assert "error: " in capsys.readouterr().err
    assert not (tmp_path / "trees.html").exists()


def test_cli_reads_standard_input_for_a_dash(tmp_path: Path):
    """``render - -o OUT`` said "-:0: no such file"."""
    out = tmp_path / "trees.html"
    result = subprocess.run(
        [sys.executable, "-m", "biaffine.render", "-", "-o", str(out), "--sentences", "2"],
        input=TINY_CONLLU.read_bytes(),
        capture_output=True,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8").count("<svg") == 1
    refused = subprocess.run(
        [sys.executable, "-m", "biaffine.render", str(TINY_CONLLU), "-o", str(out), "--gold", "-"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert refused.returncode == 2
    assert refused.stderr == "error: --gold -: the gold file cannot be read from stdin\n"


def test_cli_runs_as_a_module(tmp_path: Path):
    out = tmp_path / "trees.html"
    result = subprocess.run(
        ["python", "-m", "biaffine.render", str(TINY_CONLLU), "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8").count("<svg") == 7


# --- In a real browser ------------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium binary on PATH (Debian: apt-get install -y chromium)")


def _screenshot(html: Path, width: int, height: int) -> np.ndarray:
    """uint8[height, width, 3]: the page as headless Chromium draws it."""
    image_module = pytest.importorskip("PIL.Image", reason="Pillow is needed to read the PNG")
    png = html.with_suffix(".png")
    command = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--force-device-scale-factor=1", f"--user-data-dir={html.parent / 'profile'}",
        f"--window-size={width},{height}", f"--screenshot={png}", html.as_uri(),
    ]  # fmt: skip
    subprocess.run(command, capture_output=True, timeout=120, check=True)
    with image_module.open(png) as image:
        return np.asarray(image.convert("RGB"))


def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)])


def test_browser_draws_every_arc_where_the_svg_puts_it(tmp_path: Path):
    gold = list(read_conllu(TINY_CONLLU))[1]  # non-projective
    heads, rels = list(gold.heads), list(gold.deprels)
    heads[7], rels[1] = 7, "nsubj"  # "today" on the wrong head, "hearing" with the wrong label
    pred = gold.with_tree(heads, rels)
    svg = sentence_svg(pred, gold)
    page = tmp_path / "tree.html"  # the SVG alone at the page's top left corner
    page.write_text(f'<!DOCTYPE html><body style="margin:0">{svg}</body>', encoding="utf-8")
    pixels = _screenshot(page, 800, 300).astype(int)
    _, arcs, boxes = _drawn(svg)

    def hidden(x: float, y: float) -> bool:  # behind a label's white box
        return any(bx <= x <= bx + bw and by <= y <= by + bh for bx, by, bw, bh in boxes)

    colours = set()
    for dependent, arc in arcs.items():
        colours.add(arc["colour"])
        (x_head, y_end), (x_tip, y_tip) = arc["points"][0], arc["tip"]
        legs = [x_head] if arc["head"] == 0 else [x_head, x_tip]
        for x in legs:  # the vertical lines, sampled every 2 pixels
            for y in range(int(arc["top"]) + 6, int(y_end) - 8, 2):
                if not hidden(x, y):
                    seen = pixels[y, int(x)]
                    assert np.abs(seen - _rgb(arc["colour"])).max() < 60, (dependent, x, y, seen)
        assert np.abs(pixels[int(y_tip) - 3, int(x_tip)] - _rgb(arc["colour"])).max() < 60
    assert {COLOURS["wrong-head"], COLOURS["wrong-label"], COLOURS["correct"]} <= colours
    white = (pixels == 255).all(axis=2)
    assert white[:, 760:].all()  # nothing drawn right of the tree


def test_browser_draws_the_whole_tiny_treebank(tmp_path: Path):
    out = tmp_path / "tiny.html"
    assert main([str(TINY_CONLLU), "-o", str(out)]) == 0
    pixels = _screenshot(out, 1000, 1400)
    ink = (pixels < 128).all(axis=2)  # dark: words and black arcs
    assert ink.mean() > 0.01
    rows = np.flatnonzero(ink.any(axis=1))
    assert rows.max() - rows.min() > 1000  # seven figures, one under the other
    # Vertical dark runs of 30 pixels are arc legs or ROOT arrows (text strokes are shorter).
    runs = np.lib.stride_tricks.sliding_window_view(ink, 30, axis=0).all(axis=-1)
    assert runs.any(axis=0).sum() >= 10


def test_the_page_gets_the_umasks_mode_not_0600(tmp_path: Path):
    out = tmp_path / "trees.html"
    old = os.umask(0o022)
    try:
        render_file(TINY_CONLLU, out)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644


def test_a_named_pipe_gets_the_page_and_stays_a_pipe(tmp_path: Path):
    fifo = tmp_path / "trees.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text("utf-8")), daemon=True)
    reader.start()
    assert render_file(TINY_CONLLU, fifo) == 7
    reader.join(timeout=60)
    assert not reader.is_alive(), "the reader never saw the end of the pipe"
    assert got[0].count("<svg") == 7
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_cli_to_dev_stdout_writes_only_the_page_there(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
):
    # A private link like /dev/stdout: were the code wrong, it would replace only this link.
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")
    assert main([str(TINY_CONLLU), "-o", str(stdout)]) == 0
    out, err = capfd.readouterr()
    assert out.startswith("<!DOCTYPE html>")
    assert out.count("<svg") == 7
    assert err == f"{stdout}: 7 sentence(s)\n"
    assert stdout.is_symlink()


def render_command(source: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``python -m biaffine.render SOURCE ARGS | head -c 15`` in bash with pipefail."""
    command = [sys.executable, "-m", "biaffine.render", str(source), *args]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" | head -c 15', "bash", *command],
        cwd=cwd, env=env, capture_output=True, check=False,
    )  # fmt: skip


def test_dash_writes_the_page_to_standard_output_and_a_closed_pipe_ends_quietly(
    tmp_path: Path,
) -> None:
    # "-o -" wrote a file named "-"; a reader closing the pipe was "error: [Errno 32] ...".
    big = tmp_path / "big.conllu"  # a page longer than the pipe holds
    big.write_text(TINY_CONLLU.read_text(encoding="utf-8") * 200, encoding="utf-8")
    (tmp_path / "run").mkdir()
    done = render_command(big, "-o", "-", cwd=tmp_path / "run")
    assert (done.returncode, done.stdout, done.stderr) == (141, b"<!DOCTYPE html>", b"")
    assert list((tmp_path / "run").iterdir()) == []
    done = render_command(TINY_CONLLU, "-o", "-", cwd=tmp_path / "run")
    assert (done.returncode, done.stderr) == (0, b"-: 7 sentence(s)\n")
    assert list((tmp_path / "run").iterdir()) == []


def test_a_full_device_is_named(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    done = render_command(TINY_CONLLU, "-o", "/dev/full", cwd=tmp_path)
    assert done.stderr.decode() == "error: /dev/full: No space left on device\n"
