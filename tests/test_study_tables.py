"""BENCHMARKS.md's accuracy studies say what their committed runs hold: the third study's table shows each task's
metric that the dev average is made of (MRPC's accuracy, not its F1) and each seed's average, every study's seed
spread is the one measured, and each hold-out check names the number of families it fitted."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from pals_core import score_model as sm

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TEXT = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")


def section(heading: str) -> str:
    start = TEXT.index(heading)
    end = TEXT.find("\n### ", start + len(heading))
    return TEXT[start : end if end != -1 else None]


def seeds_by_size(folder: Path) -> dict[tuple[str, int], list[dict]]:
    """(method, d_s) → the single runs' summaries, in seed order."""
    out = defaultdict(list)
    for f in sorted(folder.rglob("summary.json")):
        s = json.loads(f.read_text())
        if isinstance(s.get("average"), (int, float)):
            out[(s["config"]["adapter"]["method"], s["config"]["adapter"]["d_s"])].append(s)
    return {k: sorted(v, key=lambda s: s["config"]["seed"]) for k, v in out.items()}


def pooled_sd(groups) -> float:
    """The pooled standard deviation between the seeds of one size: sqrt(Σ within-size squares / Σ (n − 1))."""
    groups = [g for g in groups if len(g) > 1]
    ss = sum(sum((x - statistics.mean(g)) ** 2 for x in g) for g in groups)
    return math.sqrt(ss / sum(len(g) - 1 for g in groups))


def test_the_third_studys_table_shows_the_metrics_its_average_is_made_of():
    text = section("### The third study")
    header = next(line for line in text.splitlines() if line.startswith("| d_s |"))
    runs = seeds_by_size(RESULTS / "accuracy_study_3")
    first = runs[("houlsby", 4)][0]
    shown = {"accuracy": "acc.", "pearson": "Pearson"}
    names = {"sst2": "SST-2", "stsb": "STS-B", "mrpc": "MRPC"}
    order = ("sst2", "stsb", "mrpc")
    metrics = [first["tasks"][t]["metric"] for t in order]  # what each task brings to the dev average
    assert metrics == ["accuracy", "pearson", "accuracy"]
    label = " / ".join(f"{names[t]} {shown[m]}" for t, m in zip(order, metrics))
    assert header.count(label) == 2, header
    rows = [line for line in text.splitlines() if re.match(r"\| \d+ \|", line)][:4]
    assert [int(r.split("|")[1]) for r in rows] == [4, 16, 64, 256]
    for row in rows:
        cells = [c.strip().replace("*", "") for c in row.strip("|").split("|")]
        d = int(cells[0])
        for method, averages, tasks in (("houlsby", cells[1], cells[2]), ("lora", cells[3], cells[4])):
            seeds = runs[(method, d)]
            assert [float(v) for v in averages.split(" / ")] == [round(100 * s["average"], 1) for s in seeds]
            means = [statistics.mean(100 * s["scores"][t][s["tasks"][t]["metric"]] for s in seeds) for t in order]
            assert [float(v) for v in tasks.split(" / ")] == [pytest.approx(m, abs=0.051) for m in means], (d, method)


def test_each_study_states_the_seed_spread_it_measured():
    third = seeds_by_size(RESULTS / "accuracy_study_3")
    averages = {k: [100 * s["average"] for s in v] for k, v in third.items()}
    all_seeds = pooled_sd(averages.values())
    collapsed = {**averages, ("lora", 256): [averages[("lora", 256)][0], averages[("lora", 256)][2]]}
    claim = f"Pooled standard deviation between the seeds of one size: {all_seeds:.1f} points ({pooled_sd(collapsed.values()):.1f} without"
    assert claim in " ".join(section("### The third study").split())
    second = " ".join(section("### The second study").split())
    for folder, lr in (("accuracy_study_2-lr1e-3", "1e-3"), ("accuracy_study_2", "2e-3")):
        runs = seeds_by_size(RESULTS / folder)
        sd = pooled_sd([100 * s["average"] for s in v] for (m, d), v in runs.items() if d <= 64)
        assert f"{sd:.1f} at lr {lr}" in second or f"{sd:.1f} points at lr {lr}" in second, (lr, sd)
    first = seeds_by_size(RESULTS / "accuracy_study")
    spans = {k: max(100 * s["average"] for s in v) - min(100 * s["average"] for s in v) for k, v in first.items()}
    widest = max(spans, key=spans.get)
    text = " ".join(section("### The first study").split())
    assert f"span up to {spans[widest]:.1f} points ({widest[0]} {widest[1]}:" in text
    assert f"one size is {pooled_sd([100 * s['average'] for s in v] for v in first.values()):.1f} points" in text


@pytest.mark.parametrize(
    "heading, folders, tasks",
    [
        ("### The third study", ["accuracy_study_3"], "sst2,stsb,mrpc"),
        ("### The second study", ["accuracy_study_2", "accuracy_study_2-lr1e-3"], "sst2"),
        ("### The first study", ["accuracy_study"], "rte,mrpc,stsb"),
    ],
)
def test_each_hold_out_check_names_the_families_it_fitted(heading, folders, tasks):
    obs = sm.observations([RESULTS / f for f in folders], None, tasks.split(","))
    families = len({o.family for o in obs})
    runs = sum(len(o.runs) for o in obs)
    assert f"{runs} runs in {families} families;" in section(heading)
