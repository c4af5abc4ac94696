"""Distillation: the teachers' targets are their own distributions, and the loss pulls to them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from builders import ENCODER, HEADS, biaffine_parser, randomized, save_model, training_vocabs
from hydra import compose, initialize

from biaffine.data.batching import Batch, collate, encode
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.vocab import Vocab, Vocabs
from biaffine.parsers import TransitionParser
from biaffine.training import train
from biaffine.training.distill import (
    Distillation,
    DistilledLoss,
    check_teachers,
    distillation,
    load_teachers,
    teacher_targets,
)
from biaffine.training.loop import ParserLoss

TINY_TREEBANK = Path(__file__).parents[2] / "data" / "tiny.conllu"
FLOAT16 = {"rtol": 0, "atol": 1e-3}  # targets are stored in float16
SMOKE = ["experiment=smoke", "trainer.max_epochs=1", "trainer.progress_bar=false"]


@pytest.fixture(scope="module")
def data() -> tuple[list[Sentence], Vocabs]:
    sentences = list(read_conllu(TINY_TREEBANK))
    return sentences, training_vocabs(sentences, "arc_standard")[1]


TAGGERS = {"tag_loss_weight": 1.0, "xpos_loss_weight": 1.0, "feats_loss_weight": 1.0}
TAGGERS |= {"lemma_loss_weight": 1.0}  # not distilled


def graph_parser(vocabs: Vocabs, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return randomized(biaffine_parser(vocabs, **ENCODER, **HEADS, **TAGGERS)).eval()


def alone(model: torch.nn.Module, sentence: Sentence, vocabs: Vocabs) -> tuple[np.ndarray, ...]:
    """One sentence scored in a batch of its own: heads, gold-head labels, UPOS, XPOS, FEATS."""
    batch = collate(encode([sentence], vocabs), [0])
    with torch.inference_mode():
        scores = model(batch, tag=True)
        heads = scores.arc_scores[0].softmax(-1).nan_to_num(0.0)
        labels = model.labels.at(scores.labels, batch.heads)[0].softmax(-1)
        tags = [scores.tag_scores[c].softmax(-1).numpy() for c in ("upos", "xpos", "feats")]
    n = len(sentence)
    return heads[1 : n + 1, : n + 1].numpy(), labels[1 : n + 1].numpy(), *tags


def test_the_targets_are_the_mean_of_each_teachers_own_distributions(data) -> None:
    sentences, vocabs = data
    teachers = [graph_parser(vocabs, seed) for seed in (0, 1)]
    # Batches of mixed lengths: padding must not leak into any sentence's distributions.
    targets = teacher_targets([(t, vocabs) for t in teachers], sentences, max_tokens=40)
    assert len(targets.heads) == len(sentences)
    for i, sentence in enumerate(sentences):
        each = [alone(t, sentence, vocabs) for t in teachers]
        tags = (targets.tags[c][i] for c in ("upos", "xpos", "feats"))
        assert sorted(targets.tags) == ["feats", "upos", "xpos"]  # LEMMA is not distilled
        for k, found in enumerate((targets.heads[i], targets.labels[i], *tags)):
            assert found.dtype == np.float16
            expected = (each[0][k] + each[1][k]) / 2
            np.testing.assert_allclose(found.astype(np.float32), expected, **FLOAT16)
        np.testing.assert_allclose(targets.heads[i].astype(np.float32).sum(1), 1, atol=5e-3)
        assert (np.diag(targets.heads[i][:, 1:]) == 0).all()  # no word heads itself


def test_batch_targets_sit_where_the_scores_do_and_are_zero_elsewhere(data) -> None:
    sentences, vocabs = data
    targets = teacher_targets([(graph_parser(vocabs, 0), vocabs)], sentences)
    rows = torch.tensor([3, 0])
    heads, labels = targets.batch(rows, positions=max(len(sentences[i]) for i in (3, 0)) + 1)
    for b, i in enumerate(rows.tolist()):
        n = len(sentences[i])
        torch.testing.assert_close(
            heads[b, 1 : n + 1, : n + 1].numpy(), targets.heads[i], check_dtype=False
        )
        assert heads[b, 0].abs().sum() == 0
        assert heads[b, n + 1 :].abs().sum() == 0
        assert heads[b, :, n + 1 :].abs().sum() == 0
        assert labels[b, n + 1 :].abs().sum() == 0


def training_batch(sentences: list[Sentence], vocabs: Vocabs) -> Batch:
    return collate(encode(sentences, vocabs), list(range(len(sentences))))


def entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * p.clamp_min(1e-30).log()).sum(-1)


def test_the_soft_loss_of_a_student_that_is_its_teacher_is_the_teachers_entropy(data) -> None:
    # Cross entropy H(p, q) = H(p) + KL(p || q): with q = p it is H(p), computed here apart.
    sentences, vocabs = data
    model = graph_parser(vocabs, 0)
    targets = teacher_targets([(model, vocabs)], sentences)
    batch = training_batch(sentences[::-1], vocabs)  # rows in another order than the targets'
    batch = Batch(
        **{f: getattr(batch, f) for f in Batch.__slots__ if f != "indices"},
        indices=torch.arange(len(sentences) - 1, -1, -1),
    )
    loss = DistilledLoss(model, Distillation(targets, weight=1.0))
    with torch.inference_mode():
        scores = model(batch, tag=True)
        gold_arc_rels = model.labels.at(scores.labels, batch.heads)
        found = loss.soft_loss(scores, batch, gold_arc_rels)
        heads = scores.arc_scores[batch.mask].softmax(-1)
        labels = gold_arc_rels[batch.mask].softmax(-1)
        tags = [scores.tag_scores[c].softmax(-1) for c in ("upos", "xpos", "feats")]
    expected = sum(entropy(p).mean() for p in (heads, labels, *tags))
    torch.testing.assert_close(found, expected, rtol=0, atol=2e-2)
    assert found > 2.0  # a random model is unsure: the check is not 0 = 0


def test_weight_zero_is_the_gold_loss_and_the_soft_loss_pulls_the_student_to_the_teachers(
    data,
) -> None:
    sentences, vocabs = data
    teachers = [graph_parser(vocabs, seed) for seed in (1, 2)]
    targets = teacher_targets([(t, vocabs) for t in teachers], sentences)
    batch = training_batch(sentences, vocabs)
    student = graph_parser(vocabs, 0)
    torch.manual_seed(5)
    gold = ParserLoss(student)(batch)
    torch.manual_seed(5)
    torch.testing.assert_close(DistilledLoss(student, Distillation(targets, 0.0))(batch), gold)
    distilled = DistilledLoss(student, Distillation(targets, 1.0))
    optimizer = torch.optim.Adam(student.parameters(), lr=1e-2)

    def soft() -> torch.Tensor:
        scores = student(batch, tag=False)
        gold_arc_rels = student.labels.at(scores.labels, batch.heads)
        return distilled.soft_loss(scores, batch, gold_arc_rels)

    with torch.no_grad():
        before = soft().item()
    for _ in range(30):
        optimizer.zero_grad()
        soft().backward()
        optimizer.step()
    with torch.no_grad():
        after = soft().item()
    assert after < before - 0.5


def test_teachers_and_students_that_cannot_distil_are_refused(data, tmp_path: Path) -> None:
    sentences, vocabs = data
    transition = TransitionParser(vocabs, biaffine_parser(vocabs, **ENCODER).encoder, **HEADS)
    with pytest.raises(ValueError, match="only a graph parser"):
        DistilledLoss(transition, Distillation(teacher_targets([], []), 1.0))
    path = save_model(tmp_path / "transition.pt", transition, vocabs)
    with pytest.raises(ValueError, match="is not a graph parser"):
        load_teachers([path])
    other_rels = Vocabs(vocabs.words, vocabs.chars, Vocab(["a", "b"], specials=False))
    other = save_model(tmp_path / "other.pt", biaffine_parser(other_rels, **ENCODER), other_rels)
    with pytest.raises(ValueError, match="another relation vocabulary"):
        check_teachers(load_teachers([other]), [other], vocabs)
    assert distillation([], 1.0, sentences) is None


def smoke(*overrides: str):
    with initialize(version_base="1.3", config_path="../../../conf"):
        return compose("train", overrides=[*SMOKE, *overrides])


def test_a_run_distils_its_teachers_from_the_command_line(tmp_path: Path) -> None:
    teacher = train(smoke(), tmp_path / "teacher")
    plain = train(smoke("trainer.seed=2"), tmp_path / "plain")
    taught = teacher.run_dir / "best.pt"
    distilled = train(
        smoke("trainer.seed=2", f"trainer.distill_from=[{taught},{taught}]"), tmp_path / "student"
    )
    assert distilled.epochs == 1
    loss = [
        (run / "metrics.jsonl").read_text().split('"train_loss": ')[1].split(",")[0]
        for run in (plain.run_dir, distilled.run_dir)
    ]
    assert float(loss[1]) > float(loss[0])  # the soft loss is added to the same gold loss
