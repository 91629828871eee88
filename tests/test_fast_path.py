"""The calculator's fast path is the trace: memory and step time derived once per model × method.

``trace_forward`` replays each part of the forward once per kind (a plain layer, an adapted layer of a method whose
hooks give a ``layer_key``, the embeddings, the head) and applies the record wherever it recurs; ``step_poly`` prices
each op once and keeps the step time as a polynomial in d_s. Both are held here to the reference — every op of the
forward replayed in place (``records=False``) and priced one by one (``work_seconds`` at an integer d_s): the saved
bytes to the byte, the op list op for op, the step time to rounding, for one preset of every family × every method ×
location × ``freeze_trunk`` × the conditions (sdpa/eager, CPU/CUDA masks, bf16, eval) × device and precision, covered
pairwise (tests/pairwise.py; ``PALS_FULL_GRID=1`` runs the product), and on every row of the default table. What a
user sees — ``pals-budget``'s numbers — is unchanged; how long it takes is ``benchmarks/bench_budget.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
from pairwise import grid

from pals_core.budget.costs import design
from pals_core.budget.machine import Machine
from pals_core.budget.solver import Budget
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.cli.budget import build_parser, main, terminal_width
from pals_core.families.registry import get_family
from pals_core.families.shapes import PRESETS, conditions_for_model
from pals_core.footprint.memory import activation_bytes, trace_forward
from pals_core.footprint.timing import DeviceProfile, load_profile, step_seconds, work_seconds
from pals_core.methods.registry import METHODS
from pals_core.pricing.activations import Conditions
from pals_core.pricing.config import AdapterConfig

CPU = DeviceProfile(
    "cpu-test",
    "cpu",
    matmul_flops=8e10,
    bandwidth=1.6e10,
    kernel_overhead_s=6e-6,
    rng_s_per_element=7e-9,
    special_s_per_element=8e-10,
    flash_forward=(2.4e-9, 1.9e-11),
    flash_backward=(9e-9, 1.7e-11),
    matmul_flops_bf16=1.5e11,
)
PROFILES = {"h100": load_profile("h100"), "cpu": CPU}
CONDITIONS = {
    "sdpa-cpu": Conditions(),
    "eager": Conditions(attention="eager"),
    "cuda-bf16": Conditions(backend="cuda", float_bytes=2),
    "eval": Conditions(train=False, hidden_dropout=0.0),
}
FAMILY_PRESETS = (
    "bert-tiny",
    "all-MiniLM-L6-v2",
    "roberta-base",
    "distilbert-base-uncased",
    "electra-small-discriminator",
    "deberta-v3-small",
    "ModernBERT-base",
    "mpnet-base",
    "albert-base-v2",
)
LOCATIONS = ("all", "top", "bottom", (0, 1))
TASKS = parse_tasks({"rte": 2, "stsb": 1, "mnli": 3})
BATCH, SEQ = 3, 11


def _design(preset: str, method: str, location, freeze: bool):
    """The design, or None where the family or the model refuses it (those cases are not in the grid)."""
    cfg = AdapterConfig(method=method, location=location if METHODS[method].within else None, freeze_trunk=freeze)
    try:
        return design(PRESETS[preset], TASKS, cfg, seq_len=SEQ, check_size=False)
    except ValueError:
        return None


def _sizes(ds) -> tuple[int, ...]:
    if not ds.method.sized:
        return (0,)
    return tuple(ds.step * k for k in (1, 3, 8, 64))


CASES = [
    (preset, method, location, freeze, cond, device, precision)
    for preset in FAMILY_PRESETS
    for method in METHODS
    for location in (LOCATIONS if METHODS[method].within else (None,))
    for freeze in (False, True)
    for cond in CONDITIONS
    for device in PROFILES
    for precision in ("fp32", "bf16")
    if (family := get_family(PRESETS[preset].family)).replay is not None
    and not family.refusal(method)
    and (cond != "eager" or "eager" in family.attention)
]


@pytest.mark.parametrize(
    "preset,method,location,freeze,cond,device,precision",
    grid(CASES, skip=[(0, 1)], also=lambda c: [(c[0], c[1])] if c[2] in ("all", None) else []),
)
def test_the_recorded_forward_is_the_full_replay(preset, method, location, freeze, cond, device, precision):
    """Saved bytes equal to the byte, the op list op for op (so the op-by-op time is bit for bit the same), and the
    step-time polynomial equal to the op-by-op sum at every size up to rounding."""
    ds = _design(preset, method, location, freeze)
    if ds is None:
        pytest.skip(f"{preset} refuses {method} @ {location}")
    conditions, profile = CONDITIONS[cond], PROFILES[device]
    fast = trace_forward(ds, BATCH, conditions)
    ref = trace_forward(ds, BATCH, conditions, records=False)
    assert fast.total == ref.total
    assert activation_bytes(ds, BATCH, conditions) == ref.total
    for s in _sizes(ds):
        slow = work_seconds(ref, s, profile, precision)
        assert work_seconds(fast, s, profile, precision) == slow  # the same ops in the same order
        assert step_seconds(ds, s, BATCH, conditions, profile, precision) == pytest.approx(slow, rel=1e-12, abs=0)


def test_every_row_of_the_default_table_is_the_trace():
    """``pals-budget --tasks 8 --budget 1.13``'s rows: memory and step time as the reference replay gives them at each
    row's d_s (BERT-base, the default machine)."""
    model, tasks, machine = PRESETS["bert-base-uncased"], parse_tasks(8), Machine()
    cond = machine.conditions(conditions_for_model(model.name))
    table = rows(model, tasks, budget=Budget(ratio=1.13), machine=machine)
    assert len(table) == 28 and not table.refused
    for row in table:
        cfg = AdapterConfig(method=row.method, location=row.location, d_s=row.d_s)
        ds = design(model, tasks, cfg, check_size=False)
        ref = trace_forward(ds, machine.batch, cond, records=False)
        assert row.memory_train["activations"] == ref.total(row.d_s or 0), (row.method, row.location)
        assert row.time_step_s == pytest.approx(work_seconds(ref, row.d_s or 0, machine.profile()), rel=1e-12, abs=0)


def test_a_rewritten_profile_is_read_again(tmp_path):
    """Profiles are read once per file version: pals-calibrate rewriting ``local`` while the explorer runs is seen."""
    path = tmp_path / "dev.json"
    first = replace(CPU, name="dev")
    path.write_text(json.dumps(first.as_dict()))
    assert load_profile(str(path)) == first and load_profile(str(path)) is load_profile(str(path))
    second = replace(first, matmul_flops=2 * first.matmul_flops, source="recalibrated")
    path.write_text(json.dumps(second.as_dict()))
    assert load_profile(str(path)) == second
    assert load_profile("H100") is load_profile("h100")  # a built-in: read once per process


@pytest.mark.parametrize("columns", ["", "70", "150"])
def test_help_and_table_width_are_argparse_and_shutil_s(monkeypatch, columns):
    """The width the CLI reads without importing shutil is the one shutil (and so argparse) would read."""
    import shutil

    monkeypatch.setenv("COLUMNS", columns)
    assert terminal_width() == shutil.get_terminal_size((100, 24)).columns
    parser = build_parser()
    ours = parser.format_help()
    parser.formatter_class = argparse.HelpFormatter
    assert ours == parser.format_help()


def test_the_console_entry_answers_as_main(capsys):
    """``console()`` (a process of its own: collector off, frozen at exit) prints what ``main`` prints."""
    argv = ["--tasks", "8", "--budget", "1.13", "--wide"]
    assert main(argv) == 0
    want = capsys.readouterr().out
    code = "import sys; from pals_core.cli.budget import console; sys.exit(console())"
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want
    bad = subprocess.run([sys.executable, "-c", code, "--tasks", "8"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
