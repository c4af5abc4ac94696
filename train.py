"""Train a biaffine parser.

Example: ``python train.py experiment=dozat_manning_2017 data=ud_english_ewt``
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from biaffine.cli import report_user_errors
from biaffine.training import train
from biaffine.training.run_state import remove_unused_run_dir


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float:
    """Train into Hydra's run directory; returns the best dev LAS (for sweepers to optimise).

    A user error prints one line on stderr and exits with status 2 (see :mod:`biaffine.cli`);
    the run folder is removed if the run wrote nothing into it.
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    return report_user_errors(
        lambda: train(cfg, run_dir=run_dir).best_dev.las,
        on_error=lambda: remove_unused_run_dir(run_dir),
    )


if __name__ == "__main__":
    main()
