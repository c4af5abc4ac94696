"""Each shipped model scores today exactly what its card says, from gold tokens and raw text.

A library update or a refactor that changes what a released model predicts fails here, not in
users' hands. The figures are compared at the card's printed precision; the scoring runs on
one thread, as the card's did (the same figures come out with AVX2 and SSE 4.2 kernels as with
AVX-512, checked with ``ATEN_CPU_CAPABILITY``, ``MKL_ENABLE_INSTRUCTIONS`` and
``DNNL_MAX_CPU_ISA``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from biaffine import installed, models
from biaffine.models.scoring import GOLD, RAW, THREADS, card_scores, ud_test_file

pytestmark = [pytest.mark.ud, pytest.mark.slow]


@pytest.mark.parametrize("name", sorted(installed.installed()))
def test_the_model_scores_what_its_card_says(name: str, ud_root: Path) -> None:
    model = installed.find(name)
    if model.missing():
        pytest.skip(f"{name} needs pip install {' '.join(model.missing())}")
    treebank = ud_root / model.card["treebank"]["name"]
    if not treebank.is_dir():
        pytest.skip(f"{treebank} not found")
    gold = ud_test_file(treebank)
    assert gold.name == model.card["evaluation"]["test_file"]
    scores = card_scores(models.load(name, threads=THREADS), gold)
    assert scores.keys() == {GOLD, RAW}
    assert scores == model.card["scores"]
