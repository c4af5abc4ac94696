"""The Python API: load once, parse words, CoNLL-U or sentences; probabilities by brute force."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import decoding
from biaffine.api import Parser
from biaffine.data import columns
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.inference import parse

README = Path(__file__).parents[2] / "README.md"
TINY_CONLLU = Path(__file__).parents[1] / "data" / "tiny.conllu"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_words_text_and_sentences_parse_alike(graph_checkpoint, sentences) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    expected = parse(parser.model, parser.vocabs, sentences)
    from_sentences = parser.parse(sentences)
    from_text = parser.parse(TINY_CONLLU.read_text())
    assert [t.sentence.lines for t in from_sentences] == [s.lines for s in expected]
    assert [t.sentence.lines for t in from_text] == [s.lines for s in expected]
    assert parser.to_conllu(from_text) == "".join("".join(s.lines) for s in expected)
    from_words = parser.parse([s.forms for s in sentences])
    assert [t.heads for t in from_words] == [s.heads for s in expected]
    assert [t.deprels for t in from_words] == [s.deprels for s in expected]


def test_a_string_in_place_of_a_word_list_is_refused(graph_checkpoint) -> None:
    with pytest.raises(ValueError, match="input 0 is a string"):
        Parser.load(graph_checkpoint).parse(["The cat sat"])


def brute_force(matrix: np.ndarray, *, single_root: bool) -> dict[tuple[int, ...], float]:
    """P(tree) for every tree of one sentence, ``matrix[d, h]`` scoring h -> d."""
    n = matrix.shape[0] - 1
    weights = {}
    for heads in itertools.product(range(n + 1), repeat=n):
        vector = np.array([-1, *heads])
        if decoding.is_tree(vector, root_constraint=single_root):
            weights[heads] = math.exp(sum(matrix[d, h] for d, h in enumerate(heads, 1)))
    total = sum(weights.values())
    return {heads: w / total for heads, w in weights.items()}


@pytest.mark.parametrize("root_constraint", [True, False])
def test_probabilities_equal_brute_force(graph_checkpoint, sentences, root_constraint) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    short = [s for s in sentences if len(s) <= 6]
    assert short
    # The best tree of the arc scores alone: the tree-CRF's mode, whose probability is the max.
    trees = parser.parse(
        short, probabilities=True, root_constraint=root_constraint, joint_labels=False
    )
    batch = next(batches_by_tokens(encode(short, parser.vocabs), 10_000, shuffle=False))
    with torch.inference_mode():
        scores = parser.model(batch, tag=False)
    for row, index in enumerate(batch.indices.tolist()):
        n = len(short[index])
        matrix = scores.arc_scores[row, : n + 1, : n + 1].double().numpy()
        distribution = brute_force(matrix, single_root=root_constraint)
        tree = trees[index]
        assert tree.log_prob == pytest.approx(math.log(distribution[tuple(tree.heads)]), abs=1e-6)
        for d, h in enumerate(tree.heads, 1):
            marginal = sum(p for heads, p in distribution.items() if heads[d - 1] == h)
            assert tree.head_probs[d - 1] == pytest.approx(marginal, abs=1e-6)
        assert all(0.0 < p <= 1.0 for p in tree.label_probs)
        assert max(distribution.values()) == pytest.approx(math.exp(tree.log_prob), abs=1e-6)


def best_labelled_tree(
    heads_log_probs: np.ndarray, labels_log_probs: np.ndarray, root: int, *, single_root: bool
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The heads and labels of highest log-probability: every tree, each arc's best label.

    ``heads_log_probs[d, h]``: log P(h | d); ``labels_log_probs[d, h, l]``: log P(l | d, h).
    Given the heads, each arc's label is chosen alone: ``root`` on ROOT's arc, another elsewhere.
    """
    n = heads_log_probs.shape[0] - 1
    allowed = np.full(labels_log_probs.shape[-1], True)
    allowed[root] = False
    found = {}
    for heads in itertools.product(range(n + 1), repeat=n):
        if not decoding.is_tree(np.array([-1, *heads]), root_constraint=single_root):
            continue
        labels = tuple(
            root if h == 0 else int(np.where(allowed, labels_log_probs[d, h], -np.inf).argmax())
            for d, h in enumerate(heads, 1)
        )
        score = sum(
            heads_log_probs[d, h] + labels_log_probs[d, h, label]
            for d, (h, label) in enumerate(zip(heads, labels, strict=True), 1)
        )
        found[heads, labels] = score
    return max(found, key=found.get)


@pytest.mark.parametrize("root_constraint", [True, False])
def test_joint_labels_find_the_best_labelled_tree_by_brute_force(
    graph_checkpoint, sentences, root_constraint
) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    short = [s for s in sentences if len(s) <= 6]
    joint = parser.parse(short, root_constraint=root_constraint)
    after = parser.parse(short, root_constraint=root_constraint, joint_labels=False)
    batch = next(batches_by_tokens(encode(short, parser.vocabs), 10_000, shuffle=False))
    with torch.inference_mode():
        scores = parser.model(batch, tag=False)
        labels = parser.model.labels.all(scores.labels).double().log_softmax(-1)
    root = parser.vocabs.rels.stoi["root"]
    names = parser.vocabs.rels.itos
    differ = 0
    for row, index in enumerate(batch.indices.tolist()):
        n = len(short[index])
        heads = scores.arc_scores[row, : n + 1, : n + 1].double().log_softmax(-1).numpy()
        best = best_labelled_tree(
            heads, labels[row, : n + 1, : n + 1].numpy(), root, single_root=root_constraint
        )
        assert tuple(joint[index].heads) == best[0]
        assert joint[index].deprels == [names[label] for label in best[1]]
        differ += (after[index].heads, after[index].deprels) != (
            joint[index].heads,
            joint[index].deprels,
        )
    assert differ > 0  # the labels moved some heads: the test sees the difference


def test_greedy_output_that_is_no_tree_has_log_prob_minus_inf(graph_checkpoint) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    trees = parser.parse(TINY_CONLLU.read_text(), decoder="greedy", probabilities=True)
    for tree in trees:
        is_tree = decoding.is_tree(np.array([-1, *tree.heads]), root_constraint=False)
        assert math.isfinite(tree.log_prob) == bool(is_tree)


def test_the_readme_example_runs(graph_checkpoint, monkeypatch) -> None:
    text = README.read_text()
    block = re.search(r"## Parse from Python\n.*?```python\n(.*?)```", text, re.S)
    assert block, "README has a '## Parse from Python' section with a python block"
    monkeypatch.chdir(graph_checkpoint.parent)
    namespace: dict = {}
    exec(compile(block.group(1), "README.md", "exec"), namespace)
    assert isinstance(namespace["trees"][0].sentence, Sentence)


def test_parse_keeps_input_order_across_batches(graph_checkpoint) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    sentences = list(read_conllu(TINY_CONLLU))
    one = parser.parse(sentences, max_tokens=10_000, probabilities=True)
    many = parser.parse(sentences, max_tokens=1, probabilities=True)
    assert [t.heads for t in one] == [t.heads for t in many]
    assert np.allclose([t.log_prob for t in one], [t.log_prob for t in many])


@pytest.mark.parametrize("decoder", ["mst", "eisner"])
def test_kbest_starts_with_the_best_tree_and_goes_down(
    graph_checkpoint, sentences, decoder
) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    best = parser.parse(sentences, decoder=decoder)
    lists = parser.kbest(sentences, 4, decoder=decoder)
    for one, trees in zip(best, lists, strict=True):
        assert trees[0].heads == one.heads
        assert trees[0].deprels == one.deprels
        scores = [t.log_prob for t in trees]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(t.heads) for t in trees}) == len(trees)
        for tree in trees:
            vector = np.array([-1, *tree.heads])
            assert decoding.is_tree(vector, projective=decoder == "eisner")


def test_constrained_parsing_keeps_the_given_heads(graph_checkpoint, sentences) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    free = parser.parse(sentences)
    # Fix every word's gold head in the first half of each sentence, leave the rest free.
    fixed = [[h if i < len(s) // 2 else None for i, h in enumerate(s.heads)] for s in sentences]
    constrained = parser.parse_constrained(sentences, fixed)
    for given, tree in zip(fixed, constrained, strict=True):
        assert all(h is None or h == got for h, got in zip(given, tree.heads, strict=True))
        assert decoding.is_tree(np.array([-1, *tree.heads]))
    no_constraint = parser.parse_constrained(sentences, [[None] * len(s) for s in sentences])
    assert [t.heads for t in no_constraint] == [t.heads for t in free]


def test_constraints_that_admit_no_tree_name_the_sentence(graph_checkpoint, sentences) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    cyclic = [[None] * len(s) for s in sentences]
    cyclic[1][:2] = [2, 1]  # words 1 and 2 head each other
    where = re.escape(f"{sentences[1].source}:{sentences[1].line}")
    with pytest.raises(ValueError, match=f"^{where}: no tree satisfies the constraints"):
        parser.parse_constrained(sentences, cyclic)
    with pytest.raises(ValueError, match=r"^<input>:2: no tree satisfies the constraints"):
        parser.parse_constrained([s.forms for s in sentences], cyclic)


def test_a_plain_string_is_refused_with_what_to_pass_instead(graph_checkpoint) -> None:
    """A string is CoNLL-U text; plain words get a hint the API can follow (no format=text)."""
    parser = Parser.load(graph_checkpoint, threads=1)
    with pytest.raises(ValueError, match=r"read as CoNLL-U text.*lists of words") as raised:
        parser.parse("The cat sat.")
    assert "format=" not in str(raised.value)


@pytest.mark.parametrize("text", [123, b"The cat sat.", ["The cat sat."]])
def test_text_that_is_not_a_str_is_refused_naming_text(graph_checkpoint, text) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    with pytest.raises(TypeError, match=r"^text= must be a str of plain text, got \w+$"):
        parser.parse(text=text)


@pytest.mark.parametrize("k", [None, 0, -1, 2.0, True, "3"])
def test_kbest_refuses_a_k_that_is_no_integer_from_one_up(graph_checkpoint, sentences, k) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    with pytest.raises(ValueError, match=rf"^k={re.escape(repr(k))} must be an integer >= 1$"):
        parser.kbest([s.forms for s in sentences], k)


@pytest.mark.parametrize(
    ("max_tokens", "error", "message"),
    [
        (None, TypeError, "max_tokens=None: expected an integer"),
        (2.5, TypeError, "max_tokens=2.5: expected an integer"),
        (True, TypeError, "max_tokens=True: expected an integer"),
        (0, ValueError, "max_tokens must be >= 1, got 0"),
    ],
)
def test_parse_refuses_a_max_tokens_that_is_no_integer_from_one_up(
    graph_checkpoint, sentences, max_tokens, error, message
) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        parser.parse([s.forms for s in sentences], max_tokens=max_tokens)


@pytest.mark.parametrize("head", [3.7, 1.0, "2", True, np.float64(1.0)])
def test_only_ints_and_none_are_fixed_heads(graph_checkpoint, sentences, head) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    fixed = [[None] * len(s) for s in sentences]
    fixed[0][1] = head
    with pytest.raises(
        ValueError, match=r"^fixed_heads\[0\]\[1\]=.* \(word 2\) is a \w+; a head is"
    ):
        parser.parse_constrained(sentences, fixed)


def test_numpy_integer_heads_are_ints(graph_checkpoint, sentences) -> None:
    parser = Parser.load(graph_checkpoint, threads=1)
    fixed = [[None] * len(s) for s in sentences]
    fixed[0][1] = np.int64(0)
    [first, *_] = parser.parse_constrained(sentences, fixed)
    assert first.heads[1] == 0


def test_parsing_searches_no_lemma_edit_script(graph_checkpoint, sentences, monkeypatch) -> None:
    # A gold lemma's class (its edit script) is a training target: parsing never needs it, and
    # on EWT test its search cost 5% of a whole parse.
    def refuse(*args: object) -> None:
        raise AssertionError("parsing searched a lemma edit script")

    assert any(lemma != "_" for sentence in sentences for lemma in sentence.lemmas)
    parser = Parser.load(graph_checkpoint, threads=1)
    monkeypatch.setattr(columns, "_script_of", refuse)
    monkeypatch.setattr(columns, "scripts_of", refuse)
    assert len(parser.parse(sentences)) == len(sentences)
