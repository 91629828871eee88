"""Help that does not contradict itself: every flag of ``pals-budget`` and ``pals-train`` states one
default, the one the command uses when the flag is absent; a run on a tasks file carries no ``--glue-dir``."""

from __future__ import annotations

import re

import pytest

from pals_core.cli.budget import build_parser as budget_parser
from pals_core.pricing.config import AdapterConfig
from pals_core.train.args import build_parser as train_parser
from pals_core.train.args import config_from_args
from pals_core.train.config import TrainConfig


def _helps(parser) -> dict[str, str]:
    return {a.option_strings[0]: " ".join((a.help or "").split()) for a in parser._actions if a.option_strings}


@pytest.mark.parametrize("make", [budget_parser, train_parser], ids=["pals-budget", "pals-train"])
def test_every_flag_states_one_default(make):
    for flag, text in _helps(make()).items():
        assert len(re.findall(r"\(default", text)) <= 1, (flag, text)


def test_pals_budget_says_what_it_prices_without_method():
    helps = _helps(budget_parser())
    assert "(default: every method, one row each)" in helps["--method"]
    assert "(default: pals)" not in helps["--method"]
    assert "(default: the largest that fits the budget)" in helps["--d-s"]
    # pals-train trains one design: its default method is the dataclass's
    assert "(default: pals)" in _helps(train_parser())["--method"]


def test_the_glue_dir_default_is_said_once(monkeypatch):
    monkeypatch.setenv("PALS_GLUE_DIR", "/somewhere/glue")
    text = _helps(train_parser())["--glue-dir"]
    assert text.count("$PALS_GLUE_DIR") == 1 and text.count("default") == 1, text


def test_a_tasks_file_run_carries_no_glue_dir_and_parses_back(tmp_path, monkeypatch):
    monkeypatch.setenv("PALS_GLUE_DIR", "/somewhere/glue")  # the explorer's environment holds one
    cfg = TrainConfig(tasks=["intent"], tasks_file=str(tmp_path / "tasks.yaml"), adapter=AdapterConfig(d_s=24))
    argv = cfg.to_argv()
    assert "--glue-dir" not in argv and "none" not in argv
    parsed, _ = config_from_args(vars(train_parser().parse_args(argv)))
    assert parsed == cfg
    # a GLUE folder given is written out, so that the command runs the same anywhere
    given = cfg.with_(glue_dir="/g").to_argv()
    assert given[given.index("--glue-dir") + 1] == "/g"
