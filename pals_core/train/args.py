"""The flags of ``pals-train``, generated from the dataclasses (``AdapterConfig``: the design; the budget;
``TrainConfig``: the run), and their reading into a ``TrainConfig`` — shared by the CLI (``pals_core/cli/train.py``), the
several-runs orchestration (``orchestrate.py``) and the explorer's launcher (``explorer/commands.py``)."""

from __future__ import annotations

import argparse

from ..budget.solver import add_budget_flags, budget_from_args
from ..flags import OneLineParser, UsageError, add_flags, given_values
from ..methods.registry import get_method
from ..pricing.config import AdapterConfig
from ..pricing.recipe import given_over
from .config import TrainConfig, tasks_file_train_model
from .extend import DESIGN_FROM_BASE, extension_config
from .rundir import RunDir

_S = argparse.SUPPRESS


def build_parser() -> argparse.ArgumentParser:
    """Flags generated from the dataclasses: ``AdapterConfig`` (design), the budget, ``TrainConfig`` (run)."""
    p = OneLineParser(
        prog="pals-train",
        description="Multi-task training on GLUE or your own tasks (--tasks-file) with task-specific adapters "
        "(BERT and PALs, Stickland & Murray 2019). Writes config.json, progress.json, metrics.jsonl, "
        "checkpoints/ and summary.json to --out.",
        argument_default=_S,
    )
    add_flags(p, AdapterConfig, title="design (AdapterConfig; shared by pals-budget, pals-train and pals-study)")
    add_budget_flags(p, title="budget (one of; sized methods: d_s = the calculator's largest within it)")
    add_flags(p, TrainConfig, title="run (TrainConfig)")
    r = p.add_argument_group("this invocation")
    r.add_argument(
        "--hub", dest="hub", action="store_true", help="load GLUE from the Hugging Face hub (= --glue-source hub)"
    )
    r.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    r.add_argument("--no-progress", dest="no_progress", action="store_true", help="no progress bar")
    add_repeat_flags(p.add_argument_group("repeated runs (--method separate: one fully fine-tuned model per task)"))
    return p


def add_repeat_flags(group) -> None:
    """``--seeds`` and ``--jobs``: read before the trainer's own flags (``orchestrate.split_flags``), listed here
    so that ``pals-train --help`` shows them."""
    group.add_argument("--seeds", help="one run per seed under OUT/seed-<k>/, then their mean, std and 95 %% interval")
    group.add_argument("--jobs", help="with --seeds: how many runs train at once (give each --threads)")


def config_from_args(given: dict) -> tuple[TrainConfig, bool]:
    """TrainConfig from parsed flags (absent flags: the saved run's values with --resume, else the
    defaults). Returns (config, resume). ``ValueError`` names the bad flag."""
    given = dict(given)
    resume = bool(given.pop("resume", False))
    if given.pop("hub", False):
        given["glue_source"] = "hub"
    adapter_given = given_values(given, AdapterConfig)
    run_given = given_values(given, TrainConfig)
    budget = budget_from_args(given)
    if "out" not in run_given:
        raise UsageError("--out is required (the run directory)")
    run = RunDir(run_given["out"])
    if resume and run.has_run():
        base = run.read_config()  # ValueError naming the file if it is not a pals-train configuration
        adapter = {**base["adapter"], **adapter_given}
        if budget is not None:
            base["budget"] = budget.as_dict()
        return TrainConfig.from_dict({**given_over(base, run_given), "adapter": adapter}), True
    if run_given.get("from_run"):  # adding tasks to a trained run: its design and settings, this run's flags
        if adapter_given or budget is not None:
            flags = [f"--{k.replace('_', '-')}" for k in adapter_given] + (["the budget"] if budget is not None else [])
            raise UsageError(DESIGN_FROM_BASE.format(flags=", ".join(flags)))
        return TrainConfig.from_dict(extension_config(run_given["from_run"], run_given)), resume
    if "tasks" not in run_given:
        if not run_given.get("tasks_file"):
            raise UsageError(
                "--tasks is required (e.g. --tasks rte,mrpc,stsb,cola,sst2), or --tasks-file F for your own"
            )
        run_given["tasks"] = []
    if "model" not in run_given and run_given.get("tasks_file"):  # the tasks file's model, unless --model says
        named, value = tasks_file_train_model(run_given["tasks_file"])
        if named:
            run_given["model"] = value
    adapter = AdapterConfig(**adapter_given)

    if get_method(adapter.method).sized and adapter.d_s is None and budget is None:
        raise UsageError(
            f"method {adapter.method!r} needs --d-s N or a budget (--budget RATIO, --extra N, --per-task N)"
        )
    return TrainConfig(adapter=adapter, budget=budget, **run_given), resume


def one_line(e: BaseException) -> str:
    """An error's message on one line (the CLI's promise: one line on stderr)."""
    return " ".join(str(e).split()) or type(e).__name__
