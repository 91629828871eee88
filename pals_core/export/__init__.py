"""A trained run handed over (issue "your model out"): ONNX for every design (``onnx.py``), peft adapters and merged
transformers folders for the designs peft can express (``peft.py``), and ``pals-export`` (``cli.py``)."""

from __future__ import annotations


class ExportRefused(ValueError):
    """A format that cannot express this run's design (the message gives the reason and names a format that can)."""


class ExportFailed(RuntimeError):
    """torch could not trace the design, or a written export's outputs differ from the run's (not the user's input:
    ``pals-export`` exits 1)."""
