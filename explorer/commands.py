"""A design → a ``pals-train`` run: its argument list, and the same as shell commands.

The run is a ``TrainConfig`` (``pals_core.train.config``) — the trainer's own dataclass, whose fields, with the
design's ``AdapterConfig``, generate the trainer's flags. ``launch_argv(cfg)`` (``pals_core.supervise.runs``) is
what the launcher hands to ``subprocess.Popen`` (a list, never a shell string); ``command``/``accelerate_command``/
``torchrun_command`` are what a person would type, quoted with ``shlex.join``. Parsing ``cfg.to_argv()`` with the trainer's parser gives
``cfg`` back (``tests/test_declaration.py``), so the explorer launches exactly the design it priced.
"""

from __future__ import annotations

import shlex

from pals_core.flags import UsageError
from pals_core.supervise.runs import TRAIN_MODULE
from pals_core.train.args import build_parser, config_from_args
from pals_core.train.config import TrainConfig
from pals_core.train.params import resolve


def accelerate_command(cfg: TrainConfig, gpus: int) -> str:
    return shlex.join(["accelerate", "launch", "--num_processes", str(gpus), "-m", TRAIN_MODULE, *cfg.to_argv()])


def torchrun_command(cfg: TrainConfig, gpus: int) -> str:
    return shlex.join(["torchrun", "--standalone", "--nproc_per_node", str(gpus), "-m", TRAIN_MODULE, *cfg.to_argv()])


def check_with_trainer(cfg: TrainConfig) -> TrainConfig:
    """The run as the trainer will see it: its flags parsed by the trainer's own parser, validated and resolved
    against the calculator on the training model (d_s from the budget; a design over its budget refused).
    No torch, nothing written. Raises ``ValueError`` with the trainer's message."""
    try:
        parsed, _ = config_from_args(vars(build_parser().parse_args(cfg.to_argv())))
        return resolve(parsed)
    except (UsageError, TypeError) as e:
        raise ValueError(str(e)) from None
