"""The plan of a run made of runs (OUT/seeds.json, OUT/separate.json): one reader and writer for both, and the one
seed loop that ``pals-train --seeds`` and the studies' trials over seeds train through."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from pals_core.budget import AdapterConfig
from pals_core.train.config import TrainConfig
from pals_core.train.seeds import SeedsPlan
from pals_core.train.separate import SeparatePlan

GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
needs_glue = pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")


def _template(out: Path, **kw) -> TrainConfig:
    return TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="shared"), model="tiny", out=str(out), steps=4, **kw)


def test_both_plans_are_written_whole_and_read_back_where_the_folder_now_lies(tmp_path):
    first = tmp_path / "first"
    seeds = SeedsPlan(_template(first, num_threads=1), [0, 3], separate=True)
    separate = SeparatePlan(_template(first), {"rte": 4}, {"rte": 2}, {"rte": 16})
    seeds.write()
    separate.write()
    assert sorted(p.name for p in first.iterdir()) == ["seeds.json", "separate.json"]  # no temporary file left
    assert json.loads((first / "seeds.json").read_text())["kind"] == "pals-train/seeds"
    moved = tmp_path / "moved"
    first.rename(moved)

    s = SeedsPlan.read(moved)
    assert (s.seeds, s.separate, s.out) == ([0, 3], True, moved)
    assert s.template.resumable_view() == seeds.template.resumable_view()
    p = SeparatePlan.read(moved)
    assert (p.steps, p.eval_every, p.sizes, p.out) == ({"rte": 4}, {"rte": 2}, {"rte": 16}, moved)
    assert p.configs()[0].out == str(moved / "task-rte")

    # resumed on another machine: where things lie and how it computes come from there, what is trained does not
    here = replace(seeds.template, num_threads=3, device="cpu", glue_dir="/elsewhere", seed=9, steps=99)
    r = SeedsPlan.read(moved, local=here)
    assert (r.template.num_threads, r.template.device, r.template.glue_dir) == (3, "cpu", "/elsewhere")
    assert (r.template.seed, r.template.steps, r.out) == (0, 4, moved)


@pytest.mark.parametrize(
    "plan, text, says",
    [
        (SeedsPlan, "{not json", "is not valid JSON"),
        (SeedsPlan, "[0, 1]", "is not a multi-seed plan"),
        (SeedsPlan, '{"kind": "pals-train/separate", "template": {}}', "is not a multi-seed plan"),
        (SeedsPlan, '{"kind": "pals-train/seeds", "seeds": [0, 1]}', "damaged multi-seed plan (no 'template')"),
        (SeedsPlan, '{"kind": "pals-train/seeds", "seeds": [0], "template": {"bogus": 1}}', "unknown TrainConfig"),
        (
            SeparatePlan,
            json.dumps({"kind": "pals-train/separate", "template": _template(Path("x")).as_dict()}),
            "damaged separate-models plan (no 'steps_per_task')",
        ),
    ],
)
def test_a_damaged_plan_is_one_line_naming_its_file(tmp_path, plan, text, says):
    (tmp_path / plan.FILE).write_text(text)
    with pytest.raises(ValueError) as e:
        plan.read(tmp_path)
    assert says in str(e.value) and str(tmp_path / plan.FILE) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["seeds.json", "separate.json"])
def test_resuming_a_damaged_plan_exits_2_with_one_line(tmp_path, name, pals_train):
    out = tmp_path / "run"
    out.mkdir()
    kind = "pals-train/seeds" if name == "seeds.json" else "pals-train/separate"
    (out / name).write_text(json.dumps({"kind": kind, "seeds": [0, 1]}))  # the template lost
    done = pals_train("--resume", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and f"{out / name} is a damaged" in done.stderr


class Pruned(Exception):
    """What a study's pruner raises from the first seed's evaluation callback."""


@needs_glue
@pytest.mark.slow  # two tiny real runs, twice
def test_the_seed_loop_reports_the_first_seeds_evaluations_and_hands_over_each_finished_run(tmp_path, token_cache):
    from pals_core.train.rundir import RunDir
    from pals_core.train.seeds import run_seeds

    def plan(out: Path) -> SeedsPlan:
        template = TrainConfig(
            tasks=["rte"],
            adapter=AdapterConfig(method="pals", d_s=8, heads=2),
            model="tiny",
            glue_dir=str(GLUE),
            out=str(out),
            steps=4,
            batch_size=4,
            max_len=48,
            eval_every=2,
            max_train_examples=16,
            max_eval_examples=8,
            cache_dir=token_cache,
            num_threads=1,
        )
        p = SeedsPlan(template, [0, 1])
        p.write()
        return p

    seen, done = [], []
    agg = run_seeds(
        plan(tmp_path / "kept"),
        progress=False,
        on_eval=lambda step, scores, average: seen.append(step),
        on_done=lambda leaf: done.append(Path(leaf.out).name),
    )
    assert seen == [2, 4] and done == ["seed-0", "seed-1"]  # the first seed's evaluations only; each run once
    assert agg["seeds"] == [0, 1] and json.loads((tmp_path / "kept" / "summary.json").read_text()) == agg
    assert RunDir(tmp_path / "kept").read_progress()["status"] == "finished"

    def prune(step, scores, average):
        raise Pruned(f"dev average {average:.4f} at step {step} is below the median")

    with pytest.raises(Pruned):
        run_seeds(plan(tmp_path / "pruned"), progress=False, on_eval=prune)
    parent = RunDir(tmp_path / "pruned").read_progress()
    assert parent["status"] == "stopped" and parent["error"].startswith("Pruned: dev average")  # not "failed"
    assert RunDir(tmp_path / "pruned" / "seed-0").read_progress()["status"] == "stopped"
    assert not (tmp_path / "pruned" / "seed-1").exists() and not (tmp_path / "pruned" / "summary.json").exists()
