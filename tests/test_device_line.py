"""The answer names the machine it prices: where this machine is not the profiled device, ``pals-budget`` (text and
JSON) and the page say so, with the ``--device`` that prices this machine; a run's measured figures name the device
that measured them (tests/test_trainer.py); a profile ``pals-calibrate`` measured says where."""

from __future__ import annotations

import json
import os

import pytest

from pals_core.budget.machine import default_device
from pals_core.cli.budget import run as budget_run
from pals_core.footprint.here import builtin_for_gpu, cpu_name, elsewhere, gpu_names, holds, host_name, is_here
from pals_core.footprint.timing import DeviceProfile, load_profile


@pytest.mark.parametrize(
    "gpu, profile",
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA L4", "l4"),
        ("Tesla T4", "t4"),
        ("NVIDIA L40S", None),  # not an L4
        ("NVIDIA GH200 480GB", None),  # not an H200
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_a_gpus_driver_name_finds_its_profile_by_the_profiles_word(gpu, profile):
    assert builtin_for_gpu(gpu) == profile
    if profile is not None:
        assert holds(load_profile(profile).match, gpu)


def test_pals_budget_says_when_this_machine_is_not_the_device_it_prices():
    text = budget_run(["--tasks", "rte", "--budget", "1.13", "--model", "minilm", "--device", "h100"])
    out = json.loads(
        budget_run(["--tasks", "rte", "--budget", "1.13", "--model", "minilm", "--device", "h100", "--json"])
    )
    here = any(holds("H100", g) for g in gpu_names())
    assert out["machine"]["device"] == "NVIDIA H100 SXM5 80GB" and out["machine"]["device_here"] is here
    flat = " ".join(text.split())
    if here:
        assert out["machine"]["device_note"] is None and "this machine is not it" not in flat
        return
    note = out["machine"]["device_note"]
    assert note.startswith("Step times and memory are for NVIDIA H100 SXM5 80GB; this machine is not it (")
    if not gpu_names():
        assert f"no NVIDIA GPU; its CPU: {cpu_name()}" in note and "pals-calibrate measures this machine" in note
    header = " ".join(text.split("\n\n")[0].split())
    assert header.endswith(note)  # under the question's line that names the machine


def test_a_profile_measured_on_another_host_is_named_so(tmp_path, monkeypatch):
    base = load_profile("t4").as_dict() | {"kind": "cpu", "match": None}
    mine = DeviceProfile.from_dict(base | {"name": "this CPU", "host": host_name()})
    theirs = DeviceProfile.from_dict(base | {"name": "a laptop", "host": "not-" + host_name()})
    assert is_here(mine) and elsewhere(mine) is None
    note = elsewhere(theirs)
    assert note.startswith(f"Step times and memory are for a laptop, measured on not-{host_name()}; this machine")
    assert "pals-calibrate measures this machine" in note
    profile = tmp_path / "local.json"
    profile.write_text(json.dumps(mine.as_dict()))
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(profile))
    assert default_device() == "local"
    if not gpu_names():  # a calibrated CPU: the default device is this machine, nothing to say
        out = json.loads(budget_run(["--tasks", "rte", "--budget", "1.13", "--model", "minilm", "--json"]))
        assert out["machine"]["device"] == "this CPU" and out["machine"]["device_note"] is None
        note = json.loads(
            budget_run(["--tasks", "rte", "--budget", "1.13", "--model", "minilm", "--device", "h100", "--json"])
        )["machine"]["device_note"]
        assert note.endswith("--device local prices this machine (pals-calibrate measured it).")


@pytest.mark.slow  # measures this machine (a few seconds)
def test_pals_calibrate_records_where_it_measured(tmp_path, monkeypatch):
    from pals_core.cli import calibrate

    out = tmp_path / "local.json"
    assert calibrate.main(["--threads", "1", "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["host"] == host_name() and cpu_name() in saved["source"]
    assert is_here(load_profile(str(out)))


def test_the_page_says_it_under_its_answer(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(os.path.join(os.path.dirname(__file__), "..", "app.py"), default_timeout=120)
    at.query_params.update({"model": "minilm", "tasks": "rte,mrpc"})
    at.run()
    note = elsewhere(load_profile(default_device()))
    captions = [c.value for c in at.caption]
    if note is None:
        assert not any("this machine is not it" in c for c in captions)
    else:
        assert note in captions
