"""Train a biaffine parser.

Example: ``python train.py experiment=dozat_manning_2017 data=ud_english_ewt``
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from biaffine.training import train


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float:
    """Train into Hydra's run directory; returns the best dev LAS (for sweepers to optimise)."""
    result = train(cfg, run_dir=Path(HydraConfig.get().runtime.output_dir))
    return result.best_dev.las


if __name__ == "__main__":
    main()
