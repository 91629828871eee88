"""Multi-task training (paper Section 4): ``TrainConfig`` (config.py), ``train`` (trainer.py), the
``pals-train`` CLI (cli.py). Torch is imported when training starts, not on import of this package."""

from .config import TrainConfig

__all__ = ["TrainConfig", "train"]


def __getattr__(name: str):
    if name == "train":
        from .trainer import train  # late: loads torch

        return train
    raise AttributeError(f"module 'pals_core.train' has no attribute {name!r}")
