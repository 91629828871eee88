"""The machine constraints are records (``pals_core.footprint.constraints.CONSTRAINTS``, docs/design.md "Recipe: add a
constraint"): each is read the same way by ``pals-budget``, ``pals-study``, the explorer's sidebar and its address; the
solver sizes d_s to the tightest; ``--memory-infer`` (serving memory) is the record added to prove it; a bad bound is
one line, exit 2. The address reads every key with the CLIs' own parsers (no second parser)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from memory_probe import inference_peak_bytes
from streamlit.testing.v1 import AppTest
from transformers import BertConfig

from explorer import address, calc
from explorer.inputs import TINY, RawInputs, bound_key, parse_bound, parse_inputs
from pals_core.budget.costs import design, evaluate
from pals_core.budget.machine import Machine, resources
from pals_core.budget.solver import Budget
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.cli.budget import build_parser, run
from pals_core.families.shapes import PRESETS, from_hf_config
from pals_core.flags import flags_of, given_values
from pals_core.footprint.constraints import BY_FIELD, CONSTRAINTS, PARAMS
from pals_core.footprint.memory import inference_activation_bytes, memory_infer
from pals_core.pricing.activations import Conditions
from pals_core.pricing.config import AdapterConfig

ROOT = Path(__file__).resolve().parents[1]
GOOD = {"memory": ["24GB", "80GiB", "1.5e10"], "max_slowdown": ["1.2", "1"], "memory_infer": ["2GB", "512MiB"]}
BAD = {"memory": ["8", "x", "-3GB"], "max_slowdown": ["0.5", "fast"], "memory_infer": ["8", "2 parsecs", "0GB"]}


def test_every_constraint_is_a_machine_field_a_flag_and_an_address_key():
    fields = {f.name for f in dataclasses.fields(Machine)}
    cli_flags = {f.flag for f in flags_of(Machine)}
    for c in CONSTRAINTS:
        assert c.field in fields and f"--{c.field.replace('_', '-')}" in cli_flags
        assert c.field in address.KEYS
        assert c.field in GOOD and c.field in BAD  # a new record is tested here too
    assert "--memory-infer" in build_parser().format_help()


@pytest.mark.parametrize("field,text", [(f, t) for f in GOOD for t in GOOD[f]])
def test_a_bound_reads_the_same_from_the_cli_the_sidebar_and_the_address(field, text):
    flag = f"--{field.replace('_', '-')}"
    from_cli = given_values(build_parser().parse_args([flag, text]), Machine)[field]
    assert parse_bound(field, text) == from_cli
    assert parse_inputs(RawInputs(bounds={field: text})).bounds == ((field, from_cli),)
    link = address.from_query({field: text})
    assert link.errors == [] and link.widgets == {bound_key(BY_FIELD[field]): text}


@pytest.mark.parametrize("field,text", [(f, t) for f in BAD for t in BAD[f]])
def test_a_bad_bound_is_one_line_everywhere(field, text, capsys):
    from pals_core.cli.budget import main

    flag = f"--{field.replace('_', '-')}"
    assert main(["--budget", "1.1", f"{flag}={text}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pals-budget: error: {flag} {text!r}") and "\n" not in err
    with pytest.raises(ValueError, match=flag):
        parse_inputs(RawInputs(bounds={field: text}))
    link = address.from_query({field: text, "heads": "4"})  # the rest of the link still applies
    assert link.widgets == {"heads": 4} and len(link.errors) == 1
    assert link.errors[0].startswith(f"the link's {field}={text!r} was not used: {flag}")


def test_memory_infer_is_one_line_exit_2_from_the_console_script():
    exe = Path(sys.executable).with_name("pals-budget")
    p = subprocess.run([str(exe), "--budget", "1.1", "--memory-infer", "8"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert "--memory-infer '8'" in p.stderr and "Traceback" not in p.stderr


def _json(argv: list[str]) -> dict:
    import json

    return json.loads(run([*argv, "--json"]))


def test_memory_infer_binds_the_size():
    """Between the smallest design's serving memory and the budget's: d_s is the largest multiple of h_s whose serving
    memory fits, the row says so (binds memory_infer), and the next size up would not fit."""
    common = ["--tasks", "8", "--budget", "1.13", "--method", "pals", "--device", "h100", "--batch", "64"]
    free = _json(common)["rows"][0]
    limit = 0.8 * 2**30
    assert free["memory_infer"] > limit  # the parameter budget alone serves in more than 0.8 GiB
    out = _json([*common, "--memory-infer", "0.8GiB"])
    row = out["rows"][0]
    assert out["machine"]["memory_infer"] == limit
    assert row["binding"] == "memory_infer" and row["feasible"] and row["memory_infer"] <= limit
    assert row["d_s"] < free["d_s"]
    ds = design(
        PRESETS["bert-base-uncased"], parse_tasks("8"), AdapterConfig(method="pals", d_s=row["d_s"] + 12), seq_len=128
    )
    bigger = evaluate(ds, row["d_s"] + 12)
    resources(bigger, ds, Machine(batch=64, device="h100", memory_infer="0.8GiB"), Conditions())
    assert bigger.memory_infer > limit and not bigger.feasible
    text = run([*common, "--memory-infer", "0.8GiB", "--wide"])
    header = text.split("\n\n")[1].splitlines()[0]  # after the line that says which model is priced
    assert "serving ≤ 0.8GiB" in header and "memory_infer" in text


def test_the_tightest_constraint_binds():
    """Several bounds: d_s is the smallest of their sizes, and the row names the record that set it."""
    common = ["--tasks", "8", "--budget", "1.13", "--method", "pals", "--device", "h100", "--batch", "64"]
    sizes = {}
    for field, text in (("memory", "7.1GiB"), ("memory_infer", "0.8GiB"), ("max_slowdown", "1.07")):
        row = _json([*common, f"--{field.replace('_', '-')}", text])["rows"][0]
        assert row["binding"] == BY_FIELD[field].name
        sizes[field] = row["d_s"]
    both = _json([*common, "--memory", "7.1GiB", "--memory-infer", "0.8GiB", "--max-slowdown", "1.07"])["rows"][0]
    assert both["d_s"] == min(sizes.values())
    assert both["binding"] == BY_FIELD[min(sizes, key=sizes.get)].name
    assert _json(common)["rows"][0]["binding"] == PARAMS


def test_the_explorer_solves_the_rows_pals_budget_solves():
    raw = RawInputs(
        model="bert-base-uncased",
        methods=["pals", "lora"],
        location="all",
        bounds={"memory_infer": "0.8GiB", "max_slowdown": "1.2"},
    )
    inp = parse_inputs(raw)
    machine = Machine(batch=64, device="h100")
    page = {(c.method, c.location): (c.d_s, c.binding, c.feasible) for c in calc.table(inp, machine)}
    cli = rows(
        inp.model,
        inp.tasks,
        budget=inp.budget,
        methods=["pals", "lora"],
        location="all",
        seq_len=inp.seq_len,
        machine=Machine(batch=64, device="h100", memory_infer="0.8GiB", max_slowdown=1.2),
        model_conditions=inp.conditions,
    )
    assert page == {(c.method, c.location): (c.d_s, c.binding, c.feasible) for c in cli}
    assert {b for _, b, _ in page.values()} == {"memory_infer"}
    plain = calc.table(parse_inputs(dataclasses.replace(raw, bounds={})), machine)
    assert all(c.binding is None for c in plain)  # no bound: rows on parameters only, as before


def test_the_address_round_trips_the_bounds():
    raw = RawInputs(
        model=TINY,
        glue_tasks=["rte", "mrpc"],
        methods=["pals"],
        location="top",
        bounds={"memory": "24GB", "memory_infer": "512MiB", "max_slowdown": "1.5"},
    )
    q = address.to_query(raw)
    assert {q[c.field] for c in CONSTRAINTS} == {"24GB", "512MiB", "1.5"}
    link = address.from_query(q)
    assert link.errors == []
    bounds = {c.field: link.widgets[bound_key(c)] for c in CONSTRAINTS}
    back = dataclasses.replace(
        RawInputs(),
        **{k: v for k, v in link.widgets.items() if k in {f.name for f in dataclasses.fields(RawInputs)}},
        budget_value=link.widgets["budget_ratio"],
        bounds=bounds,
    )
    assert parse_inputs(back) == parse_inputs(raw)
    assert "memory_infer" not in address.to_query(dataclasses.replace(raw, bounds={}))


def test_the_address_reads_with_the_clis_parsers():
    """methods, location, heads and the budget as pals-study / pals-budget read them (their messages too)."""
    link = address.from_query({"methods": "pals, lora,pals", "location": "0, 3", "heads": "6", "extra": "250k"})
    assert link.errors == []
    assert link.widgets["methods"] == ["pals", "lora"] and link.widgets["location_custom"] == "0,3"
    assert link.widgets["heads"] == 6 and link.widgets["budget_extra"] == "250k"
    bad = address.from_query({"methods": "pals,nope", "location": "x", "heads": "h", "budget": "1.1", "extra": "1M"})
    assert bad.widgets == {"budget_kind": "ratio", "budget_ratio": "1.1"}  # the first budget still applies
    assert len(bad.errors) == 4
    joined = "\n".join(bad.errors)
    for needle in (
        "unknown method 'nope'",
        "--location 'x'",
        "--heads 'h'",
        "conflicting budgets: --budget and --extra",
    ):
        assert needle in joined


def test_pals_study_stores_and_describes_the_serving_bound():
    from studies.cli import build_parser as study_parser
    from studies.cli import requested_settings
    from studies.runner import machine_text

    args = study_parser().parse_args(
        ["create", "design", "--model", "tiny", "--memory-infer", "2GB", "--storage", "sqlite:///:memory:"]
    )
    settings, given = requested_settings("design", args)
    assert settings.machine["memory_infer"] == "2GB" and "machine" in given
    assert settings.machine_obj().memory_infer == "2GB"
    assert "serving ≤ 2GB" in machine_text(settings)


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_a_fixed_design_study_takes_the_serving_bound(tmp_path, capsys):
    """A fixed-design study's d_s is the solver's under --memory-infer (as pals-budget's); a fixed size over it is
    one line naming serving memory, exit 2."""
    import optuna

    from pals_core.base_model import model_conditions, model_shape
    from studies.cli import main

    common = ["--model", "tiny", "--tasks", "rte,mrpc", "--batch-size", "16", "--max-len", "64"]
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert (
        main(["create", "optimizer", "--storage", url, "--method", "low_rank", "--memory-infer", "5.51MB", *common])
        == 0
    )
    stored = optuna.load_study(study_name="optimizer", storage=url).user_attrs["pals_settings"]
    [row] = rows(
        model_shape("tiny"),
        parse_tasks("rte,mrpc"),
        budget=Budget(ratio=1.1),
        methods=["low_rank"],
        location="all",
        machine=Machine(batch=16, device="h100", memory_infer="5.51MB"),
        seq_len=64,
        model_conditions=model_conditions("tiny"),
    )
    assert row.binding == "memory_infer" and stored["adapter"]["d_s"] == row.d_s
    assert stored["machine"]["memory_infer"] == "5.51MB"
    capsys.readouterr()
    assert (
        main(
            [
                "create",
                "optimizer",
                "--storage",
                url,
                "--study-name",
                "big",
                "--method",
                "low_rank",
                "--d-s",
                "32",
                "--memory-infer",
                "5.5MB",
                *common,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "of serving memory" in err and "over the budget" in err and "\n" not in err


# --- serving memory against torch ------------------------------------------------------------------------------------

TINY_BERT = dict(
    hidden_size=24,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=37,
    vocab_size=41,
    max_position_embeddings=16,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


@pytest.mark.parametrize(
    "method,location,d_s,tasks",
    [
        ("pals", "all", 8, {"rte": 2, "stsb": 1}),
        ("lora", "top", 6, {"mnli": 3, "cola": 2, "sst2": 2}),
        ("houlsby", "all", 5, {"a": 4}),
        ("shared", None, None, {"rte": 2, "mnli": 3}),
    ],
)
def test_serving_memory_against_torch(method, location, d_s, tasks):
    """``memory_infer`` = weights + the activations live at the peak of ``predict_all``. The weights are torch's to the
    byte (every task's head and adapter, the trunk once, at the serving precision); the activations are the
    documented estimate (docs/design.md "Memory (bytes)"), held here to the band it claims against the measured peak."""
    from pals_core.model import MultiTaskBert

    torch.manual_seed(0)
    hf = BertConfig(**TINY_BERT)
    cfg = AdapterConfig(method=method, d_s=d_s, location=location, heads=2)
    model = MultiTaskBert.from_base_config(hf, cfg, tasks)
    batch, n = 3, 9
    ds = design(from_hf_config(hf.to_dict()), parse_tasks(tasks), cfg, seq_len=n)
    cost = evaluate(ds, d_s)
    cond = Conditions(train=False)
    torch_weights = sum(p.numel() * p.element_size() for p in model.parameters())
    activations = inference_activation_bytes(ds, batch, cond)
    assert memory_infer(ds, d_s, cost, batch=batch, cond=cond) - activations == torch_weights
    peak = inference_peak_bytes(model, batch, n)
    assert 0.6 * peak <= activations <= 1.2 * peak, (activations, peak)


# --- the page --------------------------------------------------------------------------------------------------------


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("PALS_RUNS_DIR", str(d))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    return d


def test_the_page_takes_its_bounds_from_a_link(runs_dir):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in {"methods": "pals", "location": "all", "memory_infer": "0.6GiB", "memory": "8"}.items():
        at.query_params[k] = v
    at.run()
    errors = [e.value for e in at.error] + [str(e.value) for e in at.exception]
    assert len(errors) == 1 and errors[0].startswith("the link's memory='8' was not used: --memory '8'"), errors
    for c in CONSTRAINTS:  # a field per record, in the sidebar
        assert at.sidebar.text_input(key=bound_key(c)).value == ("0.6GiB" if c.field == "memory_infer" else "")
    q = {k: (v[-1] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert q["memory_infer"] == "0.6GiB" and "memory" not in q
    assert any("serving ≤ 0.6GiB" in m.value for m in at.markdown)
    table = next(d.value for d in at.dataframe if "binds" in d.value.columns)  # the rows solved within the bound
    machine = Machine(
        batch=32, device=at.session_state["machine_device"] if "machine_device" in at.session_state else None
    )
    want = rows(
        PRESETS["bert-base-uncased"],
        parse_tasks("8"),
        budget=Budget(ratio=1.13),
        methods=["pals"],
        location="all",
        seq_len=128,
        machine=dataclasses.replace(machine, memory_infer="0.6GiB"),
        model_conditions=parse_inputs(RawInputs()).conditions,
    )
    assert list(table["binds"]) == [c.binding for c in want] == ["memory_infer"]
    assert list(table["d_s"]) == [str(c.d_s) for c in want]
