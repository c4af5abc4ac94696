"""predict.py's options: probabilities in MISC, k-best variants, given heads kept; their errors."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import TINY_PARSER, save_model, split_options

import decoding
from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings
from biaffine.nn import Encoder
from biaffine.parsers import TransitionParser
from biaffine.predict_options import bracketed_lists, parse_columns
from biaffine.predicting import PredictOptions, predict

ROOT = Path(__file__).parents[2]
TINY_CONLLU = ROOT / "tests" / "data" / "tiny.conllu"
ADDED_COMMENTS = ("# tree_log_prob = ", "# kbest_rank = ", "# kbest_score = ")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def run_predict(checkpoint_path: Path, tmp_path: Path, source: Path = TINY_CONLLU, **kwargs):
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}.conllu"
    result = predict(checkpoint_path, source, out, threads=1, **kwargs)
    return result, out


def masked(text: str, *, drop_boundaries: bool = False) -> list[str]:
    """Lines without the comments the options add; word lines without HEAD, DEPREL and MISC."""
    lines = []
    for line in text.splitlines():
        if line.startswith(ADDED_COMMENTS):
            continue
        if drop_boundaries and line.startswith(("# newdoc", "# newpar")):
            continue
        cols = line.split("\t")
        if cols[0].isdigit():
            cols[6], cols[7], cols[9] = "*", "*", "*"
        lines.append("\t".join(cols))
    return lines


def misc_items(sentence: Sentence) -> list[dict[str, str]]:
    rows = [sentence.lines[k].rstrip("\n").split("\t")[9] for k in sentence.word_lines]
    return [dict(item.split("=", 1) for item in row.split("|") if "=" in item) for row in rows]


# --- probabilities=true ------------------------------------------------------------------------


@pytest.mark.parametrize("decoder", [DecoderSettings("mst"), DecoderSettings("eisner")])
def test_misc_probabilities_equal_the_api_marginals(graph_checkpoint, tmp_path, decoder) -> None:
    options = PredictOptions(probabilities=True)
    _, out = run_predict(graph_checkpoint, tmp_path, decoder=decoder, options=options)
    _, plain = run_predict(graph_checkpoint, tmp_path, decoder=decoder)
    name = decoder.algorithm
    expected = Parser.load(graph_checkpoint).parse(
        TINY_CONLLU.read_text(), decoder=name, probabilities=True
    )
    written = list(read_conllu(out, require_trees=True))
    for tree, sentence, given in zip(expected, written, read_conllu(TINY_CONLLU), strict=True):
        assert sentence.heads == tree.heads
        assert sentence.deprels == tree.deprels
        items = misc_items(sentence)
        assert [float(i["HeadProb"]) for i in items] == pytest.approx(tree.head_probs, abs=5e-5)
        assert [float(i["DeprelProb"]) for i in items] == pytest.approx(tree.label_probs, abs=5e-5)
        assert float(sentence.metadata["tree_log_prob"]) == pytest.approx(tree.log_prob, abs=5e-5)
        for ours, theirs in zip(items, misc_items(given), strict=True):
            assert list(ours)[: len(theirs)] == list(theirs)  # kept, in order, before ours
            assert list(ours)[len(theirs) :] == ["HeadProb", "DeprelProb"]
    assert masked(out.read_text()) == masked(TINY_CONLLU.read_text())
    assert [s.heads for s in written] == [s.heads for s in read_conllu(plain)]


def test_misc_bare_items_and_underscores(graph_checkpoint, tmp_path) -> None:
    _, out = run_predict(graph_checkpoint, tmp_path, options=PredictOptions(probabilities=True))
    lines = [line.split("\t") for line in out.read_text().splitlines()]
    rows = [cols[9] for cols in lines if cols[0].isdigit()]  # words, not ranges or empty nodes
    assert "Gloss=ten=thousand|Flag|Translit=10 000|HeadProb=" in "\n".join(rows)
    assert all("|HeadProb=" in row or row.startswith("HeadProb=") for row in rows)


# --- kbest=K -----------------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["mst", "eisner"])
def test_kbest_variants_best_first_rank_one_is_the_plain_parse(
    graph_checkpoint, tmp_path, algorithm
) -> None:
    decoder = DecoderSettings(algorithm)
    options = PredictOptions(kbest=3)
    result, out = run_predict(
        graph_checkpoint, tmp_path, decoder=decoder, options=options, evaluate=True
    )
    plain_result, plain = run_predict(graph_checkpoint, tmp_path, decoder=decoder, evaluate=True)
    assert result.scores == plain_result.scores  # eval scores the rank-1 trees
    assert result.n_sentences == 7
    variants = list(read_conllu(out, require_trees=True))
    groups: list[list[Sentence]] = []
    for sentence in variants:
        rank = int(sentence.metadata["kbest_rank"])
        if rank == 1:
            groups.append([])
        assert rank == len(groups[-1]) + 1
        groups[-1].append(sentence)
    inputs = list(read_conllu(TINY_CONLLU))
    assert [len(g) for g in groups] == [3, 3, 3, 3, 3, 3, 1]  # a 1-word sentence has one tree
    for group, best, given in zip(groups, read_conllu(plain), inputs, strict=True):
        assert (group[0].heads, group[0].deprels) == (best.heads, best.deprels)
        scores = [float(s.metadata["kbest_score"]) for s in group]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(s.heads) for s in group}) == len(group)
        for sentence in group:
            heads = np.array([-1, *sentence.heads])
            assert decoding.is_tree(heads, projective=algorithm == "eisner")
            assert masked("".join(sentence.lines), drop_boundaries=True) == masked(
                "".join(given.lines), drop_boundaries=True
            )
    best_lines = "".join("".join(g[0].lines) for g in groups)
    assert masked(best_lines) == masked(TINY_CONLLU.read_text())  # rank 1 keeps newdoc/newpar
    later = "".join("".join(s.lines) for g in groups for s in g[1:])
    assert "# newdoc" not in later
    assert "# newpar" not in later


def test_kbest_scores_are_head_log_probabilities(graph_checkpoint, tmp_path) -> None:
    _, out = run_predict(graph_checkpoint, tmp_path, options=PredictOptions(kbest=2))
    parser = Parser.load(graph_checkpoint)
    expected = parser.kbest(TINY_CONLLU.read_text(), 2)
    written = list(read_conllu(out))
    flat = [tree for trees in expected for tree in trees]
    assert [float(s.metadata["kbest_score"]) for s in written] == pytest.approx(
        [t.log_prob for t in flat], abs=5e-5
    )
    assert [s.heads for s in written] == [t.heads for t in flat]


# --- keep_given_heads=true ---------------------------------------------------------------------


def partial_input(tmp_path: Path, keep: int = 2) -> Path:
    """tiny.conllu with HEAD and DEPREL of every word whose ID is not a multiple of ``keep``
    set to ``_`` (the others keep their gold values)."""
    lines = []
    for line in TINY_CONLLU.read_text().splitlines(keepends=True):
        cols = line.split("\t")
        if cols[0].isdigit() and int(cols[0]) % keep:
            cols[6:8] = ["_", "_"]
        lines.append("\t".join(cols))
    path = tmp_path / "partial.conllu"
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("algorithm", ["mst", "eisner"])
def test_given_heads_are_kept_and_the_rest_equals_parse_constrained(
    graph_checkpoint, tmp_path, algorithm
) -> None:
    source = partial_input(tmp_path)
    inputs = list(read_conllu(source))
    assert all(s.heads is None for s in inputs)  # partial: no gold trees to score
    given = [s.given_heads() for s in inputs]
    assert any(h is not None for heads in given for h in heads)
    options = PredictOptions(keep_given_heads=True)
    decoder = DecoderSettings(algorithm)
    _, out = run_predict(
        graph_checkpoint, tmp_path, source, decoder=decoder, options=options, chunk_sentences=2
    )
    written = list(read_conllu(out, require_trees=True))
    for heads, sentence in zip(given, written, strict=True):
        assert all(h is None or h == got for h, got in zip(heads, sentence.heads, strict=True))
        assert decoding.is_tree(np.array([-1, *sentence.heads]), projective=algorithm == "eisner")
    expected = Parser.load(graph_checkpoint).parse_constrained(inputs, given, decoder=algorithm)
    assert [s.heads for s in written] == [t.heads for t in expected]
    assert [s.deprels for s in written] == [t.deprels for t in expected]
    assert masked(out.read_text()) == masked(source.read_text())


def test_eval_of_a_partial_input_still_finds_no_gold(graph_checkpoint, tmp_path, caplog) -> None:
    source = partial_input(tmp_path)
    options = PredictOptions(keep_given_heads=True)
    result, _ = run_predict(graph_checkpoint, tmp_path, source, options=options, evaluate=True)
    assert result.scores is None
    assert (
        "not every sentence of the input has a gold tree (a HEAD '_', or text, which has "
        "none): nothing scored" in caplog.text
    )


# --- errors: one line, exit status 2 -----------------------------------------------------------


@pytest.fixture(scope="module")
def transition_checkpoint(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs) -> Path:
    torch.manual_seed(0)
    encoder_options, parser_options = split_options(TINY_PARSER)
    encoder = Encoder(vocabs, **encoder_options)
    model = TransitionParser(vocabs, encoder, system="arc_eager", **parser_options)
    path = tmp_path_factory.mktemp("transition") / "best.pt"
    save_model(path, model, vocabs)
    return path


def user_error(capsys, checkpoint_path: Path, source: Path, out: Path, **kwargs) -> str:
    """The one stderr line of a predict call that fails as predict.py's would (status 2)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        report_user_errors(lambda: predict(checkpoint_path, source, out, threads=1, **kwargs))
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: ")
    return err.removeprefix("error: ").rstrip("\n")


SETTING_ERRORS = {
    "kbest-0": ({"options": PredictOptions(kbest=0)}, "kbest=0 must be an integer >= 1"),
    "kbest-text": ({"options": PredictOptions(kbest="3")}, "kbest='3' must be an integer"),
    "kbest-bool": ({"options": PredictOptions(kbest=True)}, "kbest=True must be an integer"),
    "probabilities-yes": (
        {"options": PredictOptions(probabilities="yes")},
        "probabilities='yes' must be true or false",
    ),
    "kbest-greedy": (
        {"options": PredictOptions(kbest=2), "decoder": DecoderSettings("greedy")},
        "kbest=2 needs decoder=mst, mst_multiroot or eisner, not greedy",
    ),
    "given-greedy": (
        {"options": PredictOptions(keep_given_heads=True), "decoder": DecoderSettings("greedy")},
        "keep_given_heads=true needs decoder=mst, mst_multiroot or eisner, not greedy",
    ),
    "given-text": (
        {"options": PredictOptions(keep_given_heads=True), "input_format": "text"},
        "keep_given_heads=true reads the HEAD column of CoNLL-U, which format=text lacks",
    ),
    "probabilities-kbest": (
        {"options": PredictOptions(probabilities=True, kbest=2)},
        "probabilities=true and kbest=2 do not combine: the k best trees carry their own",
    ),
    "kbest-given": (
        {"options": PredictOptions(kbest=2, keep_given_heads=True)},
        "kbest=2 and keep_given_heads=true do not combine: there is no constrained k-best",
    ),
    "probabilities-given": (
        {"options": PredictOptions(probabilities=True, keep_given_heads=True)},
        "probabilities=true and keep_given_heads=true do not combine",
    ),
}


@pytest.mark.parametrize("kind", SETTING_ERRORS)
def test_bad_settings_are_one_line_errors(graph_checkpoint, tmp_path, capsys, kind) -> None:
    kwargs, message = SETTING_ERRORS[kind]
    out = tmp_path / "out.conllu"
    assert user_error(capsys, graph_checkpoint, TINY_CONLLU, out, **kwargs).startswith(message)
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "name"),
    [
        (PredictOptions(kbest=2), "kbest=2"),
        (PredictOptions(keep_given_heads=True), "keep_given_heads=true"),
    ],
)
def test_options_need_a_graph_parser(transition_checkpoint, tmp_path, capsys, options, name):
    err = user_error(capsys, transition_checkpoint, TINY_CONLLU, tmp_path / "o", options=options)
    assert (
        err
        == f"{name} needs a graph parser (arc scores); this checkpoint holds a transition parser"
    )


@pytest.mark.parametrize("beam", [1, 4])
def test_transition_probabilities_are_label_and_path_probabilities(
    transition_checkpoint, tmp_path, beam
) -> None:
    decoder = DecoderSettings(search="beam", beam_size=beam)
    options = PredictOptions(probabilities=True)
    _, out = run_predict(transition_checkpoint, tmp_path, decoder=decoder, options=options)
    written = list(read_conllu(out))
    api = Parser.load(transition_checkpoint, threads=1)
    trees = api.parse(
        list(read_conllu(TINY_CONLLU)), search="beam", beam_size=beam, probabilities=True
    )
    for sentence, tree in zip(written, trees, strict=True):
        assert sentence.heads == tree.heads
        comment = f"# transition_path_log_prob = {tree.path_log_prob:.4f}"
        assert comment in "".join(sentence.lines)
        assert tree.path_log_prob <= 0
        items = misc_items(sentence)
        assert [float(item["DeprelProb"]) for item in items] == pytest.approx(
            tree.label_probs, abs=5e-5
        )
        assert all("HeadProb" not in item for item in items)  # no tree distribution here
        assert all(0 < p <= 1 for p in tree.label_probs)


def with_heads(tmp_path: Path, sent_id: str, heads: dict[int, str]) -> tuple[Path, int]:
    """tiny.conllu with some HEAD cells of one sentence replaced; the sentence's first line."""
    lines = TINY_CONLLU.read_text().splitlines(keepends=True)
    start = lines.index(f"# sent_id = {sent_id}\n")
    while start > 0 and lines[start - 1].strip():
        start -= 1
    k = start
    while lines[k].strip():
        cols = lines[k].split("\t")
        if cols[0].isdigit() and int(cols[0]) in heads:
            cols[6] = heads[int(cols[0])]
            lines[k] = "\t".join(cols)
        k += 1
    path = tmp_path / "given.conllu"
    path.write_text("".join(lines))
    return path, start + 1


GIVEN_HEAD_ERRORS = {
    "cycle": ({1: "2", 2: "1", 3: "_", 4: "_"}, "fixed heads form the cycle"),
    "two-roots": ({1: "0", 2: "_", 3: "0", 4: "_"}, "words 1 and 3 are fixed on ROOT"),
    "own-head": ({1: "_", 2: "2", 3: "_", 4: "_"}, "word 2: fixed head 2 is the word itself"),
}


@pytest.mark.parametrize("kind", GIVEN_HEAD_ERRORS)
def test_given_heads_without_a_tree_name_file_and_line(graph_checkpoint, tmp_path, capsys, kind):
    heads, problem = GIVEN_HEAD_ERRORS[kind]
    source, line = with_heads(tmp_path, "tiny-1", heads)
    out = tmp_path / "out.conllu"
    options = PredictOptions(keep_given_heads=True)
    err = user_error(capsys, graph_checkpoint, source, out, options=options)
    assert err.startswith(f"{source}:{line}: ")
    assert problem in err
    assert not out.exists()  # the atomic output is not written


def test_a_given_head_outside_the_sentence_names_its_line(graph_checkpoint, tmp_path, capsys):
    source, line = with_heads(tmp_path, "tiny-1", {2: "7"})
    options = PredictOptions(keep_given_heads=True)
    err = user_error(capsys, graph_checkpoint, source, tmp_path / "o", options=options)
    assert err == f"{source}:{line + 5}: HEAD 7 of word 2 not in 0..4"  # 4 comment lines first


# --- through predict.py: stdin to stdout -------------------------------------------------------


def run(args: list[str], cwd: Path, stdin: str, status: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "HYDRA_FULL_ERROR": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "predict.py"), *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == status, done.stderr[-3000:]
    return done


def test_predict_py_streams_kbest_and_refuses_bad_options(graph_checkpoint, tmp_path) -> None:
    args = [f"checkpoint={graph_checkpoint}", "input=-", "threads=1", "chunk_sentences=2"]
    done = run([*args, "kbest=2"], tmp_path, TINY_CONLLU.read_text(), status=0)
    _, expected = run_predict(graph_checkpoint, tmp_path, options=PredictOptions(kbest=2))
    assert done.stdout == expected.read_text()
    refused = run([*args, "kbest=2", "decoder=greedy"], tmp_path, "", status=2)
    assert refused.stderr == (
        "error: kbest=2 needs decoder=mst, mst_multiroot or eisner, not greedy "
        "(greedy output need not be a tree)\n"
    )
    sentences = list(read_conllu(io.StringIO(done.stdout)))
    assert len(sentences) == 13


def test_overwrite_without_columns_is_refused_not_ignored(graph_checkpoint, tmp_path) -> None:
    # It did nothing: eval=true then scored the input's gold tags against themselves, 100.00.
    args = [f"checkpoint={graph_checkpoint}", "input=-", "threads=1", "overwrite_columns=true"]
    refused = run(args, tmp_path, TINY_CONLLU.read_text(), status=2)
    assert refused.stderr == (
        "error: overwrite_columns=true writes over the cells of the columns= asked for, and "
        "none is: give columns= too (columns=all for every column the model tags)\n"
    )
    parser = Parser.load(graph_checkpoint, threads=1)
    words = [["The", "cat", "sat"]]
    calls = [
        lambda: parser.parse(words, overwrite=True),
        lambda: parser.kbest(words, 2, overwrite=True),
        lambda: parser.parse_constrained(words, [[2, 0, None]], overwrite=True),
        lambda: parser.parse(words, columns=[], overwrite=True),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=r"^overwrite=True writes over the cells of the"):
            call()


def test_a_comma_list_of_columns_is_read_as_a_list_not_a_sweep(graph_checkpoint, tmp_path) -> None:
    # Hydra stopped at columns=upos,xpos with its five-line "Ambiguous value" message, exit 1.
    args = [f"checkpoint={graph_checkpoint}", "input=-", "threads=1"]
    refused = run([*args, "columns=upos,xpos"], tmp_path, TINY_CONLLU.read_text(), status=2)
    assert refused.stderr.endswith(
        "error: columns=upos,xpos: this model has no tagger for upos, xpos "
        "(train with the column's loss weight > 0)\n"
    )
    assert bracketed_lists(["columns=upos,lemma", "columns='upos,lemma'", "columns=[a,b]"]) == [
        "columns=[upos,lemma]",
        "columns='upos,lemma'",
        "columns=[a,b]",
    ]
    assert bracketed_lists(["columns=upos", "input=a,b.conllu", "+columns=x,y"]) == [
        "columns=upos",
        "input=a,b.conllu",
        "+columns=x,y",
    ]
    with pytest.raises(ValueError, match=r"^columns=\[all,upos\]: all stands alone"):
        parse_columns(["all", "upos"])


def test_column_lists_with_an_empty_name_or_repeats_are_read_alike() -> None:
    # columns=upos, was Hydra's grammar error quoting brackets nobody typed; all,all was refused
    # where upos,upos is upos.
    assert bracketed_lists(["columns=upos,", "columns=,upos,,x", "columns=upos, "]) == [
        "columns='upos,'",
        "columns=',upos,,x'",
        "columns='upos, '",  # an item of spaces: it was Hydra's message on brackets too
    ]
    for spelled in ["upos,", ",upos", "upos,,lemma", "upos, "]:
        with pytest.raises(ValueError, match=rf"^columns={spelled}: an empty column name$"):
            parse_columns(spelled)
    assert parse_columns(["all", "ALL"]) == parse_columns("all")
    assert parse_columns("upos, UPOS,lemma") == ("upos", "lemma")


def test_predict_py_ends_quietly_when_its_reader_closes_the_pipe(tmp_path) -> None:
    # It printed "error: [Errno 32] Broken pipe" and exited 2 under `predict.py ... | head`.
    flood = (
        "from biaffine.cli import report_user_errors\n"
        "report_user_errors(lambda: [print('x' * 99) for _ in range(10**6)])"
    )
    with subprocess.Popen(
        [sys.executable, "-c", flood],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout.readline() == "x" * 99 + "\n"
        child.stdout.close()
        assert child.wait(timeout=60) == 141
        assert child.stderr.read() == ""


def test_a_refused_kbest_names_the_sentences_file_and_line(
    graph_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each sentence is searched alone, so every refusal said "sentence 0", whichever it was.
    from decoding import _kbest

    tiny = Path(__file__).parents[1] / "data" / "tiny.conllu"
    sentences = list(read_conllu(tiny))
    # Lawler's search needs k (n+1)^2 bytes a sentence here: only the longest is refused.
    monkeypatch.setattr(_kbest, "_LAWLER_TREE_BYTES", 0)
    monkeypatch.setattr(_kbest, "_LAWLER_SOLVED_BYTES", 1)
    monkeypatch.setattr(_kbest, "SMALLEST_REFUSED", 0)
    needs = sorted(2 * (len(sentence) + 1) ** 2 for sentence in sentences)
    assert needs[-1] > needs[-2]
    monkeypatch.setattr(_kbest, "_memory_bytes", lambda: 2 * needs[-2])
    longest = max(sentences, key=len)
    assert longest is not sentences[0]
    where = f"{longest.source}:{longest.line}"
    with pytest.raises(ValueError, match=rf"^{where}: k=2 asks for 2 trees, whose search"):
        Parser.load(graph_checkpoint).kbest(sentences, 2)
