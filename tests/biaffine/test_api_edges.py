"""The Python API at its edges: odd inputs, given heads, columns, what must never change."""

from __future__ import annotations

import copy
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from biaffine.api import Parser
from biaffine.data.conllu import ConlluError, Sentence, read_conllu
from biaffine.inference import Refused
from biaffine.predict_options import PredictOptions
from biaffine.predicting import predict

ROOT = Path(__file__).parents[2]
TINY_CONLLU = ROOT / "tests" / "data" / "tiny.conllu"
WORDS = [["The", "cat", "sat", "."]]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def parser(graph_checkpoint: Path) -> Parser:
    """The tiny random graph parser: trees only, no tagger."""
    return Parser.load(graph_checkpoint, threads=1)


@pytest.fixture(scope="module")
def shipped() -> Parser:
    """The smallest shipped model, for its taggers."""
    return Parser.load("en_ewt_small", threads=1)


# Fixed heads ------------------------------------------------------------------------------


@pytest.mark.parametrize("head", [-1, -5, 5, 99])
def test_a_fixed_head_outside_the_sentence_is_refused_naming_the_word(parser, head) -> None:
    # -1 is the decoders' own mark for "free": it used to leave the word free, silently.
    with pytest.raises(ValueError, match=rf"<input>:1: word 2: fixed head {head} is not in 0\.\.4"):
        parser.parse_constrained(WORDS, [[None, head, None, None]])


def test_a_word_fixed_as_its_own_head_is_refused_naming_the_word(parser) -> None:
    # Named the decoders' argument: "fixed_heads[2]=2: a word cannot head itself".
    with pytest.raises(ValueError, match=r"^<input>:1: word 2: fixed head 2 is the word itself$"):
        parser.parse_constrained(WORDS, [[None, 2, None, None]])


@pytest.mark.parametrize("heads", [None, "2 0", 3])
def test_fixed_heads_of_a_sentence_that_are_no_list_are_refused(parser, heads) -> None:
    with pytest.raises(TypeError, match=r"fixed_heads\[0\] is a"):
        parser.parse_constrained(WORDS, [heads])


@pytest.mark.parametrize("fixed", [None, 2])
def test_fixed_heads_that_are_no_list_of_lists_are_refused(parser, fixed) -> None:
    with pytest.raises(TypeError, match=r"fixed_heads is a"):
        parser.parse_constrained(WORDS, fixed)


def test_fixed_heads_and_inputs_may_be_generators_and_are_not_changed(parser) -> None:
    fixed = [[2, None, None, 3]]
    kept = copy.deepcopy(fixed)
    [tree] = parser.parse_constrained((w for w in WORDS), (list(h) for h in fixed))
    assert tree.heads[0] == 2
    assert tree.heads[3] == 3
    assert fixed == kept


def test_given_heads_of_a_read_sentence_are_kept(parser) -> None:
    sentences = list(read_conllu(TINY_CONLLU))
    kept = copy.deepcopy(sentences)
    trees = parser.parse_constrained(sentences, [s.given_heads() for s in sentences])
    assert [t.heads for t in trees] == [s.heads for s in sentences]
    assert sentences == kept


# Inputs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "what"),
    [
        (b"1\tThe\t_\t_\t_\t_\t0\troot\t_\t_\n", "bytes"),
        (Sentence(["The", "cat"]), "Sentence"),
        (3, "int"),
    ],
)
def test_inputs_that_are_no_sentences_are_refused_naming_their_type(parser, inputs, what) -> None:
    for call in (
        parser.parse,
        lambda x: parser.kbest(x, 2),
        lambda x: parser.parse_constrained(x, []),
    ):
        with pytest.raises(TypeError, match=rf"inputs is a {what}: pass a list of sentences"):
            call(inputs)


@pytest.mark.parametrize(
    ("item", "what"),
    [(b"The cat", "bytes"), ({"The": 1, "cat": 2}, "dict"), ({"The", "cat"}, "set"), (7, "int")],
)
def test_a_sentence_that_is_no_list_of_words_is_refused(parser, item, what) -> None:
    # A dict gave its keys and a set its words in any order, as a sentence, silently.
    with pytest.raises(TypeError, match=rf"input 1 is a {what}: pass a list of words"):
        parser.parse([["A", "dog"], item])


def test_conllu_text_errors_name_the_text_not_stdin(parser) -> None:
    with pytest.raises(ConlluError, match=r"^<input>:2: "):
        parser.parse("1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n3\tcat\t_\t_\t_\t_\t_\t_\t_\t_\n")


@pytest.mark.parametrize("text", ["", "\n", "\n\n  \n"])
def test_empty_or_blank_conllu_text_holds_no_sentence_as_an_empty_list(parser, text) -> None:
    # parse([]) was [] and parse(text="") [], but parse("") said "<input>:0: no sentences found".
    assert parser.parse(text) == []
    assert parser.parse([]) == []


def test_a_form_that_is_empty_or_blank_is_refused_and_underscore_is_a_word(parser) -> None:
    for form in ("", " ", "a\tb"):
        # The message echoed the whole sentence (15,000 characters for 3,000 words), no word
        problem = re.escape(f"<input>:1: invalid FORM {form!r} for word 2")
        with pytest.raises(ConlluError, match=f"^{problem}$"):
            parser.parse([["The", form]])
    with pytest.raises(ConlluError, match=r"invalid FORM '' for word 3001$"):
        parser.parse([["w"] * 3000 + [""]])
    long = "b\t" + "x" * 100_000  # echoed whole
    with pytest.raises(ConlluError, match=r"invalid FORM 'b\\txxx+\.\.\. for word 2$") as refused:
        parser.parse([["a", long]])
    assert len(str(refused.value)) < 100
    with pytest.raises(ConlluError, match="no words"):
        parser.parse([[]])
    [tree] = parser.parse([["_", "_"]])
    assert tree.sentence.forms == ["_", "_"]
    assert parser.to_conllu([tree]).splitlines()[1].split("\t")[:2] == ["1", "_"]


def test_many_tiny_sentences_from_a_generator(parser) -> None:
    trees = parser.parse(["a"] for _ in range(3000))
    assert len(trees) == 3000
    assert {tuple(t.heads) for t in trees} == {(0,)}
    assert [t.sentence.line for t in trees[:3]] == [1, 2, 3]


# Options ----------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["upos", "all"])
def test_a_string_of_columns_is_refused_not_split_into_letters(parser, columns) -> None:
    with pytest.raises(TypeError, match=rf"columns='{columns}' is a str: pass a list"):
        parser.parse(WORDS, columns=columns)


@pytest.mark.parametrize("flag", ["probabilities", "overwrite", "root_constraint", "joint_labels"])
@pytest.mark.parametrize("value", ["no", None])
def test_yes_no_options_take_only_bools(parser, flag, value) -> None:
    # overwrite="no" overwrote the input's columns; root_constraint=None allowed many roots.
    with pytest.raises(TypeError, match=rf"{flag}={value!r} must be True or False"):
        parser.parse(WORDS, **{flag: value})


def test_unknown_columns_are_refused_in_one_line(parser) -> None:
    with pytest.raises(ValueError, match=r"columns \['UPOS'\]: predictable columns are"):
        parser.parse(WORDS, columns=["UPOS"])


# What comes back --------------------------------------------------------------------------


def test_sentences_with_multiword_tokens_and_empty_nodes_come_back_byte_for_byte(
    shipped,
) -> None:
    sentences = list(read_conllu(TINY_CONLLU))
    kept = copy.deepcopy(sentences)
    for options in ({}, {"columns": ["all"]}, {"columns": ["all"], "overwrite": True}):
        first = shipped.parse(sentences, **options)
        again = shipped.parse(sentences, **options)
        assert sentences == kept  # nothing the user passed is changed
        assert [t.sentence.lines for t in first] == [t.sentence.lines for t in again]
        changed = {6, 7} | ({2, 3, 4, 5} if options else set())
        for given, tree in zip(sentences, first, strict=True):
            assert len(given.lines) == len(tree.sentence.lines)
            for old, new in zip(given.lines, tree.sentence.lines, strict=True):
                if old[:1].isdigit() and old.split("\t")[0].isdigit():
                    cells = zip(old.split("\t"), new.split("\t"), strict=True)
                    assert {i for i, (a, b) in enumerate(cells) if a != b} <= changed
                else:  # comments, ranges, empty nodes, blank lines
                    assert old == new
            if "overwrite" not in options:  # only `_` cells are filled
                assert all(
                    g in ("_", p) for g, p in zip(given.upos, tree.sentence.upos, strict=True)
                )
    kbest = shipped.kbest(sentences[2:4], 3)
    assert sentences == kept
    assert all(len({tuple(t.heads) for t in trees}) == len(trees) for trees in kbest)


@pytest.mark.parametrize(
    ("asked", "options"),
    [
        ({"probabilities": True}, {"probabilities": True}),
        ({"probabilities": True, "columns": ["all"]}, {"probabilities": True, "columns": ("all",)}),
        ({"k": 3}, {"kbest": 3}),
    ],
)
def test_the_api_writes_what_predict_writes(shipped, tmp_path, asked, options) -> None:
    """``tree.sentence`` lacked the probabilities in MISC and comments, and k-best trees their
    rank and score, which predict.py writes: ``to_conllu`` wrote other bytes for one parse."""
    written = tmp_path / "predicted.conllu"
    model = ROOT / "models" / "en_ewt_small" / "parser.pt"
    predict(model, TINY_CONLLU, written, threads=1, options=PredictOptions(**options))
    sentences = list(read_conllu(TINY_CONLLU))
    if "k" in asked:
        trees = [tree for ranked in shipped.kbest(sentences, **asked) for tree in ranked]
    else:
        trees = shipped.parse(sentences, **asked)
    assert shipped.to_conllu(trees) == written.read_text(encoding="utf-8")


def test_duplicate_columns_predict_as_one(shipped) -> None:
    once = shipped.parse(WORDS, columns=["upos"])
    twice = shipped.parse(WORDS, columns=["upos", "upos"])
    assert shipped.to_conllu(once) == shipped.to_conllu(twice)


# Columns beside k-best trees and fixed heads ----------------------------------------------


def test_kbest_and_fixed_heads_tag_the_columns_asked_for(shipped) -> None:
    # Neither took columns=: tagged k-best trees, which predict.py writes, were out of reach.
    sentences = list(read_conllu(TINY_CONLLU))
    tagged = shipped.parse(sentences, columns=["upos", "lemma"], overwrite=True)
    ranked = shipped.kbest(sentences, 3, columns=["upos", "lemma"], overwrite=True)
    for best, trees in zip(tagged, ranked, strict=True):
        assert (trees[0].heads, trees[0].deprels) == (best.heads, best.deprels)  # the same best
        for tree in trees:  # every tree carries the sentence's columns
            assert (tree.sentence.upos, tree.sentence.lemmas) == (
                best.sentence.upos,
                best.sentence.lemmas,
            )
    fixed = [[None] * len(s) for s in sentences]
    constrained = shipped.parse_constrained(sentences, fixed, columns=["upos", "lemma"])
    kept = shipped.parse(sentences, columns=["upos", "lemma"])  # the input's cells kept
    assert [t.sentence.lines for t in constrained] == [t.sentence.lines for t in kept]
    untagged = shipped.kbest(sentences, 1)
    assert [t[0].sentence.upos for t in untagged] == [s.upos for s in sentences]
    with pytest.raises(TypeError, match=r"columns='upos' is a str"):
        shipped.kbest(sentences, 2, columns="upos")
    with pytest.raises(TypeError, match=r"overwrite='yes' must be True or False"):
        shipped.parse_constrained(sentences, fixed, columns=["upos"], overwrite="yes")


# Plain text through a parser without taggers --------------------------------------------


def test_plain_text_through_a_tree_only_parser_gives_trees(graph_checkpoint, tmp_path) -> None:
    # Plain text asked for every column, and a model without taggers refused "columns=all":
    # the checkpoints of train.py's default recipe could not parse raw text at all.
    segmenter = ROOT / "models" / "en_ewt_small" / "segmenter.pt"
    parser = Parser.load(graph_checkpoint, segmenter=segmenter, threads=1)
    [tree] = parser.parse(text="The cat sat.")
    assert tree.sentence.forms == ["The", "cat", "sat", "."]
    assert tree.sentence.upos == ["_"] * 4
    source = tmp_path / "doc.txt"
    source.write_text("The cat sat. It slept.\n", encoding="utf-8")
    options = {"input_format": "raw", "segmenter": segmenter, "threads": 1}
    predict(graph_checkpoint, source, tmp_path / "out.conllu", **options)
    assert (tmp_path / "out.conllu").read_text(encoding="utf-8").count("# text = ") == 2
    with pytest.raises(Refused, match=r"^columns=all: this model has no tagger"):
        parser.parse(text="The cat sat.", columns=["all"])  # asked for: still refused


@pytest.mark.parametrize("form", [" s", "\u00a0s", "\u3000s"])
def test_a_lemma_is_never_whitespace_alone(shipped, form) -> None:
    # A script cutting "s" left " ", and writing it failed: "invalid LEMMA ' ' for word 3".
    (tree,) = shipped.parse([["The", "two", form]], columns=["lemma"])
    assert all(lemma.strip() for lemma in tree.sentence.lemmas)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([["a", "caf\udc80"]], r"<input>:1: word 2 holds a lone surrogate \(U\+DC80\)"),
        ("1\ta\t_\t_\t_\t_\t_\t_\t_\t_\n\n1\tb\ud800\t_\t_\t_\t_\t_\t_\t_\t_\n", r"<input>:3: "),
    ],
)
def test_a_lone_surrogate_is_refused_as_raw_text_refuses_it(parser, inputs, message) -> None:
    # Parsed, and writing the CoNLL-U failed with a UnicodeEncodeError.
    with pytest.raises(ConlluError, match=message):
        parser.parse(inputs)


@pytest.mark.parametrize("name", ["EN_EWT", "en_ewt ", "En_Ewt"])
def test_a_misspelt_model_name_is_refused_with_the_installed_names(name) -> None:
    # Looked for as a file: "EN_EWT: no such checkpoint file", naming no model.
    from biaffine.installed import UnknownModelError

    with pytest.raises(UnknownModelError, match=r"installed: .*en_ewt_small"):
        Parser.load(name)


@pytest.mark.parametrize("path", [None, 5])
def test_a_model_that_is_no_name_or_path_is_refused_naming_its_type(path) -> None:
    with pytest.raises(TypeError, match=r"^path is a (NoneType|int): give a model name or a"):
        Parser.load(path)


@pytest.mark.parametrize("value", ["no", 1, None])
def test_bf16_that_is_no_bool_is_refused_before_loading(graph_checkpoint, value) -> None:
    # "no" was true: refused for the CPU's lack of bfloat16, or run in bfloat16 where it has it.
    with pytest.raises(TypeError, match=rf"^bf16={value!r} must be True or False$"):
        Parser.load(graph_checkpoint, bf16=value)
    loaded = Parser.load(graph_checkpoint)
    with pytest.raises(TypeError, match=rf"^bf16={value!r} must be True or False$"):
        Parser(loaded.model, loaded.vocabs, device=loaded.device, bf16=value)


def test_kbest_takes_a_numpy_integer_as_fixed_heads_do(parser) -> None:
    import numpy as np

    # "k=np.int64(2) must be an integer >= 1".
    assert parser.kbest(WORDS, np.int64(2)) == parser.kbest(WORDS, 2)


@pytest.mark.parametrize("given", ["kbest", "one tree"])
def test_to_conllu_refuses_what_is_no_list_of_trees_naming_it(parser, given) -> None:
    # kbest's lists per sentence were an AttributeError: 'list' object has no attribute.
    trees = parser.kbest(WORDS, 2) if given == "kbest" else parser.parse(WORDS)[0]
    with pytest.raises(TypeError, match=r"^to_conllu takes a list of ParsedTree"):
        parser.to_conllu(trees)
    (trees,) = parser.kbest(WORDS, 2)
    assert parser.to_conllu(trees).count("\n\n") == len(trees) == 2  # one of its lists


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        # TypeErrors of a comparison deep in the settings, naming nothing
        ({"beam_size": "x"}, "beam_size='x': give a whole number"),
        ({"beam_size": True}, "beam_size=True: give a whole number"),
        ({"graph_weight": None}, "graph_weight=None: give a number"),
        # named 'algorithm', which is no argument of the API
        ({"decoder": None}, "decoder=None; expected one of mst, eisner, greedy"),
        ({"decoder": ["mst"]}, "decoder=['mst']; expected one of mst, eisner, greedy"),
        # another setting's value is not rewritten
        ({"beam_size": "algorithm=2"}, "beam_size='algorithm=2': give a whole number"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_refused_by_its_name(parser, setting, message) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        parser.parse([["The", "dog"]], **setting)


def test_to_conllu_of_no_list_names_what_it_got(parser) -> None:
    with pytest.raises(TypeError, match=r"^to_conllu takes a list of ParsedTree, not a NoneType$"):
        parser.to_conllu(None)


def test_calls_from_several_threads_give_what_each_gives_alone(shipped) -> None:
    # Services keep one Parser loaded and call it from their request threads.
    text = "The cat sat on the mat. It slept.\n\nDogs bark at night."
    calls = [
        lambda: shipped.to_conllu(shipped.parse(text=text, columns=["all"])),
        lambda: shipped.to_conllu(shipped.parse([["Dogs", "bark", "."]], probabilities=True)),
        lambda: shipped.to_conllu(shipped.kbest([["It", "rained", "all", "day", "."]], 3)[0]),
        lambda: shipped.to_conllu(shipped.parse([["Birds", "sing", "."]], columns=["lemma"])),
    ]
    alone = [call() for call in calls]
    with ThreadPoolExecutor(4) as pool:
        together = [pool.submit(calls[k % 4]) for k in range(24)]
        assert [future.result(timeout=120) for future in together] == alone * 6
