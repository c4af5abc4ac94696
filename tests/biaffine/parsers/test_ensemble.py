"""Ensembles of graph parsers: the members' mean, computed here apart, and one checkpoint."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import TINY_PARSER, biaffine_parser, randomized, save_model, untrained

import decoding
from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.parsers.ensemble import TAG_DTYPE, EnsembleParser, mean_log_softmax
from biaffine.training.ensemble import ensemble_checkpoints

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TAGGERS = {"tag_loss_weight": 1.0, "xpos_loss_weight": 1.0, "feats_loss_weight": 1.0}


def member(vocabs: Vocabs, seed: int, **options: object):
    """A tiny parser with every tagger and random, untied weights drawn from ``seed``."""
    torch.manual_seed(seed)
    return randomized(biaffine_parser(vocabs, **(TINY_PARSER | TAGGERS | options))).eval()


def saved(tmp_path: Path, vocabs: Vocabs, seed: int, **options: object) -> Path:
    return save_model(tmp_path / f"{seed}.pt", member(vocabs, seed, **options), vocabs)


def parsed(parser: Parser, sentences: list[Sentence]) -> list[list[str]]:
    """The CoNLL-U lines of each sentence parsed, every column predicted."""
    return [t.sentence.lines for t in parser.parse(sentences, columns=["all"], overwrite=True)]


def test_the_mean_of_softmaxes_is_computed_as_its_definition() -> None:
    first, second, third = torch.randn(3, 5), torch.randn(3, 5), torch.randn(3, 5)
    first[0, 2] = second[0, 2] = third[0, 2] = float("-inf")
    expected = ((first.double().softmax(-1) + second.double().softmax(-1)) / 2).log()
    torch.testing.assert_close(mean_log_softmax([first, second]), expected)
    three = [first, second, third]
    expected = (sum(s.double().softmax(-1) for s in three) / 3).log()
    torch.testing.assert_close(mean_log_softmax(three), expected)
    single = mean_log_softmax(three, torch.float32)
    assert single.dtype == torch.float32
    torch.testing.assert_close(single.double(), expected, rtol=1e-6, atol=1e-6)


def test_the_mean_of_confident_softmaxes_does_not_underflow() -> None:
    # Probabilities of e^-200 and below are 0 in float32, and e^-800 in float64: summed in log
    # space, each label keeps its log-probability.
    first = torch.tensor([[0.0, -200.0, -800.0]])
    second = torch.tensor([[0.0, -300.0, -900.0]])
    for dtype in (torch.float32, torch.float64):
        mean = mean_log_softmax([first, second], dtype)
        assert mean.isfinite().all()
        torch.testing.assert_close(
            mean[0, 1:], torch.tensor([-200.0, -800.0], dtype=dtype) - math.log(2)
        )


def test_an_ensemble_of_a_parser_with_itself_parses_as_the_parser(
    tmp_path: Path, vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    one = saved(tmp_path, vocabs, 1)
    alone = Parser.load(one, threads=1)
    ensemble_checkpoints([one, one], tmp_path / "e.pt")
    twice = Parser.load(tmp_path / "e.pt", threads=1)
    assert isinstance(twice.model, EnsembleParser)
    assert parsed(twice, sentences) == parsed(alone, sentences)


def test_scores_are_the_log_of_the_members_mean_probabilities(
    vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    members = [member(vocabs, seed) for seed in (1, 2, 3)]
    ensemble = EnsembleParser(members).eval()
    batch = next(iter(batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False)))
    with torch.inference_mode():
        each, mean = [m(batch) for m in members], ensemble(batch)
        heads = torch.where(batch.mask, batch.heads, torch.full_like(batch.heads, -1))
        label_scores = ensemble.labels.at_words(mean.labels, heads)  # [W, R]
        all_labels = ensemble.labels.all(mean.labels)  # [B, N+1, N+1, R]
    finite = mean.arc_scores.isfinite()
    expected = (sum(s.arc_scores.double().softmax(-1) for s in each) / 3).log()
    assert torch.equal(finite, expected.isfinite())
    torch.testing.assert_close(mean.arc_scores[finite], expected[finite])
    by_member = [m.labels.at_words(s.labels, heads) for m, s in zip(members, each, strict=True)]
    torch.testing.assert_close(label_scores, _mean_log(by_member))
    every = [m.labels.all(s.labels) for m, s in zip(members, each, strict=True)]
    assert all_labels.dtype == torch.float32  # R times the arcs, read for their maxima only
    torch.testing.assert_close(all_labels.double(), _mean_log(every), rtol=1e-5, atol=1e-5)
    assert mean.tag_scores.keys() == {"upos", "xpos", "feats"}
    for column, scores in mean.tag_scores.items():
        assert scores.dtype == TAG_DTYPE  # many classes, read for maxima and thresholds
        expected = _mean_log([s.tag_scores[column] for s in each])
        torch.testing.assert_close(scores.double(), expected, rtol=1e-5, atol=1e-5)


def _mean_log(scores: list[torch.Tensor]) -> torch.Tensor:
    return (sum(s.double().softmax(-1) for s in scores) / len(scores)).log()


def test_each_tree_is_the_best_tree_of_the_mean_head_probabilities(
    vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    members = [member(vocabs, seed) for seed in (1, 2)]
    parser = Parser(EnsembleParser(members).eval(), vocabs, device=torch.device("cpu"))
    found = parser.parse(sentences, joint_labels=False)
    differ = 0
    with torch.inference_mode():
        for batch in batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False):
            each = [m(batch).arc_scores.double() for m in members]
            for row, index in enumerate(batch.indices.tolist()):
                n = int(batch.lengths[row])
                alone = [s[row, : n + 1, : n + 1] for s in each]
                mean = (sum(a.softmax(-1) for a in alone) / 2).log().numpy()
                best = decoding.mst(mean, root_constraint=True)
                assert found[index].heads == best[1:].tolist()
                differ += any(
                    not np.array_equal(decoding.mst(a.numpy(), root_constraint=True), best)
                    for a in alone
                )
    assert differ > 0  # the ensemble is not one of its members


def test_joint_labels_maximize_the_mean_head_and_label_probabilities(
    vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    members = [member(vocabs, seed) for seed in (1, 2)]
    parser = Parser(EnsembleParser(members).eval(), vocabs, device=torch.device("cpu"))
    found = parser.parse(sentences)
    root = vocabs.rels.stoi["root"]
    with torch.inference_mode():
        for batch in batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False):
            each = [m(batch) for m in members]
            heads = _mean_log([s.arc_scores for s in each])  # [B, N+1, N+1]
            labels = _mean_log([m.labels.all(s.labels) for m, s in zip(members, each, strict=True)])
            others = labels.clone()
            others[..., root] = float("-inf")
            best = others.max(-1)
            best.values[:, :, 0], best.indices[:, :, 0] = labels[:, :, 0, root], root
            for row, index in enumerate(batch.indices.tolist()):
                n = int(batch.lengths[row])
                square = slice(0, n + 1)
                joint = (heads[row, square, square] + best.values[row, square, square]).numpy()
                tree = decoding.mst(joint, root_constraint=True)
                rels = best.indices[row, torch.arange(1, n + 1), torch.from_numpy(tree[1:])]
                assert found[index].heads == tree[1:].tolist()
                assert found[index].deprels == [vocabs.rels.itos[r] for r in rels.tolist()]


def test_members_reading_one_frozen_transformer_run_it_once_per_batch(
    tiny_bert: Path, vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    bert = {"model": str(tiny_bert)}
    readings = [bert, bert, bert | {"layers": [-1]}, bert | {"finetune": True}, bert]
    members = [member(vocabs, seed, transformer=t) for seed, t in enumerate(readings)]
    batch = next(iter(batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False)))
    with torch.inference_mode():
        each = [m(batch) for m in members]  # before any sharing: each runs its own
    loaded = [m.encoder.transformer.network for m in members]
    assert len({id(network) for network in loaded}) == len(members)  # each loaded its own
    ensemble = EnsembleParser(members).eval()
    networks = [m.encoder.transformer.network for m in members]
    # Members 0, 1 and 4 read the transformer alike: they hold member 0's, and it runs once
    # per batch for the three of them; other layers, fine-tuned: each its own.
    assert networks[0] is networks[1] is networks[4] is loaded[0]
    assert len({id(networks[k]) for k in (0, 2, 3)}) == 3
    held = [networks[k] for k in (0, 2, 3)]
    calls = [0] * len(held)
    for k, network in enumerate(held):
        count = lambda *_, k=k: calls.__setitem__(k, calls[k] + 1)  # noqa: E731
        network.register_forward_pre_hook(count)
    with torch.inference_mode():
        mean = ensemble(batch)
        again = ensemble(batch)
    assert calls[0] == calls[1] == calls[2] > 0
    expected = _mean_log([s.arc_scores for s in each])
    finite = expected.isfinite()
    torch.testing.assert_close(mean.arc_scores[finite], expected[finite])
    torch.testing.assert_close(again.arc_scores, mean.arc_scores)
    for column, scores in mean.tag_scores.items():
        assert scores.dtype == TAG_DTYPE  # many classes, read for maxima and thresholds
        expected = _mean_log([s.tag_scores[column] for s in each])
        torch.testing.assert_close(scores.double(), expected, rtol=1e-5, atol=1e-5)


def test_a_checkpoint_holds_the_ensemble_and_its_members_record(
    tmp_path: Path, vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    paths = [saved(tmp_path, vocabs, seed) for seed in (1, 2)]
    written = ensemble_checkpoints(paths, tmp_path / "e.pt")
    assert written.parser == "ensemble"
    assert written.training_state is None
    assert [m["path"] for m in written.metadata["ensemble_of"]] == [str(p) for p in paths]
    first = checkpoint.load(paths[0])
    assert written.metadata["ensemble_of"][0]["weights_sha256"] == checkpoint.weights_sha256(
        first.state_dict
    )
    in_memory = EnsembleParser([member(vocabs, seed) for seed in (1, 2)]).eval()
    assert parsed(Parser.load(tmp_path / "e.pt", threads=1), sentences) == parsed(
        Parser(in_memory, vocabs, device=torch.device("cpu")), sentences
    )


def test_int8_storage_keeps_the_trees_and_shares_equal_weights(
    tmp_path: Path, vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    paths = [saved(tmp_path, vocabs, seed) for seed in (1, 2)]
    full = ensemble_checkpoints(paths, tmp_path / "full.pt")
    small = ensemble_checkpoints(paths, tmp_path / "small.pt", stored_as="int8")
    for name, weight in full.state_dict.items():
        step = weight.abs().amax(-1, keepdim=True) / 254 if weight.dim() >= 2 else 0
        assert torch.all((small.state_dict[name] - weight).abs() <= step + 1e-3), name
    ensemble_checkpoints([paths[0], paths[0]], tmp_path / "twice.pt", stored_as="int8")
    checkpoint.compact(paths[0], tmp_path / "once.pt", stored_as="int8")
    extra = (tmp_path / "twice.pt").stat().st_size - (tmp_path / "once.pt").stat().st_size
    assert extra < 0.2 * (tmp_path / "once.pt").stat().st_size  # the second member stored once
    assert parsed(Parser.load(tmp_path / "twice.pt", threads=1), sentences) == parsed(
        Parser.load(tmp_path / "once.pt", threads=1), sentences
    )


def test_unlike_members_are_refused(tmp_path: Path, vocabs: Vocabs) -> None:
    one = saved(tmp_path, vocabs, 1)
    with pytest.raises(ValueError, match="at least two"):
        ensemble_checkpoints([one], tmp_path / "e.pt")
    fewer = saved(tmp_path, vocabs, 2, feats_loss_weight=0.0)
    with pytest.raises(ValueError, match="member 1 predicts upos, xpos columns"):
        ensemble_checkpoints([one, fewer], tmp_path / "e.pt")
    with pytest.raises(ValueError, match="member 1 is a 'transition' parser"):
        EnsembleParser([member(vocabs, 1), untrained(vocabs, "arc_hybrid")])
    with pytest.raises(ValueError, match="reads input UPOS"):
        EnsembleParser([member(vocabs, 1), member(vocabs, 2, use_tags=True, tag_loss_weight=0.0)])
    assert not (tmp_path / "e.pt").exists()


def test_other_vocabularies_are_refused_in_one_line(tmp_path: Path, vocabs: Vocabs) -> None:
    one = saved(tmp_path, vocabs, 1)
    others = Vocabs(vocabs.words, vocabs.chars, vocabs.rels, {})
    torch.manual_seed(2)
    other = save_model(tmp_path / "other.pt", biaffine_parser(others, **TINY_PARSER), others)
    command = [sys.executable, "-m", "biaffine.training.ensemble", str(tmp_path / "e.pt")]
    done = subprocess.run([*command, str(one), str(other)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("\n") == 1
    assert "the vocabularies differ" in done.stderr
    assert not (tmp_path / "e.pt").exists()


def test_an_output_that_is_a_member_is_refused_and_the_member_kept(
    tmp_path: Path, vocabs: Vocabs
) -> None:
    one, two = saved(tmp_path, vocabs, 1), saved(tmp_path, vocabs, 2)
    before = one.read_bytes()
    command = [sys.executable, "-m", "biaffine.training.ensemble", str(one), str(one), str(two)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    expected = f"error: output {one} is the input file {one}: choose another output path\n"
    assert done.stderr == expected
    assert one.read_bytes() == before


def test_an_ensemble_is_not_trained(vocabs: Vocabs, sentences: list[Sentence]) -> None:
    ensemble = EnsembleParser([member(vocabs, 1), member(vocabs, 2)])
    batch = next(iter(batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False)))
    with pytest.raises(TypeError, match=r"python -m biaffine\.training\.ensemble"):
        ensemble.loss(ensemble(batch), batch)
