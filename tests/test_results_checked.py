"""What a prediction and a measured score rest on (``pals_core.results.runs``, the one reader of run results): a run
counts only if its numbers can be true — forged summaries are passed over and named once with their reason, never a
``nan``, an overflow or a traceback —, each run counts once however many copies of it lie about, and a fitted curve
pools only runs of one design (every setting but the size) and one recipe. Synthetic runs, written as pals-train
writes them."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil

import pytest
from test_score_model import TASKS, study

from pals_core import measured
from pals_core import score_model as sm
from pals_core.cli.budget import main as budget
from pals_core.methods.registry import METHODS
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.method import EVERY_METHOD_READS
from pals_core.results import SIZE_AND_OWN, read_settings, runs
from pals_core.train.config import TrainConfig

QUESTION = ["--model", "minilm-l6-h384", "--tasks", "rte,mrpc,stsb", "--method", "houlsby", "--budget", "1.05"]
QUESTION += ["--freeze-trunk"]


def strict(text: str):
    """JSON as a strict parser reads it: NaN, Infinity and -Infinity are not JSON."""

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def summary_of(folder, method="houlsby", d_s=16, average=0.6, seed=0, lr=1e-3, **adapter) -> dict:
    cfg = TrainConfig(
        tasks=list(TASKS),
        adapter=AdapterConfig(method=method, d_s=d_s, freeze_trunk=True, **adapter),
        steps=300,
        lr=lr,
        seed=seed,
        out=str(folder),
    ).as_dict()
    return {
        "config": cfg,
        "average": average,
        "scores": {
            "rte": {"accuracy": average},
            "mrpc": {"f1": 0.8, "accuracy": average},
            "stsb": {"pearson": average},
        },
        "tasks": {
            "rte": {"kind": "classification", "metric": "accuracy"},
            "mrpc": {"kind": "classification", "metric": "accuracy"},
            "stsb": {"kind": "regression", "metric": "pearson"},
        },
        "steps": 300,
        "params": {"task_specific": 1000 * d_s},
        "wall_time_s": 100.0,
    }


def write(folder, summary: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(summary))  # NaN and Infinity as Python's json writes them


def _set(path: str, value):
    def change(s: dict) -> dict:
        *keys, last = path.split(".")
        d = s
        for k in keys:
            d = d[k]
        d[last] = value
        return s

    return change


def _aggregate_nan(s: dict) -> dict:
    cfg = {k: v for k, v in s["config"].items() if k not in ("seed", "out")}
    runs_ = [{"seed": k, "dir": f"seed-{k}", "average": 0.6, "scores": s["scores"]} for k in (0, 1)]
    nan = float("nan")
    return {"seeds": [0, 1], "runs": runs_, "average": {"mean": 0.6, "std": 0.01, "ci95": nan}, "config": cfg}


FORGED = {  # name: (what is changed, a word of the reason)
    "average-nan": (_set("average", float("nan")), "average"),
    "average-inf": (_set("average", float("inf")), "average"),
    "average-huge": (_set("average", 1e300), "average"),
    "average-negative": (_set("average", -50), "average"),
    "average-percent": (_set("average", 77), "average"),
    "average-text": (_set("average", "0.7"), "average"),
    "metric-nan": (_set("scores.rte.accuracy", float("nan")), "rte"),
    "metric-out-of-range": (_set("scores.mrpc.accuracy", 1.5), "mrpc"),
    "correlation-out-of-range": (_set("scores.stsb.pearson", -3.0), "stsb"),
    "metric-not-a-number": (_set("scores.rte", {"accuracy": [0.5]}), "rte"),
    "d_s-huge": (_set("config.adapter.d_s", 2**62), "d_s"),
    "d_s-fraction": (_set("config.adapter.d_s", 16.5), "d_s"),
    "d_s-zero": (_set("config.adapter.d_s", 0), "d_s"),
    "tasks-number": (_set("config.tasks", 7), "tasks"),
    "data-number": (_set("config.data", {"rte": 5}), "data"),
    "adapter-list": (_set("config.adapter", ["houlsby"]), "adapter"),
    "params-nan": (_set("params.task_specific", float("nan")), "task_specific"),
    "steps-inf": (_set("steps", float("inf")), "steps"),
    "aggregate-ci-nan": (_aggregate_nan, "ci95"),
}


@pytest.fixture
def forged(tmp_path):
    """A clean study (houlsby at five sizes, three seeds) and, beside it, every forged run at a size it measured."""
    clean = tmp_path / "clean"
    study(clean / "study")
    root = tmp_path / "forged"
    shutil.copytree(clean, root)
    for name, (change, _) in FORGED.items():
        folder = root / "bad" / name
        write(folder, change(summary_of(folder, d_s=16)))
    return clean, root


def test_a_run_whose_numbers_cannot_be_true_is_passed_over_with_its_reason(forged):
    clean, root = forged
    passed: list = []
    found = runs([root], passed)
    assert len(found) == len(runs([clean])) == 15
    by = {p.folder.rsplit("/", 1)[-1]: p.reason for p in passed}
    assert sorted(by) == sorted(FORGED) and len(passed) == len(FORGED)  # each named once
    for name, (_, word) in FORGED.items():
        assert word in by[name] and "\n" not in by[name], (name, by[name])
    assert "nan" not in by["average-percent"] and "77" in by["average-percent"]  # the value, and the range it left
    # the measured scores and the curves read the same runs: the forged ones change nothing
    seen = lambda r: sorted((o.d_s, o.runs, dict(o.tasks)) for o in sm.observations([r], None, list(TASKS)))
    assert seen(root) == seen(clean)
    assert [measured.parse(r) for r in found]  # every run kept can be shown


def test_pals_budget_answers_as_without_the_forged_runs_and_names_each_once(forged, capsys):
    clean, root = forged
    assert budget([*QUESTION, "--results", str(clean), "--json"]) == 0
    want = strict(capsys.readouterr().out)
    assert budget([*QUESTION, "--results", str(root), "--json"]) == 0
    out, err = capsys.readouterr()
    got = strict(out)  # no NaN, no Infinity: JSON
    assert got["rows"] == want["rows"] and got["recommendation"]["text"] == want["recommendation"]["text"]
    assert sorted(p["folder"].rsplit("/", 1)[-1] for p in got["recommendation"]["passed_over"]) == sorted(FORGED)
    assert "Traceback" not in err
    for name in FORGED:
        assert sum(f"/bad/{name}:" in line for line in err.splitlines()) == 1, (name, err)
    assert budget([*QUESTION, "--results", str(root), "--wide"]) == 0
    out, err = capsys.readouterr()
    assert "nan" not in out.lower() and "inf " not in out.lower() and "Traceback" not in err
    assert "-2592" not in out and want["rows"][0]["predicted_score"]["mean"] > 0


def test_copies_of_a_run_count_once_whatever_their_bytes(tmp_path, capsys):
    """Eleven copies of every run, each with its own wall_time_s, in one root and in another: the same 15 runs."""
    a, b = tmp_path / "a", tmp_path / "b"
    study(a / "study")
    for k in range(11):
        for f in sorted((a / "study").glob("*/*/summary.json")):
            s = json.loads(f.read_text())
            s["wall_time_s"] = 1.0 + k
            root = a if k % 2 else b
            write(root / f"copy-{k}" / f.parent.parent.name / f.parent.name, s)
    assert len(runs([a, b])) == 15
    [curve] = sm.curves(sm.observations([a, b], None, list(TASKS))).values()
    assert curve.runs == 15
    assert budget([*QUESTION, "--results", str(a), "--results", str(b), "--json"]) == 0
    got = strict(capsys.readouterr().out)
    assert got["rows"][0]["predicted_score"]["runs"] == 15
    # two runs that differ in what they are (the seed) count twice, even with the same scores
    s = summary_of(tmp_path / "c" / "s0", seed=0)
    write(tmp_path / "c" / "s0", s)
    write(tmp_path / "c" / "s1", {**s, "config": {**s["config"], "seed": 1, "out": str(tmp_path / "c" / "s1")}})
    assert len(runs([tmp_path / "c"])) == 2


def _design_study(root, sizes=(4, 8, 16, 32, 64), seeds=(0, 1, 2), method="lora", base=60.0, **adapter):
    for d in sizes:
        for s in seeds:
            folder = root / f"{method}-{d}-seed-{s}"
            write(
                folder, summary_of(folder, method=method, d_s=d, seed=s, average=(base + math.log(d)) / 100, **adapter)
            )


def test_a_curve_pools_only_runs_of_one_design(tmp_path, capsys):
    _design_study(tmp_path / "default")
    _design_study(tmp_path / "alpha", base=70.0, lora_alpha=128.0)
    obs = sm.observations([tmp_path], None, list(TASKS))
    cs = sm.curves(obs)
    assert len(cs) == 2 and sorted(c.runs for c in cs.values()) == [15, 15]
    lora = ["--model", "minilm-l6-h384", "--tasks", "rte,mrpc,stsb", "--method", "lora", "--budget", "1.05"]
    assert budget([*lora, "--results", str(tmp_path / "default"), "--lora-alpha", "128", "--json"]) == 0
    [row] = strict(capsys.readouterr().out)["rows"]
    assert row["predicted_score"] is None  # no run ever used lora_alpha 128: nothing to predict from
    assert budget([*lora, "--results", str(tmp_path), "--lora-alpha", "128", "--json"]) == 0
    [row] = strict(capsys.readouterr().out)["rows"]
    p = row["predicted_score"]
    assert p["runs"] == 15 and p["mean"] == pytest.approx(70.0 + math.log(row["d_s"]), abs=0.01)
    assert budget([*lora, "--results", str(tmp_path), "--json"]) == 0
    [row] = strict(capsys.readouterr().out)["rows"]
    assert row["predicted_score"]["mean"] == pytest.approx(60.0 + math.log(row["d_s"]), abs=0.01)


def _other_value(f: dataclasses.Field):
    """A value of the field ``f`` that is not its default (read off its type)."""
    default = f.default
    kind = str(f.type)
    if isinstance(default, bool) or "bool" in kind:
        return not default
    if isinstance(default, str):
        return default + "-other"
    if isinstance(default, float) or "float" in kind:
        return (default or 0.0) + 0.25
    if isinstance(default, int) or "int" in kind:
        return (default or 0) + 3
    raise AssertionError(f"AdapterConfig.{f.name}: no other value known for its type {f.type}")


DESIGN_FIELDS = [f for f in dataclasses.fields(AdapterConfig) if f.name not in SIZE_AND_OWN]


def test_each_method_declares_only_adapter_settings_and_every_setting_is_read_by_one():
    """``Method.settings`` (each method's cost.py) names AdapterConfig fields only, none twice and none of the size
    and its own; and every AdapterConfig field is the size, the method's own, or read by some method: a setting added
    to AdapterConfig and declared by no method fails here instead of silently parting no runs."""
    names = {f.name for f in dataclasses.fields(AdapterConfig)}
    for m in METHODS.values():
        assert set(m.settings) <= names, f"{m.name}: {set(m.settings) - names} are not AdapterConfig fields"
        assert len(set(m.settings)) == len(m.settings) and not set(m.settings) & set(SIZE_AND_OWN), m.name
    assert set(EVERY_METHOD_READS) <= names
    read = set(EVERY_METHOD_READS).union(*(m.settings for m in METHODS.values()))
    assert names - set(SIZE_AND_OWN) - read == set()


@pytest.mark.parametrize("field", DESIGN_FIELDS, ids=lambda f: f.name)
def test_a_design_setting_parts_the_runs_of_the_methods_that_read_it_and_no_others(tmp_path, field):
    """Read from AdapterConfig's fields and each method's ``Method.settings``: two runs of one size that differ in
    the setting are two designs for a method that reads it, one design for a method that does not."""
    readers = [m.name for m in METHODS.values() if field.name in read_settings(m.name)]
    others = [m.name for m in METHODS.values() if m.name not in readers]
    assert readers, f"AdapterConfig.{field.name}: no method reads it (declare it in that method's Method.settings)"
    for method, parted in [(readers[0], True), *[(m, False) for m in others[:1]]]:
        a, b = tmp_path / method / "a" / "r", tmp_path / method / "b" / "r"
        write(a, summary_of(a, method=method))
        other = summary_of(b, method=method)
        other["config"]["adapter"][field.name] = _other_value(field)
        write(b, other)
        [ra], [rb] = runs([a.parent]), runs([b.parent])
        assert (ra.design != rb.design) is parted, (method, field.name)
    sized = next((m for m in readers if METHODS[m].sized), None)
    if sized is not None:  # the size alone: one family
        a, bigger = tmp_path / "size" / "a" / "r", tmp_path / "size" / "c" / "r"
        write(a, summary_of(a, method=sized))
        write(bigger, summary_of(bigger, method=sized, d_s=32))
        [ra], [rc] = runs([a.parent]), runs([bigger.parent])
        assert sm.observation(rc).family == sm.observation(ra).family


def test_lora_alpha_parts_lora_runs_but_not_houlsby_runs(tmp_path):
    def design(method, **adapter):
        folder = tmp_path / f"{method}-{len(adapter)}" / "r"
        write(folder, summary_of(folder, method=method, **adapter))
        [run] = runs([folder.parent])
        return run.design

    assert design("houlsby") == design("houlsby", lora_alpha=128.0)
    assert design("lora") != design("lora", lora_alpha=128.0)


def test_a_question_s_lora_alpha_keeps_the_runs_of_designs_that_do_not_read_it(tmp_path, capsys):
    """``pals-budget --lora-alpha 128 --results``: the Houlsby row keeps its prediction and its measured score
    (Houlsby reads no α), the LoRA row has none (its runs trained at the default α)."""
    _design_study(tmp_path, method="houlsby", sizes=(4, 8, 16), seeds=(0, 1))
    _design_study(tmp_path, method="lora", sizes=(4, 8, 16), seeds=(0, 1))
    question = ["--model", "minilm-l6-h384", "--tasks", "rte,mrpc,stsb", "--location", "all", "--budget", "1.05"]
    question += ["--freeze-trunk", "--results", str(tmp_path), "--json"]
    predicted = {}
    for alpha in ([], ["--lora-alpha", "128"]):
        assert budget([*question, *alpha]) == 0
        out = strict(capsys.readouterr().out)
        rows = {r["method"]: r["predicted_score"] for r in out["rows"]}
        predicted[bool(alpha)] = {m: p and p["runs"] for m, p in rows.items() if m in ("houlsby", "lora")}
        predicted[bool(alpha), "measured"] = out["recommendation"]["measured"]
    assert predicted[False] == {"houlsby": 6, "lora": 6} and predicted[False, "measured"] == 2
    assert predicted[True] == {"houlsby": 6, "lora": None} and predicted[True, "measured"] == 1


def test_the_measured_score_at_another_size_is_that_sizes_mean_over_its_seeds(tmp_path, capsys):
    for seed, avg in ((0, 0.70), (1, 0.72), (2, 0.74)):
        folder = tmp_path / f"houlsby-2-seed-{seed}"
        write(folder, summary_of(folder, d_s=2, seed=seed, average=avg))
    [score] = measured.best_by_design([measured.parse(r) for r in runs([tmp_path])]).values()
    assert score.mean == pytest.approx(72.0) and score.n == 3 and score.ci95 == pytest.approx(4.968, abs=0.01)
    assert budget([*QUESTION, "--results", str(tmp_path), "--json"]) == 0
    [pick] = strict(capsys.readouterr().out)["recommendation"]["ranking"]
    assert pick["d_s"] != 2 and pick["other_size"]["mean"] == pytest.approx(72.0) and pick["other_size"]["runs"] == 3


@pytest.mark.slow
def test_the_page_names_the_runs_it_passed_over_and_ranks_without_them(tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from explorer.inputs import TINY

    root = tmp_path / "runs"
    monkeypatch.setenv("PALS_RUNS_DIR", str(root))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    bad = root / "forged"
    cfg = TrainConfig(tasks=["rte", "mrpc"], adapter=AdapterConfig(method="lhuc"), model="tiny", steps=400)
    write(bad, {"config": {**cfg.as_dict(), "out": str(bad)}, "average": float("nan"), "scores": {}, "steps": 400})
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=90).run()
    at.sidebar.selectbox(key="model").set_value(TINY).run()
    at.sidebar.multiselect(key="glue_tasks").set_value(["rte", "mrpc"]).run()
    [note] = [w.value for w in at.warning if "passed over" in w.value]
    assert f"`{bad}`: average nan is not finite" in note and "1 finished run(s) passed over" in note
    answer = next(s.value for s in at.success if s.value.startswith("**Recommended:**"))
    assert "nan" not in answer and not at.exception and not at.error


def test_reading_a_study_storage_changes_nothing(tmp_path, capsys):
    """``pals-budget --storage`` only reads: a SQLite file that holds no study keeps its bytes and its tables, and a
    mistyped path creates no file — each refused in one line, as ``pals-study list`` refuses them."""
    import sqlite3

    from studies.cli import main as pals_study

    db = tmp_path / "mine.db"
    con = sqlite3.connect(db)
    con.execute("create table notes (x text)")
    con.execute("insert into notes values ('mine')")
    con.commit()
    con.close()
    before, files = db.read_bytes(), sorted(tmp_path.iterdir())
    assert budget([*QUESTION, "--storage", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err
    assert "holds no studies" in err and err.count("\n") == 1 and "Traceback" not in err
    assert db.read_bytes() == before and sorted(tmp_path.iterdir()) == files
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert [t for (t,) in con.execute("select name from sqlite_master where type = 'table'")] == ["notes"]
    con.close()
    typo = tmp_path / "mistyped.db"
    assert budget([*QUESTION, "--storage", f"sqlite:///{typo}"]) == 2
    err = capsys.readouterr().err
    assert "no SQLite file" in err and str(typo) in err and err.count("\n") == 1
    assert not typo.exists() and sorted(tmp_path.iterdir()) == files
    assert pals_study(["list", "--storage", f"sqlite:///{db}"]) == 0 and db.read_bytes() == before


@pytest.mark.slow  # a real Optuna storage: creating its tables takes seconds
def test_a_studys_trials_count_once_beside_the_same_runs_on_disk_and_the_storage_is_unchanged(forged, capsys):
    """Runs on disk (forged ones too) are also finished trials of a study: pals-budget --results --storage counts
    each good run once, names each forged one once, and leaves the storage file as it was."""
    import optuna

    clean, root = forged
    url = f"sqlite:///{root.parent / 'studies.db'}"
    study = optuna.create_study(study_name="s", storage=url)
    trials = [*sorted(root.glob("study/*/seed-0")), *(root / "bad" / n for n in ("average-nan", "d_s-huge"))]
    study.add_trials([optuna.trial.create_trial(value=0.5, user_attrs={"run_dir": str(f)}) for f in trials])
    before = (root.parent / "studies.db").read_bytes()
    assert budget([*QUESTION, "--results", str(clean), "--json"]) == 0
    want = strict(capsys.readouterr().out)
    assert budget([*QUESTION, "--results", str(root), "--storage", url, "--json"]) == 0
    out, err = capsys.readouterr()
    got = strict(out)
    assert got["rows"] == want["rows"]
    for name in FORGED:  # the two that are trials too among them
        assert sum(f"/bad/{name}:" in line for line in err.splitlines()) == 1, (name, err)
    assert (root.parent / "studies.db").read_bytes() == before
