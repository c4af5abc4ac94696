"""The tree viewer on hostile and unusual text: markup, control characters, bidi, odd sizes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from biaffine.data.conllu import ConlluError, Sentence, read_conllu
from biaffine.render import main, render_file, render_page, sentence_svg

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</style>",
    "&amp;",
    "it's",
    "<!--",
    "]]>",
    "a\u2028\u2029b",  # line and paragraph separators (a cell of them alone is refused)
    "שלום",
    "🙂👨\u200d👩\u200d👧",
]
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "figure", "figcaption"}
ALLOWED_TAGS |= {"span", "bdi", "div", "svg", "rect", "text", "g", "path"}


def word_line(i: int, form: str, head: int, *, cells: str = "_\t_\t_\t_", rel: str = "dep") -> str:
    return f"{i}\t{form}\t{cells}\t{head}\t{rel}\t_\t_\n"


class Tags(HTMLParser):
    """The start tags and attribute names an HTML parser finds in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes |= {name for name, _ in attrs}


def html_tags(page: str) -> Tags:
    parser = Tags()
    parser.feed(page)
    parser.close()
    return parser


def test_hostile_strings_in_every_column_and_comment_stay_text(tmp_path: Path) -> None:
    # Every string a user controls: FORM, LEMMA, UPOS, XPOS, FEATS, DEPREL, MISC, comments,
    # multiword token form, and the file name.
    lines = [f"# sent_id = {HOSTILE[1]}\n", f"# text = {' '.join(HOSTILE)}\n"]
    lines.append(f"1-2\t{HOSTILE[0]}\t_\t_\t_\t_\t_\t_\t_\t_\n")
    for i, form in enumerate(HOSTILE, 1):
        cells = f"{form}\t{form}\t{form}\t{form}"
        lines.append(
            f"{i}\t{form}\t{cells}\t{0 if i == 1 else 1}\t{'root' if i == 1 else form}\t_\t{form}\n"
        )
    source = tmp_path / '<b>x"&.conllu'
    source.write_text("".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "page.html"
    assert render_file(source, output) == 1
    page = output.read_text(encoding="utf-8")
    found = html_tags(page)
    assert set(found.tags) <= ALLOWED_TAGS
    assert not {"img", "script"} & set(found.tags)
    assert not {a for a in found.attributes if a.startswith("on")}
    for markup in ("<script", "<img", "<!--"):
        assert markup not in page
    assert page.count("</style>") == 1
    [svg] = re.findall(r"<svg.*?</svg>", page, re.S)
    texts = ["".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text")]
    for form in HOSTILE:
        assert form in texts


@pytest.mark.parametrize("bad", ["\x00", "\x0b", "\x1b", "\x7f\x0c", "\ufffe", "\uffff"])
def test_control_characters_leave_the_svg_well_formed(tmp_path: Path, bad: str) -> None:
    # CoNLL-U columns may hold them (only TAB and line breaks are excluded), XML may not:
    # the SVG promised to be well-formed must still parse, the character shown as U+FFFD.
    source = tmp_path / "in.conllu"
    text = f"# text = a{bad}b\n" + word_line(1, f"a{bad}b", 0, rel="root") + "\n"
    source.write_bytes(text.encode("utf-8"))
    [sentence] = read_conllu(source)
    root = ET.fromstring(sentence_svg(sentence))
    [form] = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "form"]
    assert form == "a" + "".join("\ufffd" if c != "\x7f" else c for c in bad) + "b"
    page = render_page([(sentence, None)])
    for control in "\x00\x0b\x1b":
        assert control not in page


def test_a_lone_surrogate_from_python_still_makes_a_writable_page() -> None:
    sentence = Sentence(["a\ud800b"], heads=[0], deprels=["root"])
    page = render_page([(sentence, None)], title="t\udfff")
    page.encode("utf-8")  # no UnicodeEncodeError when written


def test_right_to_left_and_override_characters_are_isolated_in_the_caption(
    tmp_path: Path,
) -> None:
    # An RLO (U+202E) in `# text` or `# sent_id` would otherwise reverse the note after it
    # (file and line), and right-to-left text would pull neutral characters out of place.
    lines = [
        "# sent_id = \u202eid\n",
        "# text = \u05e9\u05dc\u05d5\u05dd \u202eevil\n",
        word_line(1, "\u05e9\u05dc\u05d5\u05dd", 0, rel="root"),
        word_line(2, "\u202eevil", 1),
        "\n",
    ]
    source = tmp_path / "in.conllu"
    source.write_text("".join(lines), encoding="utf-8")
    [sentence] = read_conllu(source)
    page = render_page([(sentence, None)])
    caption = re.search(r"<figcaption>.*</figcaption>", page).group(0)
    assert re.search(r'<bdi dir="auto"><span class="id">\u202eid</span></bdi>', caption)
    assert re.search(r'<bdi dir="auto">\u05e9\u05dc\u05d5\u05dd \u202eevil</bdi>', caption)


def test_a_multiword_range_past_the_last_word_is_one_line_of_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Drawing it indexed past the words; the reader now refuses it, naming its line.
    source = tmp_path / "in.conllu"
    source.write_text(
        word_line(1, "a", 0, rel="root")
        + "2-9\tbc\t_\t_\t_\t_\t_\t_\t_\t_\n"
        + word_line(2, "b", 1)
        + word_line(3, "c", 1)
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(ConlluError, match=r"in\.conllu:2: multiword range 2-9 ends past"):
        list(read_conllu(source))
    assert main([str(source), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert "2-9" in err


def test_a_sentence_of_300_words_and_a_file_of_5000_sentences(tmp_path: Path) -> None:
    n = 300
    heads = [0] + [(i * 7) % (i - 1) + 1 if i > 2 else 1 for i in range(2, n + 1)]
    big = Sentence([f"w{i}" for i in range(1, n + 1)], heads=heads, deprels=["dep"] * n)
    root = ET.fromstring(sentence_svg(big))
    assert len([g for g in root.iter(f"{SVG}g") if "arc" in g.get("class", "")]) == n
    source = tmp_path / "many.conllu"
    one = word_line(1, "a", 2) + word_line(2, "b", 0, rel="root") + "\n"
    source.write_text(one * 5000, encoding="utf-8")
    assert render_file(source, tmp_path / "many.html") == 5000
    assert (tmp_path / "many.html").read_text(encoding="utf-8").count("<figure ") == 5000


def test_an_empty_sentence_cannot_be_built_or_read(tmp_path: Path) -> None:
    with pytest.raises(ConlluError, match="no words"):
        Sentence([])
    source = tmp_path / "in.conllu"
    source.write_text("# text = \n\n", encoding="utf-8")
    assert main([str(source), "-o", str(tmp_path / "out.html")]) == 2


def test_a_file_whose_name_has_a_line_break_is_one_line_of_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The viewer and the evaluator printed such a file's error over two lines.
    from biaffine import evaluate

    source = tmp_path / "bad\nname.conllu"
    source.write_text("1\tx\n", encoding="utf-8")
    good = tmp_path / "good.conllu"
    good.write_text("1\tx\t_\t_\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    missing = tmp_path / "no\nsuch" / "out.html"  # an OS error names it
    for run in (
        lambda: main([str(source), "-o", str(tmp_path / "out.html")]),
        lambda: evaluate.main([str(source), str(source)]),
        lambda: main([str(good), "-o", str(missing)]),
    ):
        assert run() == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ")
        assert err.count("\n") == 1, err
