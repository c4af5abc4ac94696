"""Training: the composition root, the model-agnostic loop, and run state on disk.

:mod:`~biaffine.training.compose` reads the Hydra config (the only module that does);
:mod:`~biaffine.training.loop` trains any parser with typed arguments;
:mod:`~biaffine.training.run_state` keeps checkpoints, metrics and progress.

A run directory receives ``config.yaml`` (resolved config), ``best.pt`` (best dev LAS),
``last.pt`` (all that is needed to resume exactly) and ``metrics.jsonl`` (one JSON object per
epoch, then one for the final test evaluation of the best model). A run holds a lock on its
``.lock`` while it writes there, and never replaces an earlier run's results unless
``trainer.overwrite`` is set.
"""

from biaffine.training.compose import TrainResult, build_model, fit_settings, load_splits, train
from biaffine.training.loop import FitSettings, fit, score_parser

__all__ = [
    "FitSettings",
    "TrainResult",
    "build_model",
    "fit",
    "fit_settings",
    "load_splits",
    "score_parser",
    "train",
]
