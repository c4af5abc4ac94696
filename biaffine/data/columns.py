"""The CoNLL-U columns a model can predict besides the tree, in one place.

A tagged column is one class per word: its name is at once the ``Sentence`` attribute that holds
it, the key of its vocabulary (``Vocabs.columns``), of its gold ids
(``Batch.columns``), of its tagger head and of its predicted values. Adding a column (LEMMA, as
edit scripts) is one entry here plus what turns its classes back into strings.
"""

from __future__ import annotations

__all__ = ["CONLLU_NAMES", "LOSS_WEIGHTS", "TAGGED"]

TAGGED = ("upos", "xpos", "feats")
"""Tagged columns, in the order their vocabularies, tensors and heads are built."""

LOSS_WEIGHTS = {"upos": "tag_loss_weight", "xpos": "xpos_loss_weight", "feats": "feats_loss_weight"}
"""The parser option weighting each column's tagger loss (0: no tagger for that column)."""

CONLLU_NAMES = {"upos": "UPOS", "xpos": "XPOS", "feats": "FEATS"}
"""Each tagged column's name in the CoNLL-U format (and in ``predict.py columns=...``)."""
