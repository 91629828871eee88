"""The explorer's answer, pure parts: the address (URL ↔ question), the recommendation's ranking and the
measured results read from run folders (single runs and ``--seeds`` aggregates, docs/design.md "Baselines and repeated
runs")."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from explorer import address, calc
from explorer.inputs import EMBEDDED, LOCATION_CUSTOM, TASKS_COUNT, TINY, RawInputs, parse_inputs
from pals_core import measured
from pals_core.budget import recommend
from pals_core.budget.recommend import key_of, label
from pals_core.budget.series import budget_used
from pals_core.budget.solver import Budget


@pytest.mark.parametrize(
    "raw",
    [
        RawInputs(),
        RawInputs(
            model=TINY,
            glue_tasks=["rte", "mrpc"],
            budget_kind="extra",
            budget_value="250k",
            methods=["pals", "lora"],
            location="top",
            heads=2,
            seq_len=64,
            convention="paper",
        ),
        RawInputs(
            model=EMBEDDED,
            task_mode=TASKS_COUNT,
            task_count=20,
            budget_kind="per-task",
            budget_value="1.9M",
            location=LOCATION_CUSTOM,
            location_custom="0,3",
            methods=["houlsby"],
        ),
        RawInputs(model="xlm-roberta-base", budget_kind="ratio", budget_value="1.2", budget_of="non-embedding"),
    ],
)
def test_the_address_round_trips_the_question(raw):
    link = address.from_query(address.to_query(raw, "sizes", "pals @ all"), ("designs", "sizes"))
    assert link.errors == [] and link.view == "sizes" and link.design == "pals @ all"
    values = {f"budget_{k}" for k in ("ratio", "extra", "per-task")}
    back = replace(RawInputs(), **{k: v for k, v in link.widgets.items() if k not in values})
    back.budget_value = link.widgets[f"budget_{raw.budget_kind}"]
    assert parse_inputs(back) == parse_inputs(raw)


def test_budget_of_is_in_the_address():
    raw = RawInputs(model="xlm-roberta-base", budget_value="1.2", budget_of="non-embedding")
    q = address.to_query(raw)
    assert q["budget_of"] == "non-embedding"
    link = address.from_query(q)
    assert link.errors == [] and link.widgets["budget_of"] == "non-embedding"
    budget = parse_inputs(
        replace(
            RawInputs(),
            **{k: v for k, v in link.widgets.items() if k != "budget_ratio"},
            budget_value=link.widgets["budget_ratio"],
        )
    ).budget
    assert budget == Budget(ratio=1.2, of="non-embedding") != parse_inputs(replace(raw, budget_of="base")).budget
    assert "budget_of" not in address.to_query(replace(raw, budget_kind="extra", budget_value="15M"))
    bad = address.from_query({"budget_of": "embedding", "heads": "4"})
    assert bad.widgets == {"heads": 4} and len(bad.errors) == 1 and "budget_of" in bad.errors[0]
    assert len(address.from_query({"extra": "15M", "budget_of": "non-embedding"}).errors) == 1


def test_a_bad_address_names_each_bad_key_and_keeps_the_rest():
    link = address.from_query({"budget": "x", "heads": "4", "tasks": "rte,zzz", "colour": "red"})
    assert link.widgets == {"heads": 4}
    assert len(link.errors) == 3 and all(e.startswith("the link's ") for e in link.errors)


def test_the_recommendation_ranks_measured_designs_first():
    inp = parse_inputs(RawInputs())
    costs = calc.table(inp)
    plain = recommend.candidates(costs, inp.budget)
    assert [p.cost.method for p in plain[-2:]] == ["lhuc", "shared"]  # they spend under 1 % of the budget
    assert len({p.cost.method for p in plain}) == len(plain)  # one design per method
    for p in plain:  # each is its method's fitting design that spends the most
        same = [c for c in costs if c.method == p.cost.method and c.feasible]
        assert p.used == max(budget_used(c, inp.budget) for c in same)
    size = {key_of(c): c.d_s for c in costs}  # a score is of the design measured: its size too
    scores = {
        ("lhuc", "all"): recommend.Score(71.0, 1.2, 3),
        ("pals", "top"): recommend.Score(70.0, None, 1, size[("pals", "top")]),
    }
    ranked = recommend.candidates(costs, inp.budget, scores)
    assert [p.key for p in ranked[:2]] == [("lhuc", "all"), ("pals", "top")]
    assert (
        "best measured dev average here: 71.0 ± 1.2 (3 runs); the seeds do not separate it from pals @ top (70.0) "
        "(a single run has no interval)." in recommend.reason(ranked[0], ranked)
    )


def test_the_recommendation_says_whether_the_seeds_separate_the_first_from_the_rest():
    """The best mean is a lead only where its 95 % interval is clear of the others' (the sweep's final numbers:
    Houlsby 63.8 ± 4.5 first by mean, not separated from low-rank or PALs)."""
    inp = parse_inputs(RawInputs())
    costs = calc.table(inp)
    firsts = {p.cost.method: p.key for p in recommend.candidates(costs, inp.budget)}
    size = {key_of(c): c.d_s for c in costs}  # each score measured at the size it ranks
    S = lambda m, mean, ci: recommend.Score(mean, ci, 3, size[firsts[m]])  # noqa: E731
    overlap = {
        firsts["houlsby"]: S("houlsby", 63.81, 4.48),
        firsts["low_rank"]: S("low_rank", 63.80, 2.78),
        firsts["pals"]: S("pals", 63.26, 0.98),
    }
    ranked = recommend.candidates(costs, inp.budget, overlap)
    said = recommend.reason(ranked[0], ranked)
    assert ranked[0].key == firsts["houlsby"]
    assert said.endswith(
        f"; the seeds do not separate it from {label(firsts['low_rank'])} (63.8 ± 2.8), "
        f"{label(firsts['pals'])} (63.3 ± 1.0) (intervals overlap)."
    )
    clear = {firsts["houlsby"]: S("houlsby", 70.0, 1.0), firsts["pals"]: S("pals", 63.3, 1.0)}
    ranked = recommend.candidates(costs, inp.budget, clear)
    assert recommend.reason(ranked[0], ranked).endswith(
        f", its 95 % interval clear of every other measured design's (next: {label(firsts['pals'])}, 63.3 ± 1.0)."
    )
    alone = {firsts["pals"]: S("pals", 63.3, 1.0)}
    ranked = recommend.candidates(costs, inp.budget, alone)
    assert recommend.reason(ranked[0], ranked).endswith("best measured dev average here: 63.3 ± 1.0 (3 runs).")


def test_a_method_measured_at_another_location_is_ranked_by_that_measurement():
    """The sweep measured pals @ all; pals @ top spends more of the budget but was never run. The pals candidate is
    the measured one, and it ranks above a measured shared run that scored less (not hidden behind shared)."""
    inp = parse_inputs(RawInputs())
    costs = calc.table(inp)
    largest = next(p for p in recommend.candidates(costs, inp.budget) if p.cost.method == "pals")
    other = next(c for c in costs if c.method == "pals" and c.feasible and key_of(c) != largest.key)
    scores = {
        key_of(other): recommend.Score(63.0, None, 1, other.d_s),
        ("shared", None): recommend.Score(62.6, None, 1),
    }
    ranked = recommend.candidates(costs, inp.budget, scores)
    assert [p.key for p in ranked[:2]] == [key_of(other), ("shared", None)]
    assert sum(p.cost.method == "pals" for p in ranked) == 1


def test_first_fits_are_the_smallest_budgets():
    inp = parse_inputs(RawInputs(budget_value="1.0001"))
    costs = calc.table(inp)
    assert not any(c.feasible for c in costs)
    fits = recommend.first_fits({key_of(c): calc.design_of(inp, key_of(c)) for c in costs}, inp.budget)
    assert [f.budget.ratio for f in fits] == sorted(f.budget.ratio for f in fits)
    first = fits[0]
    inp2 = parse_inputs(RawInputs(budget_value=repr(first.budget.ratio)))
    assert any(c.feasible and key_of(c) == first.key for c in calc.table(inp2))


def _summary(tmp, name, average, method="pals", d_s=8, model="tiny", tasks=("rte", "mrpc"), params=1234):
    d = tmp / name
    d.mkdir(parents=True)
    config = {
        "tasks": list(tasks),
        "model": model,
        "seed": int(name.removeprefix("seed-")) if name.startswith("seed-") else 0,  # a seed run records its seed
        "adapter": {"method": method, "d_s": d_s, "location": None},
    }
    (d / "summary.json").write_text(
        json.dumps(
            {"config": config, "average": average, "scores": {}, "steps": 50, "params": {"task_specific": params}}
        )
    )
    return d, config


def test_measured_results_single_runs_and_seed_aggregates(tmp_path):
    _summary(tmp_path, "one", 0.61)
    agg = tmp_path / "three"
    agg.mkdir()
    for k in (0, 1, 2):
        _summary(agg, f"seed-{k}", 0.6 + k / 100)
    (agg / "summary.json").write_text(
        json.dumps(
            {  # docs/design.md "Baselines and repeated runs"
                "seeds": [0, 1, 2],
                "runs": ["seed-0", "seed-1", "seed-2"],
                "average": {"mean": 0.61, "std": 0.01, "ci95": 0.0248},
                "scores": {},
                "params": {"task_specific": 1234},
            }
        )
    )
    _summary(tmp_path, "other-tasks", 0.7, tasks=("rte",))
    _summary(tmp_path, "other-model", 0.7, model=None)
    results = measured.scan([tmp_path])
    assert sorted(r.path.rsplit("/", 1)[-1] for r in results) == ["one", "other-model", "other-tasks", "three"]
    mine = measured.same_question(results, "tiny", True, ["mrpc", "rte"])
    by_path = {r.path.rsplit("/", 1)[-1]: r for r in mine}
    assert set(by_path) == {"one", "three"}
    assert by_path["one"].score == recommend.Score(pytest.approx(61.0), None, 1)
    three = by_path["three"].score
    assert three.n == 3 and three.mean == pytest.approx(61.0) and three.ci95 == pytest.approx(2.48)
    assert by_path["three"].per_seed == pytest.approx((60.0, 61.0, 62.0))  # read from the seed runs it names
    assert by_path["three"].key == ("pals", "all") and by_path["three"].params == 1234
    assert by_path["three"].seed is None and by_path["one"].seed == 0  # an aggregate has no one seed
    assert measured.best_by_design(mine)[("pals", "all")].n == 3  # the aggregate, not one seed
    assert measured.same_question(results, "tiny", False, ["rte", "mrpc"]) == []  # a shape has no runs


def test_a_running_sweep_shows_its_finished_seeds_then_its_aggregate(tmp_path):
    """benchmarks/results/<sweep>/<design>/seed-<k>/summary.json (three levels): each finished seed is a result until
    the design's aggregate is written, then only the aggregate is."""
    design = tmp_path / "sweep" / "pals"
    _summary(design, "seed-0", 0.60)
    _summary(design, "seed-1", 0.62)
    assert sorted(r.score.mean for r in measured.scan([tmp_path])) == [pytest.approx(60.0), pytest.approx(62.0)]
    (design / "summary.json").write_text(
        json.dumps(
            {
                "seeds": [0, 1],
                "runs": ["seed-0", "seed-1"],
                "scores": {},
                "average": {"mean": 0.61, "std": 0.014, "ci95": 0.127},
            }
        )
    )
    [agg] = measured.scan([tmp_path])
    assert agg.score.n == 2 and agg.score.mean == pytest.approx(61.0) and agg.path.endswith("pals")


def test_a_seeds_run_still_training_shows_the_seeds_it_has_so_far(tmp_path):
    """A ``pals-train --seeds 0,1,2`` folder (its plan, seeds.json) with no aggregate yet: one finished seed stands
    for itself; from two on, the folder is one result over the seeds so far — its interval, "2 of 3 seeds so far"."""
    from pals_core.train.rundir import SEEDS_FILE
    from pals_core.train.seeds import SeedsPlan

    design = tmp_path / "sweep" / "pals"
    design.mkdir(parents=True)
    (design / SEEDS_FILE).write_text(
        json.dumps({"kind": SeedsPlan.KIND, "seeds": [0, 1, 2], "separate": False, "template": {}})
    )
    _summary(design, "seed-0", 0.60)
    [one] = measured.scan([tmp_path])
    assert one.seed == 0 and one.runs_label() == "seed 0" and one.seeds_label() == "0"
    (design / "seed-1").mkdir()
    (design / "seed-1" / "progress.json").write_text("{}")  # seed 1 still training: not counted
    assert [r.seed for r in measured.scan([tmp_path])] == [0]
    _summary(design, "seed-2", 0.62)
    [so_far] = measured.scan([tmp_path])
    assert so_far.path.endswith("pals") and so_far.score.n == 2 and so_far.score.mean == pytest.approx(61.0)
    assert so_far.score.ci95 == pytest.approx(12.706, rel=1e-4)  # t_{.975,1} · s/√2 with s = √2
    assert so_far.runs_label() == "2 of 3 seeds so far" and so_far.seeds_label() == "0, 2 of 0, 1, 2"
    assert so_far.per_seed == pytest.approx((60.0, 62.0)) and so_far.key == ("pals", "all")


def test_majority_class_reference_from_the_glue_files(glue_dir):
    from pals_core.data.glue_rows import read_tsv
    from pals_core.tasks.glue_tasks import GLUE_TASKS

    rte = GLUE_TASKS["rte"]
    dev = read_tsv(rte, glue_dir / rte.folder / "dev.tsv").labels
    train = read_tsv(rte, glue_dir / rte.folder / rte.train_file).labels
    majority_label = max(set(train), key=train.count)
    want = 100 * sum(1 for y in dev if y == majority_label) / len(dev)
    assert measured.majority_average(["rte"], str(glue_dir)) == pytest.approx(want)
    assert measured.majority_average(["rte"], str(glue_dir / "nowhere")) is None


def test_run_scores_are_shown_0_to_100_with_metric_names():
    from explorer.runs_view import score_rows

    rows = score_rows(
        {
            "mnli": {"accuracy_m": 0.5, "accuracy_mm": 0.25},
            "cola": {"mcc": {"mean": 0.1, "ci95": 0.02}},
            "rte": {"accuracy": None},
        }
    )
    assert rows == [
        {
            "task": "mnli",
            "accuracy (matched)": "50.00",
            "accuracy (mismatched)": "25.00",
            "Matthews corr.": "—",
            "accuracy": "—",
        },
        {
            "task": "cola",
            "accuracy (matched)": "—",
            "accuracy (mismatched)": "—",
            "Matthews corr.": "10.00",
            "accuracy": "—",
        },
        {
            "task": "rte",
            "accuracy (matched)": "—",
            "accuracy (mismatched)": "—",
            "Matthews corr.": "—",
            "accuracy": "—",
        },
    ]


def test_study_figures_show_whole_trials_and_no_importances_from_a_handful(tmp_path):
    """The Studies tab: trial numbers are whole numbers; parameter importances wait for enough trials."""
    import optuna

    from studies import report

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}", study_name="few", direction="maximize")
    for i in range(3):
        t = study.ask({"lr": optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)})
        study.tell(t, 0.5 + 0.01 * i)
    with pytest.raises(report.FigureUnavailable, match=f"at least {report.MIN_IMPORTANCE_TRIALS} completed trials"):
        report.importance_figure(study)
    x = report.history_figure(study).layout.xaxis
    assert x.tickmode == "linear" and x.dtick == 1 and x.tick0 == 0


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_study_figures_are_drawn_on_the_pages_0_to_100_scale(tmp_path):
    """The Studies tab shows a pals-study study's scores 0–100 in its table; its figures say the same numbers."""
    import optuna

    from studies import report
    from studies.settings import SETTINGS_ATTR

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}", study_name="scale", direction="maximize")
    for i, value in enumerate((0.61, 0.72)):
        t = study.ask({"lr": optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)})
        t.report(value - 0.1, step=10)
        t.set_user_attr("params_task_specific", 1000 * (i + 1))
        study.tell(t, value)
    plain, _ = report.figures(study)  # a study another program made: its scores as it stored them
    assert max(y for tr in plain["history"].data if tr.mode == "markers" for y in tr.y) == pytest.approx(0.72)
    study.set_user_attr(SETTINGS_ATTR, {})  # a study pals-study made: its dev averages (fractions) shown 0–100
    figs, _ = report.figures(study)
    trials = [tr for tr in figs["history"].data if tr.mode == "markers"]
    assert sorted(round(y, 6) for y in trials[0].y) == [61.0, 72.0]
    assert "0–100" in figs["history"].layout.yaxis.title.text
    assert sorted(round(y, 6) for tr in figs["learning_curves"].data for y in tr.y) == [51.0, 62.0]
    assert list(figs["learning_curves"].layout.xaxis.tickvals) == [10]  # whole evaluation steps only
    assert max(y for tr in figs["pareto"].data for y in tr.y if y is not None) == pytest.approx(72.0)


def test_designs_spending_the_same_share_rank_by_predicted_step_time():
    inp = parse_inputs(RawInputs())
    picks = recommend.candidates(calc.table(inp), inp.budget, slowdowns=lambda cs: calc.slowdowns(inp, cs))
    assert picks[0].time is not None and picks[1].time is not None  # quoted in the reason
    tied = 0
    for a, b in zip(picks, picks[1:]):
        if recommend.rank_key(a)[:3] == recommend.rank_key(b)[:3]:  # the same share of the budget (and size class)
            assert a.time is not None and b.time is not None and a.time <= b.time
            tied += 1
    assert tied  # the question has designs that spend the same share: step time decided between them
    assert "predicted" in recommend.reason(picks[0], picks) and "× training step" in recommend.reason(picks[0], picks)


def test_a_summary_copied_under_benchmarks_results_is_one_result(tmp_path):
    """A sweep commits copies of its runs' summaries under benchmarks/results: the measured table and plot list each
    run once (the runs folder's path), while a different run of the same design still counts."""
    runs, results = tmp_path / "runs", tmp_path / "results"
    _summary(runs / "sweep" / "pals", "seed-0", 0.60)
    _summary(results / "sweep" / "pals", "seed-0", 0.60)
    _summary(results / "sweep" / "pals", "seed-1", 0.62)  # only committed (its run folder was cleaned away)
    found = measured.scan([runs, results])
    assert sorted((r.score.mean, Path(r.path).relative_to(tmp_path).parts[0]) for r in found) == [
        (pytest.approx(60.0), "runs"),
        (pytest.approx(62.0), "results"),
    ]


def _aggregate(tmp, name, averages, method, steps=4000):
    """A ``pals-train --seeds`` folder as the trainer writes it (``aggregate``), trained with ``steps``."""
    from pals_core.train.aggregate import aggregate

    config = {
        "tasks": ["rte", "mrpc"],
        "model": "tiny",
        "steps": steps,
        "lr": 1e-4,
        "adapter": {"method": method, "d_s": 8 if method == "pals" else None, "location": None},
    }
    if method == "separate":  # what separate.summarise derives from the recipe: not a recipe of its own
        config.update(steps_per_task={"rte": steps // 2, "mrpc": steps // 2}, steps_rule="n_t = …")
    summaries = [
        {"config": {**config, "seed": k}, "average": a, "scores": {}, "params": {"task_specific": 10}}
        for k, a in enumerate(averages)
    ]
    d = tmp / name
    d.mkdir(parents=True)
    (d / "summary.json").write_text(
        json.dumps(aggregate(list(range(len(averages))), summaries, [f"seed-{k}" for k in range(len(averages))]))
    )


def test_a_design_is_set_against_the_references_trained_alike(tmp_path):
    """The measured table's "− separate" / "− shared": Welch's interval of the difference of dev averages with the
    reference trained with the same recipe — none against a reference trained otherwise, or with one seed."""
    from pals_core.train.aggregate import compare

    _aggregate(tmp_path, "pals", [0.60, 0.61, 0.62], "pals")
    _aggregate(tmp_path, "separate", [0.70, 0.71, 0.72], "separate")
    _aggregate(tmp_path, "shared-longer", [0.50, 0.52, 0.54], "shared", steps=8000)  # another recipe
    _summary(tmp_path, "single", 0.65, model="tiny")
    results = {Path(r.path).name: r for r in measured.scan([tmp_path])}
    pals = results["pals"]
    got = measured.against(pals, list(results.values()), "separate")
    assert got == compare([60.0, 61.0, 62.0], [70.0, 71.0, 72.0])
    assert got["diff"] == pytest.approx(-10.0) and got["high"] < 0  # the seeds support separate ahead
    assert measured.against(pals, list(results.values()), "shared") is None  # 8,000 steps is not trained alike
    assert measured.against(results["single"], list(results.values()), "separate") is None  # one run: no spread
    assert measured.against(results["separate"], list(results.values()), "separate") is None


def test_a_design_wider_than_the_model_is_flagged_and_never_recommended_silently():
    """CA-MTL at 1.5× on the 384-wide MiniLM solved d_s = 10,760 and could lead the answer unflagged."""
    from explorer.tables import table_frame
    from pals_core.budget.series import wider_than_model
    from pals_core.budget.solver import Budget
    from pals_core.budget.table import rows
    from pals_core.budget.tasks import parse_tasks
    from pals_core.families.shapes import PRESETS

    shape = PRESETS["all-MiniLM-L6-v2"]
    costs = list(rows(shape, parse_tasks("cola,sst2,mrpc,stsb,rte"), budget=Budget(ratio=1.5)))
    wide = [c for c in costs if c.feasible and wider_than_model(c, shape.hidden)]
    assert any(c.method == "ca_mtl" for c in wide), [(c.method, c.d_s) for c in wide]
    picks = recommend.candidates(costs, Budget(ratio=1.5), hidden=shape.hidden)
    sensible = [p for p in picks if not p.oversized]
    assert sensible and picks[: len(sensible)] == sensible  # every sensible size ranks first
    for p in picks[len(sensible) :]:
        assert "is wider than the model it adapts" in recommend.reason(p, picks)
    frame = table_frame(costs, Budget(ratio=1.5), hidden=shape.hidden)
    ca = frame[frame["method"] == "ca_mtl"]["d_s"].tolist()
    assert any(cell.endswith("> d = 384") for cell in ca), ca
    alone = recommend.candidates([c for c in wide], Budget(ratio=1.5), hidden=shape.hidden)
    assert alone[0].oversized and "Beware: its d_s" in recommend.reason(alone[0], alone)


def test_a_score_measured_at_another_size_is_labelled_and_never_ranks_this_design():
    """At budget 1.5 the answer recommended houlsby @ all at d_s 245 'with the best measured dev average' — of runs at
    d_s 63. A score belongs to the design measured; another size shows it labelled and ranks nothing."""
    from explorer.tables import table_frame
    from pals_core.budget.solver import Budget
    from pals_core.budget.table import rows
    from pals_core.budget.tasks import parse_tasks
    from pals_core.families.shapes import PRESETS

    costs = list(rows(PRESETS["all-MiniLM-L6-v2"], parse_tasks("cola,sst2,mrpc,stsb,rte"), budget=Budget(ratio=1.5)))
    houlsby = next(c for c in costs if (c.method, c.location) == ("houlsby", "all"))
    assert houlsby.d_s != 63
    measured = {("houlsby", "all"): recommend.Score(63.8, 4.5, 3, d_s=63)}
    picks = recommend.candidates(costs, Budget(ratio=1.5), measured, hidden=384)
    h = next(p for p in picks if p.key == ("houlsby", "all"))
    assert h.measured is None and h.other_size is not None
    assert all(p.measured is None for p in picks)  # nothing ranks by a score of another size
    text = recommend.reason(h, picks)
    assert "best measured" not in text and "at d_s 63 measured 63.8 ± 4.5 (3 runs): another size" in text
    assert (
        recommend.measured_label(measured[("houlsby", "all")], houlsby)
        == "63.8 ± 4.5 (3 runs) at d_s 63, not this size"
    )
    same = {("houlsby", "all"): recommend.Score(63.8, 4.5, 3, d_s=houlsby.d_s)}
    ranked = recommend.candidates(costs, Budget(ratio=1.5), same, hidden=384)
    assert ranked[0].key == ("houlsby", "all") and "best measured dev average here: 63.8" in recommend.reason(
        ranked[0], ranked
    )
    frame = table_frame(
        costs,
        Budget(ratio=1.5),
        None,
        {("houlsby", "all"): recommend.measured_label(measured[("houlsby", "all")], houlsby)},
    )
    assert frame[frame["design"] == "houlsby @ all"]["measured dev avg"].item().endswith("not this size")
