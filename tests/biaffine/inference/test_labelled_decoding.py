"""Decoding heads with their labels while labelling only the arcs a best tree may take.

:func:`choices.decode_with_labels` must find the tree that maximizing over every arc's labels
finds (every arc's best label added to the head log-probabilities), with every decoder,
and whichever arcs it labels first.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from builders import biaffine_parser, sized_vocabs
from hypothesis import given, settings
from hypothesis import strategies as st

import decoding
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence
from biaffine.inference import DecoderSettings, choices, parse
from biaffine.inference.choices import (
    arc_label_ids,
    best_head_labels,
    decode_with_labels,
    find_with_labels,
)
from biaffine.inference.settings import GraphDecoding
from biaffine.parsers.ensemble import MeanLabels
from biaffine.parsers.heads import LabelScorer, head_vectors

DECODERS = [
    GraphDecoding(algorithm, root)
    for algorithm in ("mst", "eisner", "greedy")
    for root in (True, False)
    if not (algorithm == "greedy" and root)
]


def random_batch(seed: int, n_labels: int, sizes: list[int]):
    """Arc scores with -inf at impossible heads, and every arc's label scores."""
    rng = np.random.default_rng(seed)
    width = max(sizes) + 1
    arcs = rng.normal(scale=3.0, size=(len(sizes), width, width))
    labels = rng.normal(scale=2.0, size=(len(sizes), width, width, n_labels))
    for b, n in enumerate(sizes):
        arcs[b, :, n + 1 :] = -np.inf
        np.fill_diagonal(arcs[b], -np.inf)
    return arcs, labels


def every_arc_labelled(arcs, lengths, decoder: GraphDecoding, label_log_probs):
    """The best labelled trees from every arc's best label's log-probability."""
    return decoding.decode(
        choices.head_log_probs(arcs) + label_log_probs,
        lengths,
        algorithm=decoder.algorithm,
        root_constraint=decoder.root_constraint,
    )


def every_label(labels: np.ndarray, root_label: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Every arc's best label under UD's rule on root and its log-probability, arc by arc."""
    *arcs, n_labels = labels.shape
    log_probs, ids = np.zeros(arcs), np.zeros(arcs, dtype=np.int64)
    for index in np.ndindex(*arcs):
        scores = labels[index]
        normalizer = np.log(np.exp(scores - scores.max()).sum()) + scores.max()
        allowed = range(n_labels)
        if root_label is not None:
            allowed = [root_label] if index[-1] == 0 else [r for r in allowed if r != root_label]
        best = max(allowed, key=lambda r: scores[r])
        log_probs[index], ids[index] = scores[best] - normalizer, best
    return log_probs, ids


def labeller(labels: np.ndarray, root_label: int | None, asked: list[int]):
    """``head_labels`` of :func:`decode_with_labels` from every arc's scores; counts arcs."""

    def head_labels(rows, dependents, heads):
        asked.append(heads.size)
        found = labels[rows[:, None], dependents[:, None], heads]  # [W, K, R]
        return best_head_labels(found, heads, root_label=root_label)

    return head_labels


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5),
    candidates=st.integers(1, 4),
    root_label=st.sampled_from([None, 0, 2]),
    decoder=st.sampled_from(DECODERS),
    arcs_per_call=st.sampled_from([1, 3, choices.ARCS_PER_CALL]),
)
def test_the_same_labelled_trees_as_labelling_every_arc(
    seed: int,
    sizes: list[int],
    candidates: int,
    root_label: int | None,
    decoder: GraphDecoding,
    arcs_per_call: int,
) -> None:
    arcs, labels = random_batch(seed, 5, sizes)
    lengths = np.array(sizes)
    log_probs, ids = every_label(labels, root_label)
    expected_heads = every_arc_labelled(arcs, lengths, decoder, log_probs)
    expected_rels = arc_label_ids(ids, expected_heads)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(choices, "CANDIDATE_HEADS", candidates)
        patch.setattr(choices, "ARCS_PER_CALL", arcs_per_call)
        heads, rels = decode_with_labels(arcs, lengths, decoder, labeller(labels, root_label, []))
    np.testing.assert_array_equal(heads, expected_heads)
    np.testing.assert_array_equal(rels, expected_rels)


def test_a_tree_that_needs_an_unlikely_arc_gets_it_labelled_and_decoded_again() -> None:
    """Both words prefer each other as heads (a cycle) and ROOT is each one's third choice
    with one candidate head per word: the tree must take an arc from ROOT, unlabelled at
    first; its label is poor for word 1, so the best tree puts word 2 on ROOT."""
    arcs = np.full((1, 3, 3), -np.inf)
    arcs[0, 1, [0, 2]] = [0.0, 5.0]
    arcs[0, 2, [0, 1]] = [0.0, 5.0]
    labels = np.zeros((1, 3, 3, 3))
    labels[0, 1, 0] = [-8.0, 0.0, 0.0]  # label 0 (root) unlikely on the arc ROOT -> 1
    labels[0, 2, 0] = [8.0, 0.0, 0.0]
    asked: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(choices, "CANDIDATE_HEADS", 1)
        label = labeller(labels, 0, asked)
        heads, rels = decode_with_labels(arcs, np.array([2]), GraphDecoding(), label)
    assert heads.tolist() == [[-1, 2, 0]]
    assert rels[0, 2] == 0
    assert rels[0, 1] != 0
    assert len(asked) >= 2  # the first tree took an unlabelled arc


def tied_sentence(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n words whose every head is as likely as any other (n copies of one word), labels not."""
    arcs = np.zeros((1, n + 1, n + 1))
    arcs[0, 0] = -np.inf  # ROOT heads, never depends
    np.fill_diagonal(arcs[0], -np.inf)
    labels = np.random.default_rng(seed).normal(size=(1, n + 1, n + 1, 3))
    return arcs, labels


def tree_score(heads: np.ndarray, scores: np.ndarray) -> float:
    """The sum of a tree's arcs' scores float[n+1, n+1] (``[d, h]``), heads int[n+1]."""
    return float(sum(scores[d, heads[d]] for d in range(1, len(heads))))


@pytest.mark.parametrize("decoder", [GraphDecoding(), GraphDecoding("eisner")], ids=str)
def test_a_sentence_whose_heads_tie_is_decoded_a_few_times_not_once_per_word(
    decoder: GraphDecoding,
) -> None:
    # Every word took ROOT's arc in turn, unlabelled and so scored above the labelled ones:
    # 900 copies of one word were decoded 902 times (8 s) before the best tree came out.
    n = 200
    arcs, labels = tied_sentence(n)
    log_probs, _ = every_label(labels, 0)
    decodings = []
    with pytest.MonkeyPatch.context() as patch:
        decode = choices._decoded
        patch.setattr(choices, "_decoded", lambda *args: decodings.append(1) or decode(*args))
        heads, _ = decode_with_labels(arcs, np.array([n]), decoder, labeller(labels, 0, []))
    best = every_arc_labelled(arcs, np.array([n]), decoder, log_probs)
    joint = choices.head_log_probs(arcs)[0] + log_probs[0]
    assert tree_score(heads[0], joint) == pytest.approx(tree_score(best[0], joint), abs=1e-9)
    assert len(decodings) <= 1 + int(np.log2(n))


def test_k_best_trees_of_tied_heads_are_found_in_a_few_searches() -> None:
    n = 60
    arcs, labels = tied_sentence(n, seed=1)
    log_probs, _ = every_label(labels[0], 0)
    head_scores = choices.head_log_probs(arcs[0])
    searches = []

    def search(scores):
        searches.append(1)
        return decoding.kbest(scores, 3)

    def row_labels(dependents, heads):
        return best_head_labels(labels[0][dependents[:, None], heads], heads, root_label=0)

    found, _ = find_with_labels(head_scores, search, lambda best: best.heads, row_labels)
    expected = decoding.kbest(head_scores + log_probs, 3)
    np.testing.assert_allclose(found.scores, expected.scores, rtol=0, atol=1e-9)
    assert len(searches) <= 1 + int(np.log2(n))


def test_once_a_word_would_take_every_head_its_whole_sentence_is_labelled() -> None:
    arcs, labels = random_batch(5, 3, [6, 4])
    scores = choices.head_log_probs(arcs)
    labelled = choices._ArcLabels(scores, np.array([6, 4]), labeller(labels, 0, []))
    labelled.label_more(np.array([1]), np.array([2]), np.array([0]), again=1)
    # 4 likeliest heads where a word of sentence 1 has 4: every arc of it, none of sentence 0
    assert (labelled.ids[1, 1:5, :5] >= 0).all()
    assert (labelled.ids[0] < 0).all()
    labelled.label_more(np.array([0]), np.array([3]), np.array([0]), again=1)
    # 4 of 6 in sentence 0: word 3's chosen head and 4 likeliest, and every word's from ROOT
    assert (labelled.ids[0, 1:7, 0] >= 0).all()
    likeliest = set(np.argsort(-scores[0, 3])[:4].tolist()) | {0}
    assert set(np.flatnonzero(labelled.ids[0, 3] >= 0).tolist()) == likeliest
    assert (labelled.ids[0, [1, 2, 4, 5, 6], 1:] < 0).all()


@pytest.mark.parametrize("root_label", [None, 1])
def test_best_head_labels_are_the_best_allowed_labels(root_label: int | None) -> None:
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(2, 4, 4, 6))
    heads = np.broadcast_to(np.arange(4), (2, 4, 4))
    log_probs, ids = every_label(scores, root_label)
    found_log_probs, found_ids = best_head_labels(scores, heads, root_label=root_label)
    np.testing.assert_array_equal(found_ids, ids)
    np.testing.assert_allclose(found_log_probs, log_probs, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 7),
    k=st.integers(1, 6),
    candidates=st.integers(1, 3),
    algorithm=st.sampled_from(["mst", "eisner"]),
    root=st.booleans(),
)
def test_k_best_and_fixed_heads_find_what_labelling_every_arc_finds(
    seed: int, n: int, k: int, candidates: int, algorithm: str, root: bool
) -> None:
    arcs, labels = random_batch(seed, 4, [n])
    head_scores = choices.head_log_probs(arcs[0])
    log_probs, ids = every_label(labels[0], 0)
    options = {"algorithm": algorithm, "root_constraint": root}
    rng = np.random.default_rng(seed)
    fixed = np.full(n + 1, -1, dtype=np.int64)
    fixed[rng.integers(1, n + 1)] = 0  # one word on ROOT: a tree keeps it whatever else holds
    searches = [
        (lambda s: decoding.kbest(s, k, **options), lambda best: best.heads),
        (lambda s: decoding.constrained(s, fixed_heads=fixed, **options), lambda h: [h]),
    ]

    def row_labels(dependents, heads):
        found = labels[0][dependents[:, None], heads]
        return best_head_labels(found, heads, root_label=0)

    for search, trees_of in searches:
        expected = search(head_scores + log_probs)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(choices, "CANDIDATE_HEADS", candidates)
            found, found_ids = find_with_labels(head_scores, search, trees_of, row_labels)
        for tree, wanted in zip(trees_of(found), trees_of(expected), strict=True):
            np.testing.assert_array_equal(tree, wanted)
            words = np.arange(1, n + 1)
            np.testing.assert_array_equal(found_ids[words, tree[1:]], ids[words, tree[1:]])
        if hasattr(found, "scores"):
            np.testing.assert_allclose(found.scores, expected.scores, rtol=0, atol=1e-9)


def test_label_scores_at_given_heads_are_those_of_every_pair() -> None:
    """LabelScorer.at_heads and an ensemble's mean against every pair's scores."""
    torch.manual_seed(0)
    scorers = [LabelScorer(8, 5, 4, dropout=0.0).eval() for _ in range(2)]
    for scorer in scorers:
        with torch.no_grad():
            scorer.attn.weight.normal_()
    states = torch.randn(3, 6, 8)
    rows, dependents = torch.tensor([0, 1, 2, 2]), torch.tensor([1, 5, 2, 3])
    heads = torch.tensor([[0, 2], [4, 4], [5, 0], [1, 3]])
    with torch.inference_mode():
        vectors = scorers[0](states)
        every = scorers[0].all(vectors)
        expected = every[rows.unsqueeze(1), dependents.unsqueeze(1), heads]
        found = scorers[0].at_heads(head_vectors(vectors, rows, dependents, heads))
        torch.testing.assert_close(found, expected)
        mean = MeanLabels(scorers)
        joined = mean.join([scorer(states) for scorer in scorers])
        every = mean.all(joined).double()
        expected = every[rows.unsqueeze(1), dependents.unsqueeze(1), heads]
        found = mean.at_heads(head_vectors(joined, rows, dependents, heads))
        torch.testing.assert_close(found, expected, rtol=0, atol=1e-5)


def test_a_graph_parser_labels_its_trees_as_labelling_every_arc_does() -> None:
    """The graph family's trees against decoding on every arc's labels of the same batch."""
    vocabs = sized_vocabs(words=30, chars=20, upos=6, rels=7)
    torch.manual_seed(1)
    options = {"word_dim": 8, "char_dim": 6, "char_hidden": 5, "char_out": 7, "lstm_hidden": 10}
    model = biaffine_parser(vocabs, **options, lstm_layers=1, arc_mlp=12, rel_mlp=6).eval()
    with torch.no_grad():
        for weight in model.parameters():
            weight.add_(0.5 * torch.randn_like(weight))
    rng = np.random.default_rng(0)
    words = vocabs.words.itos[2:]
    sentences = [
        Sentence.from_forms([str(rng.choice(words)) for _ in range(n)]) for n in (1, 4, 9, 17, 30)
    ]
    root = choices.root_label_id(vocabs.rels)
    batch = next(batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False))
    with torch.inference_mode():
        scores = model(batch, tag=False)
        every = model.labels.all(scores.labels).double().numpy()
    log_probs, ids = every_label(every, root)
    by_length = {len(sentence): k for k, sentence in enumerate(sentences)}
    for decoder in DECODERS:
        chosen = DecoderSettings(decoder.algorithm, decoder.root_constraint)
        found = parse(model, vocabs, sentences, chosen)
        arcs = scores.arc_scores.double().numpy()
        heads = every_arc_labelled(arcs, batch.lengths.numpy(), decoder, log_probs)
        rels = arc_label_ids(ids, heads)
        for row, n in enumerate(batch.lengths.tolist()):
            parsed = found[by_length[n]]
            assert parsed.heads == heads[row, 1 : n + 1].tolist()
            assert parsed.deprels == [vocabs.rels.itos[r] for r in rels[row, 1 : n + 1]]
