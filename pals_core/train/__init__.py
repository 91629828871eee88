"""Multi-task training (paper Section 4): ``TrainConfig`` (config.py), ``train`` (trainer.py); the ``pals-train`` CLI
is ``pals_core/cli/train.py``. Torch is imported when training starts (``trainer``), not on import of this package."""
