"""Parameter groups of a fine-tuned transformer, warm-up, and resuming an older schedule."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from builders import biaffine_parser, save_model

from biaffine import checkpoint
from biaffine.data.vocab import Vocabs
from biaffine.nn import TransformerEncoder
from biaffine.parsers import BiaffineParser
from biaffine.training.compose import init_weights
from biaffine.training.optim import load_schedule, lr_decay_scheduler, parameter_groups

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = {"word_dim": 4, "char_dim": 3, "char_hidden": 3, "char_out": 3, "lstm_hidden": 5}
TINY |= {"lstm_layers": 1, "arc_mlp": 6, "rel_mlp": 3}


def tuned_parser(tiny_bert: Path, vocabs: Vocabs, *, finetune: bool = True) -> BiaffineParser:
    encoder = TransformerEncoder(vocabs, model=str(tiny_bert), finetune=finetune)
    return BiaffineParser(vocabs, encoder, arc_mlp=4, rel_mlp=4)


def rates_by_name(parser: BiaffineParser, groups: list[dict]) -> dict[str, float | None]:
    rate = {id(p): group.get("lr") for group in groups for p in group["params"]}
    return {name: rate[id(p)] for name, p in parser.named_parameters()}


def test_each_transformer_layer_learns_at_its_decayed_rate(tiny_bert: Path, vocabs: Vocabs) -> None:
    parser = tuned_parser(tiny_bert, vocabs)
    groups = parameter_groups(parser, transformer_lr=1e-4, layer_decay=0.5)
    rates = rates_by_name(parser, groups)
    assert len(rates) == len(list(parser.parameters()))  # each parameter in exactly one group
    assert sum(len(g["params"]) for g in groups) == len(rates)
    prefix = "encoder.embedding.model."
    for name, rate in rates.items():
        if not name.startswith(prefix):
            assert rate is None, name  # the optimizer's own rate: parser, scalar mix
        elif name.startswith(prefix + "embeddings."):
            assert rate == pytest.approx(1e-4 * 0.5**2), name  # 2 layers below the top
        elif name.startswith(prefix + "encoder.layer.0."):
            assert rate == pytest.approx(1e-4 * 0.5), name
        else:  # layer 1 (the top) and the pooler above it
            assert rate == pytest.approx(1e-4), name
    torch.optim.Adam(groups, lr=2e-3)  # the optimizer accepts them


def test_without_a_transformer_rate_there_is_one_group(tiny_bert: Path, vocabs: Vocabs) -> None:
    parser = tuned_parser(tiny_bert, vocabs)
    (group,) = parameter_groups(parser)
    assert group.keys() == {"params"}
    assert len(group["params"]) == len(list(parser.parameters()))
    frozen = tuned_parser(tiny_bert, vocabs, finetune=False)  # nothing to tune: one group
    assert [g.get("lr") for g in parameter_groups(frozen, transformer_lr=1e-4)] == [None]
    with pytest.raises(ValueError, match=r"needs trainer\.transformer_lr"):
        parameter_groups(parser, layer_decay=0.5)
    with pytest.raises(ValueError, match="layer_decay"):
        parameter_groups(parser, transformer_lr=1e-4, layer_decay=0.0)


def test_warm_up_rises_linearly_then_decay_takes_over() -> None:
    groups = [{"params": [torch.nn.Parameter(torch.zeros(1))]}]
    groups.append({"params": [torch.nn.Parameter(torch.zeros(1))], "lr": 1e-4})
    optimizer = torch.optim.Adam(groups, lr=2e-3)
    scheduler = lr_decay_scheduler(optimizer, rate=0.5, steps=10, warmup=4)
    seen = []
    for _ in range(14):
        seen.append([g["lr"] for g in optimizer.param_groups])
        optimizer.step()
        scheduler.step()
    for step, (lr, tuned) in enumerate(seen):
        factor = 0.5 ** (step / 10) * min(1.0, (step + 1) / 4)
        assert (lr, tuned) == (pytest.approx(2e-3 * factor), pytest.approx(1e-4 * factor))
    with pytest.raises(ValueError, match="warmup_steps"):
        lr_decay_scheduler(optimizer, rate=0.5, steps=10, warmup=-1)


def test_a_schedule_saved_as_exponential_decay_resumes_where_it_stopped() -> None:
    """``last.pt`` files written before warm-up existed hold an ExponentialLR state."""
    old_optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=2e-3)
    old = torch.optim.lr_scheduler.ExponentialLR(old_optimizer, gamma=0.75 ** (1 / 100))
    for _ in range(150):
        old_optimizer.step()
        old.step()
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=2e-3)
    scheduler = lr_decay_scheduler(optimizer, rate=0.75, steps=100)
    load_schedule(scheduler, old.state_dict())
    optimizer.step()
    scheduler.step()
    old_optimizer.step()
    old.step()
    assert scheduler.get_last_lr() == [pytest.approx(old.get_last_lr()[0])]
    assert scheduler.get_last_lr() == [pytest.approx(2e-3 * 0.75**1.51)]


def test_a_frozen_transformer_model_starts_a_fine_tuned_run(
    tmp_path: Path, tiny_bert: Path, vocabs: Vocabs
) -> None:
    """trainer.init_from: the checkpoint's weights, the transformer's from its folder."""
    torch.manual_seed(0)
    frozen = biaffine_parser(vocabs, **TINY, transformer={"model": str(tiny_bert)})
    path = save_model(tmp_path / "frozen.pt", frozen, vocabs)
    tuned = biaffine_parser(vocabs, **TINY, transformer={"model": str(tiny_bert), "finetune": True})
    fresh = {k: v.clone() for k, v in tuned.encoder.transformer.network.state_dict().items()}
    init_weights(tuned, checkpoint.load(path), "trainer.init_from=frozen.pt")
    state = tuned.state_dict()
    for name, weight in frozen.state_dict().items():
        torch.testing.assert_close(state[name], weight, rtol=0, atol=0)
    for name, weight in fresh.items():  # the folder's weights, which the frozen model read
        torch.testing.assert_close(state[f"encoder.transformer.model.{name}"], weight)
    wider = biaffine_parser(
        vocabs, **(TINY | {"arc_mlp": 7}), transformer={"model": str(tiny_bert)}
    )
    with pytest.raises(ValueError, match=r"frozen\.pt: another model config: model\.arc_mlp=7"):
        init_weights(wider, checkpoint.load(path), "trainer.init_from=frozen.pt")
