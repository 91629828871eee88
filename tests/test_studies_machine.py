"""``pals-study`` with the machine settings of ``pals-budget`` (``Machine``: ``--memory``, ``--max-slowdown``,
``--precision``, ``--device-profile``): the sampled d_s respects the memory budget exactly as the solver does
(``pals_core.budget.rows`` with the same machine), the settings are stored in the study, and bad input is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from tiny_models import tiny_config_json

from pals_core.base_model import model_conditions
from pals_core.budget.machine import Machine
from pals_core.budget.solver import Budget
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from studies.cli import main
from studies.space import model_shape

EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
TASKS = ["rte", "mrpc"]
BATCH, MAX_LEN = 8, 32
COMMON = [
    "--model",
    "tiny",
    "--tasks",
    ",".join(TASKS),
    "--batch-size",
    str(BATCH),
    "--max-len",
    str(MAX_LEN),
    "--budget",
    "1.5",
    "--device-profile",
    "h100",
]


def _memory_at(d_s: int, location: str = "all") -> int:
    """Training memory of low_rank at ``d_s`` on the tiny model, priced as the study prices it (B = batch size)."""
    [row] = rows(
        model_shape("tiny"),
        parse_tasks(TASKS),
        methods=["low_rank"],
        location=location,
        d_s=d_s,
        machine=Machine(batch=BATCH, device="h100"),
        seq_len=MAX_LEN,
        model_conditions=model_conditions("tiny"),
    )
    return row.memory_train["total"]


def _solver_largest(memory: str, method: str = "low_rank") -> dict:
    """{location: the solver's largest d_s} under the parameter budget and ``memory`` (what pals-budget --memory gives)."""
    out = rows(
        model_shape("tiny"),
        parse_tasks(TASKS),
        budget=Budget(ratio=1.5),
        methods=[method],
        machine=Machine(batch=BATCH, device="h100", memory=memory),
        seq_len=MAX_LEN,
        model_conditions=model_conditions("tiny"),
    )
    return {c.location: c.d_s for c in out if c.feasible}


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.slow
def test_a_memory_budget_cuts_the_sampled_d_s_to_the_solvers(tmp_path, glue_dir):
    limit = (_memory_at(10) + _memory_at(11)) // 2  # between d_s = 10 and 11 of low_rank @ all
    memory = str(limit)
    # the study's range: the solver's largest under the budgets, capped at d = 32 (space.capped)
    largest = {loc: min(d, 32) for loc, d in _solver_largest(memory).items()}
    assert largest["all"] == 10 and largest["top"] < 32 and largest["bottom"] < 32, largest  # the memory cuts
    assert min(_solver_largest(str(10**12)).values()) > 32  # the parameter budget alone would not

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    cmd = [
        EXE,
        "run",
        "design",
        "--trials",
        "3",
        "--storage",
        url,
        "--out",
        str(tmp_path / "runs"),
        "--threads",
        "1",
        "--sampler-seed",
        "0",
        "--methods",
        "low_rank",
        "--memory",
        memory,
        "--steps",
        "4",
        "--eval-every",
        "4",
        "--max-train-examples",
        "32",
        "--max-eval-examples",
        "16",
        *COMMON,
    ]
    env = {**os.environ, "PALS_GLUE_DIR": str(glue_dir), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"memory ≤ {memory}" in p.stdout and "low_rank @ all 1..10" in p.stdout, p.stdout

    study = optuna.load_study(study_name="design", storage=url)
    stored = study.user_attrs["pals_settings"]["machine"]
    assert stored == {
        "device": "h100",
        "precision": "fp32",
        "memory": memory,
        "max_slowdown": None,
        "memory_infer": None,
    }
    trials = study.get_trials()
    assert len(trials) == 3
    for t in trials:
        a = t.user_attrs
        loc = a["location"]
        assert a["d_s"] <= largest[loc], (t.number, a)
        assert t.distributions[f"d_s_low_rank_{loc}"].high == largest[loc]  # the space is the solver's range
        assert a["memory_train"] == _memory_at(a["d_s"], loc) <= limit
        cfg = json.loads((Path(a["run_dir"]) / "config.json").read_text())
        assert cfg["adapter"]["d_s"] == a["d_s"]

    r = subprocess.run(
        [EXE, "report", "design", "--storage", url, "--out", str(tmp_path / "report")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert (
        r.returncode == 0
        and f"machine: device h100 · batch {BATCH} × {MAX_LEN} tokens · fp32 · memory ≤ {memory}" in r.stdout
    ), r.stdout + r.stderr


def test_a_fixed_design_study_takes_the_solvers_d_s_under_memory_and_keeps_it(tmp_path, capsys):
    limit = (_memory_at(10) + _memory_at(11)) // 2
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert main(["create", "optimizer", "--storage", url, "--method", "low_rank", "--memory", str(limit), *COMMON]) == 0
    settings = optuna.load_study(study_name="optimizer", storage=url).user_attrs["pals_settings"]
    assert settings["adapter"]["d_s"] == _solver_largest(str(limit))["all"] == 10
    assert settings["machine"]["memory"] == str(limit)
    # joining with another memory budget is refused (the stored settings win; the trials must agree)
    err = _one_line_error(
        capsys,
        ["create", "optimizer", "--storage", url, "--method", "low_rank", "--d-s", "10", "--memory", "1GB", *COMMON],
    )
    assert "created with machine" in err
    # a fixed size over the memory budget: one line naming memory
    err = _one_line_error(
        capsys,
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
            "--memory",
            str(limit),
            *COMMON,
        ],
    )
    assert "training memory" in err and "over the budget" in err


def _ratio_at(d_s: int) -> float:
    [row] = rows(
        model_shape("tiny"),
        parse_tasks(TASKS),
        methods=["low_rank"],
        location="all",
        d_s=d_s,
        machine=Machine(batch=BATCH, device="h100"),
        seq_len=MAX_LEN,
        model_conditions=model_conditions("tiny"),
    )
    return row.time_ratio


def test_slowdown_budget_bounds_like_pals_budget(tmp_path):
    """--max-slowdown: the study's fixed d_s is the solver's under the time budget (binding: time)."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    slowdown = (_ratio_at(16) + _ratio_at(17)) / 2
    [row] = rows(
        model_shape("tiny"),
        parse_tasks(TASKS),
        budget=Budget(ratio=1.5),
        methods=["low_rank"],
        location="all",
        machine=Machine(batch=BATCH, device="h100", max_slowdown=slowdown),
        seq_len=MAX_LEN,
        model_conditions=model_conditions("tiny"),
    )
    assert row.binding == "time" and row.feasible and row.d_s == 16
    assert (
        main(
            ["create", "optimizer", "--storage", url, "--method", "low_rank", "--max-slowdown", repr(slowdown), *COMMON]
        )
        == 0
    )
    settings = optuna.load_study(study_name="optimizer", storage=url).user_attrs["pals_settings"]
    assert settings["adapter"]["d_s"] == 16 and settings["machine"]["max_slowdown"] == slowdown


@pytest.mark.parametrize(
    "bad",
    [
        ["--memory", "abc"],
        ["--memory=-3GB"],
        ["--memory", "0"],
        ["--memory", "12XB"],
        ["--max-slowdown", "0.9"],
        ["--precision", "fp8"],
        ["--device-profile", "nope"],
        ["--memory", "1MB"],
    ],
)
def test_bad_machine_input_exits_2_with_one_line(tmp_path, capsys, bad):
    err = _one_line_error(
        capsys, ["create", "design", "--storage", f"sqlite:///{tmp_path / 's.db'}", "--model", "tiny", *bad]
    )
    assert err.startswith("pals-study: error: ")


_CONFIGS = {f: tiny_config_json(f) for f in ("deberta-v2", "modernbert", "mpnet")}  # modelled memory and time


@pytest.mark.parametrize("family", sorted(_CONFIGS))
def test_deberta_and_modernbert_studies_take_a_machine_budget(tmp_path, family):
    """Their memory and step time are modelled: a study of either takes --memory and --max-slowdown like BERT's."""
    folder = tmp_path / family
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_CONFIGS[family]))
    url = f"sqlite:///{tmp_path / 's.db'}"
    base = ["create", "design", "--storage", url, "--model", str(folder), "--budget", "1.5"]
    for j, (flag, field, value) in enumerate(
        ((["--memory", "24GB"], "memory", "24GB"), (["--max-slowdown", "1.2"], "max_slowdown", 1.2))
    ):
        assert main([*base, "--study-name", f"s{j}", *flag]) == 0
        settings = optuna.load_study(study_name=f"s{j}", storage=url).user_attrs["pals_settings"]
        assert settings["machine"][field] == value


def test_machine_settings_round_trip_through_a_worker_argv(tmp_path):
    """The explorer rebuilds a worker's flags from the stored settings: the machine comes back the same."""
    from studies.cli import build_parser, requested_settings
    from studies.workers import settings_flags, worker_argv

    args = build_parser().parse_args(
        [
            "create",
            "design",
            "--model",
            "tiny",
            "--memory",
            "24GiB",
            "--max-slowdown",
            "1.5",
            "--precision",
            "bf16",
            "--device-profile",
            "t4",
        ]
    )
    settings, given = requested_settings("design", args)
    assert "machine" in given and settings.machine == {
        "device": "t4",
        "precision": "bf16",
        "memory": "24GiB",
        "max_slowdown": 1.5,
        "memory_infer": None,
    }
    assert settings.machine_obj() == Machine(
        batch=settings.batch_size, device="t4", precision="bf16", memory="24GiB", max_slowdown=1.5
    )
    assert "--device-profile" in settings_flags(settings)
    worker_argv(settings, f"sqlite:///{tmp_path / 's.db'}", "s", 2, tmp_path)  # raises unless they round-trip
    from explorer.studies_view import settings_line

    line = settings_line({"pals_settings": settings.as_dict()})
    assert "device t4" in line and "memory ≤ 24GiB" in line and "step ≤ 1.5× base" in line


def test_the_studies_form_passes_its_machine_to_pals_study(tmp_path):
    """The Studies tab's machine inputs give the settings `pals-study create --memory … --device-profile …` stores;
    empty inputs give no bound; a bad one is pals-study's own one-line message."""
    from studies.cli import build_parser, requested_settings
    from studies.workers import settings_from_form

    form = dict(tasks="rte,mrpc", model="tiny", budget=1.5, steps=4)
    typed = {"memory": " 24GiB ", "max_slowdown": "1.5", "precision": "bf16", "device": "t4"}
    got = settings_from_form("design", **form, machine=typed)
    want, _ = requested_settings(
        "design",
        build_parser().parse_args(
            [
                "create",
                "design",
                "--model",
                "tiny",
                "--tasks",
                "rte,mrpc",
                "--budget",
                "1.5",
                "--steps",
                "4",
                "--memory",
                "24GiB",
                "--max-slowdown",
                "1.5",
                "--precision",
                "bf16",
                "--device-profile",
                "t4",
            ]
        ),
    )
    assert (
        got.machine
        == want.machine
        == {"device": "t4", "precision": "bf16", "memory": "24GiB", "max_slowdown": 1.5, "memory_infer": None}
    )
    plain = settings_from_form(
        "design", **form, machine={"memory": "", "max_slowdown": "", "precision": "fp32", "device": ""}
    )
    assert plain.machine == settings_from_form("design", **form).machine
    for field, text, says in (
        ("memory", "-3GB", "--memory"),
        ("memory", "3XB", "--memory"),
        ("max_slowdown", "fast", "--max-slowdown"),
        ("device", "nosuch", "nosuch"),
    ):
        with pytest.raises(ValueError) as e:
            settings_from_form("design", **form, machine={field: text})
        assert "\n" not in str(e.value) and says in str(e.value), str(e.value)
