"""Each method trains as its authors train it, learning rate included: its recipe lives in its folder with its source,
``pals-train`` takes it unless ``--lr`` says otherwise, and the run, ``--help``, ``pals-budget``'s answer and the
studies say which rate and where it came from."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pals_core.cli.budget import run as budget_run
from pals_core.methods.registry import METHODS
from pals_core.pricing.recipe import BERT_FINE_TUNING
from pals_core.train.args import build_parser, config_from_args

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tasks" / "tasks.yaml"

# the rates their sources give for encoders of this size (the citations are in each method's cost.py)
AUTHORS = {
    "shared": (2e-5, "Stickland & Murray 2019"),
    "pals": (2e-5, "Stickland & Murray 2019"),
    "pals_unshared": (2e-5, "Stickland & Murray 2019"),
    "low_rank": (2e-5, "Stickland & Murray 2019"),
    "proj_attn_top": (2e-5, "Stickland & Murray 2019"),
    "proj_ffn_top": (2e-5, "Stickland & Murray 2019"),
    "bert_layer_top": (2e-5, "Stickland & Murray 2019"),
    "houlsby": (3e-4, "adapter-bert"),
    "lora": (5e-4, "Hu et al. 2021"),
    "ia3": (3e-3, "t-few"),
    "lhuc": (3e-3, "Liu et al. 2022"),
    "ca_mtl": (2e-5, "CA-MTL"),
}


def configured(*argv: str):
    cfg, _ = config_from_args(vars(build_parser().parse_args(list(argv))))
    return cfg


def design_flags(method: str) -> list[str]:
    return ["--method", method, *(["--d-s", "8"] if METHODS[method].sized else [])]


def test_every_method_declares_its_authors_rate_with_its_source():
    assert set(AUTHORS) == set(METHODS)
    for name, m in METHODS.items():
        lr, cited = AUTHORS[name]
        assert m.recipe.lr == lr and cited in m.recipe.source, name
        assert "cost.py" not in m.recipe.source  # a citation, not a pointer to itself


@pytest.mark.parametrize("method", list(AUTHORS))
def test_pals_train_takes_the_methods_rate_and_config_says_where_it_came_from(method, tmp_path):
    cfg = configured(*design_flags(method), "--tasks", "rte", "--out", str(tmp_path))
    lr, cited = AUTHORS[method]
    assert cfg.lr == lr and cfg.lr_source.startswith(f"{method}'s default (") and cited in cfg.lr_source
    d = cfg.as_dict()  # what config.json holds: the rate trained at, and its source
    assert d["lr"] == lr and d["lr_source"] == cfg.lr_source
    assert "--lr" not in cfg.to_argv()  # a launched run resolves the same rate from its method
    assert configured(*cfg.to_argv()) == cfg


def test_lora_takes_its_papers_warmup_and_weight_decay_and_the_flags_override_each():
    cfg = configured("--method", "lora", "--d-s", "8", "--tasks", "rte", "--out", "x")
    assert (cfg.lr, cfg.warmup, cfg.weight_decay) == (5e-4, 0.06, 0.1)
    given = configured("--method", "lora", "--d-s", "8", "--tasks", "rte", "--out", "x", "--lr", "1e-4")
    assert (given.lr, given.lr_source) == (1e-4, "--lr") and given.warmup == 0.06
    assert given.warmup_source.startswith("lora's default") and "--lr" in given.to_argv()
    assert configured(*given.to_argv()) == given
    # a setting the method's source leaves open is the trainer's (BERT's): LHUC's warm-up
    lhuc = configured("--method", "lhuc", "--tasks", "rte", "--out", "x")
    assert lhuc.warmup == BERT_FINE_TUNING.warmup and lhuc.warmup_source.startswith("the trainer's default")


def test_a_configuration_whose_method_changes_takes_the_new_methods_rate():
    pals = configured("--method", "pals", "--d-s", "12", "--tasks", "rte", "--out", "x")
    lora = dataclasses.replace(pals, adapter=dataclasses.replace(pals.adapter, method="lora", d_s=8))
    assert lora.lr == 5e-4 and lora.lr_source.startswith("lora's default")
    given = configured("--method", "pals", "--d-s", "12", "--tasks", "rte", "--out", "x", "--lr", "7e-5")
    moved = dataclasses.replace(given, adapter=dataclasses.replace(given.adapter, method="lora", d_s=8))
    assert moved.lr == 7e-5 and moved.lr_source == "--lr"  # what a person gave stays


def test_resume_keeps_the_rate_and_a_new_flag_is_its_own_source(tmp_path):
    cfg = configured("--method", "ia3", "--tasks", "rte", "--out", str(tmp_path / "r"))
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "config.json").write_text(json.dumps(cfg.as_dict()))
    again, resume = config_from_args(vars(build_parser().parse_args(["--resume", "--out", str(tmp_path / "r")])))
    assert resume and again.lr == 3e-3 and again.lr_source == cfg.lr_source
    other, _ = config_from_args(
        vars(build_parser().parse_args(["--resume", "--out", str(tmp_path / "r"), "--lr", "1e-3"]))
    )
    assert other.lr == 1e-3 and other.lr_source == "--lr"


def test_help_gives_each_methods_own_rate():
    text = build_parser().format_help()
    flat = " ".join(text.split())
    assert "--lr X peak learning rate (AdamW) (default: the method's own, as its authors train it:" in flat
    assert (
        "5e-4 for lora" in flat and "3e-4 for houlsby" in flat and "3e-3 for lhuc, ia3" in flat
    )  # as papers write them
    assert "0.06 for lora, ia3" in flat  # warm-up


def test_pals_budgets_answer_names_the_recommended_designs_own_rate():
    out = json.loads(budget_run(["--tasks-file", str(EXAMPLE), "--budget", "1.13", "--json"]))
    for r in out["recommendation"]["ranking"]:
        assert r["lr"] == AUTHORS[r["method"]][0] and r["lr_source"].startswith(f"{r['method']}'s default")
    first = out["recommendation"]["ranking"][0]
    text = " ".join(budget_run(["--tasks-file", str(EXAMPLE), "--budget", "1.13"]).split())
    rate = {2e-5: "2e-5", 3e-4: "3e-4", 5e-4: "5e-4", 3e-3: "3e-3"}[first["lr"]]
    assert f"at the method's own learning rate {rate})" in text


def test_a_study_without_lr_trains_each_trial_at_its_methods_rate():
    from studies.objective import Objective
    from studies.settings import StudySettings
    from studies.workers import settings_flags

    s = StudySettings(definition="design", model="tiny", tasks=["rte"])
    assert s.lr is None and s.warmup is None
    flags = settings_flags(s)
    assert "--lr" not in flags and "--warmup" not in flags
    fields = Objective._training_fields(SimpleNamespace(ctx=SimpleNamespace(settings=s)), {})
    assert fields["lr"] is None and fields["warmup"] is None  # TrainConfig resolves each trial's method's own
    fixed = StudySettings(definition="design", model="tiny", tasks=["rte"], lr=1e-4)
    assert settings_flags(fixed)[settings_flags(fixed).index("--lr") + 1] == "0.0001"


@pytest.mark.slow  # a real (tiny) run: its optimiser steps at the method's rate
def test_a_run_trains_at_the_methods_rate_and_its_config_json_says_so(tmp_path, glue_dir):
    out = tmp_path / "run"
    p = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.train", "--model", "tiny", "--method", "lora", "--d-s", "4"]
        + ["--tasks", "rte", "--steps", "2", "--batch-size", "4", "--max-len", "32", "--eval-every", "2"]
        + ["--max-train-examples", "16", "--max-eval-examples", "8", "--threads", "1", "--no-progress"]
        + ["--glue-dir", str(glue_dir), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["lr"] == 5e-4 and config["lr_source"].startswith("lora's default (Hu et al. 2021")
    assert config["warmup"] == 0.06 and config["weight_decay"] == 0.1
    import torch

    latest = json.loads((out / "checkpoints" / "latest.json").read_text())["dir"]
    state = torch.load(out / "checkpoints" / latest / "optimizer.pt", weights_only=True)
    groups = state["optimizer"]["param_groups"]
    assert {g["initial_lr"] for g in groups} == {5e-4} and groups[0]["weight_decay"] == 0.1


def test_runs_each_at_their_methods_own_rate_are_trained_alike():
    """The Runs view sets a design against ``shared`` and ``separate`` trained alike (``config.recipe``): LoRA at its
    own 5e-4 and ``shared`` at BERT's 2e-5 are both trained as their authors train them; a --lr is a recipe of its
    own."""
    from pals_core.train.config import OWN, recipe

    lora = configured("--method", "lora", "--d-s", "8", "--tasks", "rte", "--out", "x")
    shared = configured("--method", "shared", "--tasks", "rte", "--out", "x")
    assert recipe(lora.as_dict()) == recipe(shared.as_dict()) and recipe(lora.as_dict())["lr"] == OWN
    told = configured("--method", "shared", "--tasks", "rte", "--out", "x", "--lr", "5e-4")
    assert recipe(told.as_dict()) != recipe(lora.as_dict()) and recipe(told.as_dict())["lr"] == 5e-4
    old = {k: v for k, v in shared.as_dict().items() if not k.endswith("_source")}  # a run made before sources
    assert recipe(old)["lr"] == 2e-5
