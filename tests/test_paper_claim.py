"""benchmarks/paper_claim.py's verdicts: what its report says the seeds support (Welch intervals against the
references, Holm-corrected differences), on aggregates built by the trainer's own ``aggregate``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pals_core.train.aggregate import aggregate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pc():
    spec = importlib.util.spec_from_file_location("paper_claim", ROOT / "benchmarks" / "paper_claim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _design(averages: list[float]) -> dict:
    """A multi-seed aggregate whose seeds score ``averages`` on RTE (their dev average: one task)."""
    summaries = [
        {
            "scores": {"rte": {"accuracy": a}},
            "average": a,
            "params": {"total": 1},
            "best_step": 1,
            "wall_time_s": 1.0,
            "config": {},
        }
        for a in averages
    ]
    return aggregate(list(range(len(averages))), summaries, [f"seed-{k}" for k in range(len(averages))])


def test_claim_verdicts(pc):
    behind = {"pals": _design([0.60, 0.61, 0.62]), "separate": _design([0.70, 0.71, 0.72])}
    text = "\n".join(pc.against_references(behind))
    assert "| pals | -10.00 [" in text and "separate models are ahead, by " in text
    assert "at this scale the claim does not hold" in text and "stands uncorrected" in text

    close = {"pals": _design([0.60, 0.65, 0.70]), "separate": _design([0.62, 0.66, 0.69])}
    text = "\n".join(pc.against_references(close))
    assert "the seeds cannot tell them apart; they rule out PALs trailing by more than" in text

    ahead = {"pals": _design([0.80, 0.81, 0.82]), "separate": _design([0.70, 0.71, 0.72])}
    assert "PALs is ahead of separate models, by " in "\n".join(pc.against_references(ahead))
    # one seed has no interval: nothing to say against it yet
    assert pc.against_references({"pals": _design([0.6]), "separate": _design([0.7])}) == []


def test_differences_are_holm_corrected(pc):
    aggs = {
        "shared": _design([0.60, 0.61, 0.62]),
        "separate": _design([0.70, 0.71, 0.72]),
        "pals": _design([0.60, 0.65, 0.70]),
    }
    lines = pc.differences(["rte"], aggs)
    assert lines[0] == "On the dev average (3 comparisons, Holm-corrected):"
    assert lines[1].startswith("- shared < separate on the average: -10.00 [") and "Holm p = " in lines[1]
    assert not any("pals" in line and line.startswith("- ") and "Holm p" in line for line in lines)
    assert "On the per-task scores (3 comparisons, Holm-corrected):" in lines


def test_schedule_is_seed_major_longest_first(pc):
    """The sweep's pool takes every design's seed 0 first, and within a seed the 4,000-step multi-task runs before
    separate's 800-step one-task runs: a session's end then finds both processes busy on comparable work."""
    from pals_core import AdapterConfig
    from pals_core.train.config import TrainConfig

    designs = ("shared", "separate-cola", "separate-rte", "pals", "houlsby")
    leaves = [
        TrainConfig(
            tasks=["rte"],
            adapter=AdapterConfig(method="shared"),
            seed=k,
            out=f"{d}/seed-{k}",
            steps=800 if d.startswith("separate") else 4000,
        )
        for k in (1, 0)
        for d in designs
    ]
    expected = ("shared", "pals", "houlsby", "separate-cola", "separate-rte")
    assert [c.out for c in pc.schedule(leaves)] == [f"{d}/seed-{k}" for k in (0, 1) for d in expected]


def test_a_sweep_continued_elsewhere_keeps_its_plan_and_takes_this_machines_settings(
    pc, tmp_path, glue_dir, monkeypatch
):
    argv = ["paper_claim.py", "--out", str(tmp_path), "--model", "tiny", "--tasks", "rte", "--steps", "20"]
    monkeypatch.setattr("sys.argv", [*argv, "--threads", "1", "--glue-dir", str(glue_dir)])
    a = pc.parse()
    first = pc.design_plan(a, "pals", pc.base_config(a, ["rte"]), [0, 1])
    assert pc.sd.SeedsPlan.read(tmp_path / "pals").seeds == [0, 1]
    a.threads, a.cache_dir = 3, str(tmp_path / "cache")
    again = pc.design_plan(a, "pals", pc.base_config(a, ["rte"]), [0, 1])
    assert (again.template.num_threads, again.template.cache_dir) == (3, str(tmp_path / "cache"))
    assert again.template.resumable_view() == first.template.resumable_view() and again.out == tmp_path / "pals"
    a.lr = 0.5
    with pytest.raises(SystemExit, match=r"other settings \(lr\)"):
        pc.design_plan(a, "pals", pc.base_config(a, ["rte"]), [0, 1])
