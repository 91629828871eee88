"""One design, declared once (what you price is what you train).

- Every ``AdapterConfig`` field is a flag of ``pals-budget``, ``pals-train`` and ``pals-study`` with the same help.
- config → argv → parse → config is the identity, for every method and field (hypothesis), on all three CLIs, and
  for a whole ``TrainConfig`` through ``pals-train``'s own parser.
- For every method, the model a run builds holds exactly ``pals-budget``'s ``params_total`` for the same flags, and
  trains exactly its ``params_trained``; a real ``pals-train`` run with non-default fields reports the same total.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pals_core.base_model import tiny_config_dict
from pals_core.budget.solver import Budget
from pals_core.cli.budget import build_parser as budget_parser
from pals_core.data.load import TINY
from pals_core.flags import flags_of, given_values
from pals_core.methods.registry import METHODS, get_method
from pals_core.pricing.config import NAMED_LOCATIONS, AdapterConfig
from pals_core.tasks.glue_tasks import GLUE_TASKS
from pals_core.train.args import build_parser as train_parser
from pals_core.train.args import config_from_args
from pals_core.train.config import TrainConfig
from studies.cli import build_parser as study_parser

PARSERS = {
    "pals-budget": lambda argv: budget_parser().parse_args(argv),
    "pals-train": lambda argv: train_parser().parse_args(argv),
    "pals-study": lambda argv: study_parser().parse_args(["create", "optimizer", *argv]),
}

INTS = st.integers(min_value=-3, max_value=10**6)
FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)
LOCATIONS = st.one_of(
    st.none(),
    st.sampled_from(NAMED_LOCATIONS),
    st.lists(st.integers(min_value=0, max_value=47), min_size=1, max_size=6).map(tuple),
)
PATHS = st.from_regex(r"[A-Za-z0-9_./-]{1,30}", fullmatch=True).filter(lambda p: p.lower() != "none")
CUSTOM = {  # fields whose type the generic strategies below do not cover
    (AdapterConfig, "location"): LOCATIONS,
    (TrainConfig, "tasks"): st.lists(st.sampled_from(list(GLUE_TASKS)), min_size=1, max_size=4, unique=True),
    (TrainConfig, "grad_clip"): st.one_of(st.none(), st.floats(min_value=1e-6, max_value=1e6)),
    # adding tasks reads the base run's folder (tests/test_add_tasks.py): its flags are not round-tripped here
    (TrainConfig, "from_run"): st.none(),
    (TrainConfig, "add_tasks"): st.none(),
}


def _strategy(cls, flag):
    """A value strategy for one field, from its declaration (so a new field is covered without editing this test)."""
    if (cls, flag.name) in CUSTOM:
        return CUSTOM[(cls, flag.name)]
    if flag.boolean:
        base = st.booleans()
    elif flag.choices is not None:
        base = st.sampled_from(list(flag.choices()))
    elif flag.default is not dataclasses.MISSING and isinstance(flag.default, tuple):
        base = st.tuples(*(FLOATS for _ in flag.default))
    elif flag.name in ("model", "glue_dir", "out", "cache_dir", "tasks_file"):
        base = PATHS
    else:
        probe = flag.parse("7")
        base = INTS if isinstance(probe, int) else FLOATS if isinstance(probe, float) else None
        if base is None:
            raise AssertionError(f"no strategy for {cls.__name__}.{flag.name}: add one to CUSTOM")
    return st.one_of(st.none(), base) if flag.optional else base


def configs(cls, **fixed):
    fields = {f.name: _strategy(cls, f) for f in flags_of(cls) if f.name not in fixed}
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw, **fixed))


ADAPTERS = configs(AdapterConfig)
BUDGETS = st.one_of(
    st.none(),
    st.floats(min_value=1.0, max_value=1e3).map(lambda r: Budget(ratio=r)),
    st.integers(min_value=0, max_value=10**12).map(lambda e: Budget(extra=float(e))),
    st.floats(min_value=1e-3, max_value=1e12).map(lambda p: Budget(per_task=p)),
)


def test_every_design_field_is_a_flag_of_the_three_clis_with_the_same_help():
    want = {f.flag: f.help for f in flags_of(AdapterConfig)}
    assert set(want) >= {"--" + f.name.replace("_", "-") for f in dataclasses.fields(AdapterConfig)}
    for name, make in (("pals-budget", budget_parser), ("pals-train", train_parser)):
        actions = {a.option_strings[0]: a.help for a in make()._actions if a.option_strings}
        for flag, text in want.items():
            assert flag in actions, f"{name} lacks {flag}"
            assert actions[flag].startswith(text), (name, flag)
    create = next(a for a in study_parser()._subparsers._group_actions[0].choices.values() if a.prog.endswith("create"))
    actions = {a.option_strings[0]: a.help for a in create._actions if a.option_strings}
    for flag, text in want.items():
        assert actions[flag].startswith(text), ("pals-study", flag)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ADAPTERS, st.sampled_from(sorted(PARSERS)))
def test_design_to_argv_and_back_is_the_identity(cfg, cli):
    ns = PARSERS[cli](cfg.to_argv())
    assert AdapterConfig(**given_values(ns, AdapterConfig)) == cfg


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs(TrainConfig, adapter=AdapterConfig()), ADAPTERS, BUDGETS)
def test_run_to_argv_and_back_is_the_identity(run, adapter, budget):
    assume(
        not (get_method(adapter.method).sized and adapter.d_s is None and budget is None)
    )  # refused: nothing to size
    run = dataclasses.replace(run, adapter=adapter, budget=budget)
    parsed, resume = config_from_args(vars(train_parser().parse_args(run.to_argv())))
    assert not resume and parsed == run


def test_a_stored_run_round_trips_through_json():
    run = TrainConfig(
        tasks=["rte"],
        adapter=AdapterConfig(method="pals", location=(0, 2), heads=4),
        budget=Budget(extra=2e6),
        grad_clip=None,
        glue_dir="/g",
    )
    assert TrainConfig.from_dict(json.loads(json.dumps(run.as_dict()))) == run
    assert TrainConfig.from_dict({**run.as_dict(), "budget": 1.13}).budget == Budget(ratio=1.13)  # older configs


# --- what trains is what was priced ------------------------------------------------------------------

TASKS = {"rte": 2, "stsb": 1}
NON_DEFAULT = dict(
    heads=2,
    n_top=2,
    ffn_ratio=3,
    per_task_pooler=True,
    lora_alpha=4.0,
    task_embedding_dim=6,
    frozen_layers=1,
    cond_norm_layers=2,
    cond_attn_max_len=20,
    cond_attn_blocks=3,
    cond_adapter_layers=2,
)


def _designs():
    for name, method in METHODS.items():
        kw = {k: v for k, v in NON_DEFAULT.items() if k in {f.name for f in dataclasses.fields(AdapterConfig)}}
        location = "top" if method.within else None
        yield name, AdapterConfig(method=name, d_s=6 if method.sized else None, location=location, **kw)
        yield name + "-frozen", AdapterConfig(method=name, d_s=4 if method.sized else None, heads=2, freeze_trunk=True)


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny") / "config.json"
    path.write_text(json.dumps(tiny_config_dict()))
    return path


def _priced(tiny_config, cfg: AdapterConfig) -> dict:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pals_core.cli.budget",
            "--model",
            str(tiny_config),
            "--tasks",
            ",".join(TASKS),
            *cfg.to_argv(),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    [row] = json.loads(p.stdout)["rows"]
    return row


@pytest.mark.parametrize("label,cfg", list(_designs()), ids=[n for n, _ in _designs()])
def test_the_model_a_run_builds_holds_what_pals_budget_prices(tiny_config, label, cfg):
    from pals_core.base_model import model_shape
    from pals_core.budget.tasks import Task
    from pals_core.model import MultiTaskModel
    from pals_core.train.params import run_params

    row = _priced(tiny_config, cfg)
    model = MultiTaskModel.from_base(TINY, cfg, TASKS)  # what pals-train builds for these flags
    assert sum(p.numel() for p in model.parameters()) == row["params_total"]
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == row["params_trained"]
    params = run_params(
        model, model_shape(TINY), [Task(t, n) for t, n in TASKS.items()], cfg
    )  # the trainer's own check
    assert params["total"] == row["params_total"]


@pytest.mark.slow
def test_pals_train_reports_what_pals_budget_prices_for_non_default_fields(tiny_config, tmp_path, glue_dir):
    cfg = AdapterConfig(method="proj_ffn_top", d_s=8, n_top=2, ffn_ratio=4, per_task_pooler=True)
    run = TrainConfig(
        tasks=list(TASKS),
        adapter=cfg,
        model=TINY,
        glue_dir=str(glue_dir),
        out=str(tmp_path / "run"),
        steps=2,
        eval_every=2,
        batch_size=4,
        max_train_examples=16,
        max_eval_examples=16,
        num_threads=1,
    )
    p = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.train", *run.to_argv(), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    row = _priced(tiny_config, cfg)
    assert summary["params"]["total"] == row["params_total"] and summary["params"]["ratio"] == pytest.approx(
        row["ratio"]
    )
    stored = TrainConfig.from_dict(json.loads((tmp_path / "run" / "config.json").read_text()))
    # every field of the design reached the run, and the trunk it trained (proj_ffn_top's own: fine-tuned) is stated
    assert stored.adapter == replace(cfg, freeze_trunk=False)


@pytest.mark.parametrize("method", [m for m in METHODS if not get_method(m).sized])
def test_sizeless_methods_are_priced_without_a_budget(method):
    p = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", "--method", method, "--tasks", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    [row] = json.loads(p.stdout)["rows"]
    assert row["d_s"] is None and row["feasible"] and row["params_task_specific"] > 0
