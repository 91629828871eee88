"""The explorer tells the truth at a glance (untrained tasks included), driven through
``streamlit.testing.v1.AppTest`` as a person reads the page:

- one number, one rounding: the answer, the metrics, the design table, its CSV and ``pals-budget`` write the same
  digits for the same design (``pals_core.budget.display``);
- readable figures: labels that would overlap are left to hover, adjacent parts of a stacked bar differ in colour,
  a legend never needs a scroll box;
- a first visit works: no GLUE folder → the Train view says so before any click and offers the example tasks; the
  majority-class line is drawn or its caption says why not; an empty study storage is an invitation, and the study
  form starts from the sidebar's question; smoke runs are labelled and kept off the measured ranking's scale; a run
  with untrained tasks says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer import inputs
from explorer.figures.breakdown import breakdown_places, part_colors
from explorer.figures.design_space import design_space_figure
from explorer.figures.legibility import color_distance, label_size, place_labels
from explorer.figures.style import LEGEND_ENTRY_PX, PLOT_MARGIN_PX
from explorer.inputs import TASKS_FILE
from explorer.tables import table_csv
from pals_core.budget import display
from pals_core.budget.recommend import key_of
from pals_core.cli.budget import run as pals_budget
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.train.config import TrainConfig
from studies.workers import settings_from_form

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
QUESTION = {"model": "minilm-l6-h384", "tasks": "cola,sst2,mrpc,stsb,rte", "budget": "1.5"}  # a newcomer's question


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(tmp_path / "no-local-profile.json"))  # one device: h100, as the CLI
    return tmp_path


def open_at(query: dict, view: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in {**query, **({"view": view} if view else {})}.items():
        at.query_params[k] = v
    return at.run()


def page_errors(at) -> list[str]:
    return [e.value for e in at.error] + [e.value for e in at.exception]


def table_with(at, column: str):
    for d in at.dataframe:
        if column in d.value.columns:
            return d.value
    raise AssertionError(f"no table with a {column!r} column")


def metric(at, name: str) -> str:
    return next(m.value for m in at.main.metric if m.label == name)


def answer(at) -> str:
    return next(s.value for s in at.success if s.value.startswith("**Recommended:**"))


def fig(at, key: str) -> dict:
    for el in at.get("plotly_chart"):
        if getattr(el, "key", None) == key:
            return json.loads(el.proto.spec)
    raise AssertionError(f"no figure {key!r} on the page")


def cli_rows(*args: str) -> dict[tuple[str, str], dict[str, str]]:
    """``pals-budget --wide``'s table as {(method, location): {column: text}} (columns are two spaces apart)."""
    lines = pals_budget([*args, "--wide"]).splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("method"))
    head = re.split(r"\s{2,}", lines[i].strip())
    out = {}
    for line in lines[i + 2 :]:
        if not line.strip() or line.startswith(("(", "not priced")):
            break
        cells = dict(zip(head, re.split(r"\s{2,}", line.strip())))
        out[(cells["method"], cells["location"])] = cells
    return out


# --- numbers agree to the digit -------------------------------------------------------------------------------


def test_the_page_its_csv_and_pals_budget_write_the_same_digits(env):
    """A newcomer's question (MiniLM, five GLUE tasks, 1.5×): the recommendation, the chosen design's metrics, its row
    of the table, the CSV of that table, the Memory & step time table and ``pals-budget`` agree to the digit — the
    share of the budget rounded down once (never 99.8 % in the answer and 99.9 % in the metric), the ratio rounded
    once (never 1.1291 beside 1.1292)."""
    at = open_at(QUESTION)
    assert page_errors(at) == []
    said = answer(at)
    design = re.match(r"\*\*Recommended:\*\* \*\*(.+?)\*\*", said).group(1)
    assert at.selectbox(key="design").value == design  # the chosen design starts at the recommendation
    method, _, location = design.partition(" @ ")
    cli = cli_rows("--model", QUESTION["model"], "--tasks", QUESTION["tasks"], "--budget", QUESTION["budget"])[
        (method, location or "—")
    ]

    share = re.search(r"spends (\d+\.\d%) of the budget", said).group(1)
    assert metric(at, "% of budget used") == share  # the answer and the metric: one rounding (down)
    assert metric(at, "total × base") == f"{cli['× base']}×"
    assert metric(at, "FLOPs × base") == f"{cli['FLOPs × base']}×"
    assert metric(at, "solved d_s") == cli["d_s"]

    table = table_with(at, "fits")
    row = table[table["design"] == design].iloc[0]
    assert f"{row['% of budget used']:.1f}%" == share  # the column prints one decimal (TABLE_FORMATS)
    assert f"{row['total × base']:.4f}" == cli["× base"] and f"{row['FLOPs × base']:.4f}" == cli["FLOPs × base"]
    assert f"{row['params / task']:,}" == cli["params/task"]
    assert f"{row['task-specific (all tasks)']:,}" == cli["extra total"]

    csv = table_csv(table).splitlines()  # what the download button hands over: the table on screen
    header = csv[0].split(",")
    cells = next(line.split(",") for line in csv[1:] if line.split(",")[header.index("design")] == design)
    assert cells[header.index("% of budget used")] + "%" == share
    assert cells[header.index("total × base")] == cli["× base"]
    assert cells[header.index("FLOPs × base")] == cli["FLOPs × base"]

    step = re.search(r"a step (\d+\.\d+)× the base model's", said).group(1)
    gib = re.search(r": (\d+\.\d+) GiB to train", said).group(1)
    assert (step, gib) == (cli["step × base"], cli["train GiB"])  # the answer's machine is pals-budget's
    assert f"a predicted {step}× training step" in said
    at.segmented_control(key="view").set_value("machine").run()
    machine = table_with(at, "step × base")
    mrow = machine[machine["design"] == design].iloc[0]
    assert (f"{mrow['step × base']:.3f}", f"{mrow['train GiB']:.2f}") == (step, gib)


@pytest.mark.parametrize("x", [1.12914999, 1.129149999999, 1.12915, 1.4988503, 1.0000499, 0.99995, 2.718281828])
def test_each_quantity_is_rounded_once(x):
    """The value a table holds prints as the text the page writes (no 1.12915 → '1.1292' beside '1.1291')."""
    assert f"{display.ratio(x):.{display.RATIO_DIGITS}f}" == display.ratio_text(x)
    assert display.ratio_text(display.ratio(x)) == display.ratio_text(x)
    assert f"{display.step_ratio(x):.3f}" == display.step_ratio_text(x)
    assert display.share_text(x / 3) == f"{display.share(x / 3):.1f}%"
    assert display.overhead_text(x) == f"{100 * (float(display.ratio_text(x)) - 1):+.2f}%"


def test_a_share_of_the_budget_is_rounded_down():
    assert display.share_text(0.99899) == "99.8%" and display.share_text(0.9999) == "99.9%"
    assert display.share_text(1.0) == "100.0%" and display.share_text(0.0) == "0.0%"
    assert display.share_text(float("inf")) == "∞%"


# --- readable figures ------------------------------------------------------------------------------------------


def test_crowded_points_are_each_named_clear_of_every_marker():
    """Twelve designs in a crowd and two apart (the Memory & step time scatter): every label is placed, and at each
    plot width the page draws — boxes and leader lines worked out here from the returned offsets — no label overlaps
    another label or any marker, none leaves the plot area, and the chosen design's label is placed first, beside it."""
    crowd = [(0.93, 0.30 + 0.045 * i) for i in range(12)]  # a column of markers 13–20 px apart, at the right edge
    alone = [(0.02, 0.5), (0.5, 0.9)]
    fx, fy = zip(*(crowd + alone))
    names = [f"design number {i}" for i in range(14)]
    widths, height, r = (320.0, 560.0, 860.0), 300.0, 6.5
    places = place_labels(fx, fy, names, widths=widths, height=height, radius=r, first=[13], right_px=150.0)
    assert all(p is not None for p in places), places
    assert not places[13].leader  # the chosen design: named beside its marker
    for W in widths:
        boxes = []
        for x, y, text, p in zip(fx, fy, names, places):
            w, h = label_size(text)
            cx, cy = x * W + p.dx, y * height + p.dy
            boxes.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
        for i, a in enumerate(boxes):
            assert a[0] >= 0 and a[1] >= 0 and a[2] <= W + 150 and a[3] <= height, (W, names[i], a)
            assert not any(a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3] for b in boxes[i + 1 :])
            for x, y in zip(fx, fy):  # no marker under a label (the nearest point of the box is beyond the radius)
                nx, ny = min(max(x * W, a[0]), a[2]), min(max(y * height, a[1]), a[3])
                assert (nx - x * W) ** 2 + (ny - y * height) ** 2 >= r * r, (W, names[i], (x, y))


def test_parts_stacked_together_have_colours_that_differ():
    """Every pair of parts that share a bar in 'Where the parameters go' differs clearly in colour (CIE ΔE ≥ 20)."""
    from explorer import calc
    from explorer.inputs import RawInputs, parse_inputs

    inp = parse_inputs(
        RawInputs(model="minilm-l6-h384", glue_tasks=["cola", "sst2", "mrpc", "stsb", "rte"], budget_value="1.5")
    )
    bars = [breakdown_places(calc.breakdown_rows(inp, c)) for c in calc.table(inp)]
    colors = part_colors(bars)
    assert len(set(colors.values())) == len(colors)
    for bar in bars:
        parts = sorted({r["part"] for r in bar})
        for i, a in enumerate(parts):
            for b in parts[i + 1 :]:
                assert color_distance(colors[a], colors[b]) >= 20, (a, b, colors[a], colors[b])


def test_a_legend_never_needs_a_scroll_box():
    """The design space's legend (a method per colour, a marker per location, the front, the chosen ring) fits the
    figure's plot area: the figure is as tall as its legend needs."""
    from explorer import calc
    from explorer.inputs import RawInputs, parse_inputs

    inp = parse_inputs(RawInputs(model="minilm-l6-h384", budget_value="1.5"))
    costs = calc.table(inp)
    spec = design_space_figure(costs, inp.budget, key_of(costs[0])).to_dict()
    entries = [t for t in spec["data"] if t.get("showlegend", True) is not False and t.get("name")]
    assert len(entries) > 14  # more than a 480-px figure shows without scrolling
    assert spec["layout"]["height"] - PLOT_MARGIN_PX >= len(entries) * LEGEND_ENTRY_PX


# --- a first visit works ---------------------------------------------------------------------------------------


def test_without_a_glue_folder_the_train_view_offers_the_example_tasks(env, monkeypatch):
    """No $PALS_GLUE_DIR and no hub: the Train view says so before anyone clicks Launch (which waits), and one button
    puts the example tasks into the question; the launcher then trains them (their data ships with the project)."""
    monkeypatch.delenv("PALS_GLUE_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = open_at({"model": "embedded-minilm", "tasks": "rte,mrpc"}, "train")
    assert page_errors(at) == []
    assert any("no data to read yet" in w.value and "PALS_GLUE_DIR" in w.value for w in at.warning)
    assert at.button(key="launch").disabled
    at.button(key="train_use_examples").click().run()
    assert page_errors(at) == []
    assert at.sidebar.radio(key="task_mode").value == TASKS_FILE
    assert at.sidebar.text_input(key="tasks_file").value == inputs.example_tasks_path()
    assert at.segmented_control(key="view").value == "train"
    assert not any("no data to read yet" in w.value for w in at.warning)
    assert not at.button(key="launch").disabled
    assert at.multiselect(key="train_file_tasks").value == ["intent", "reviews", "tickets", "entities", "replies"]
    assert any("--tasks-file" in c.value and "examples/tasks/tasks.yaml" in c.value for c in at.code)


def test_with_the_glue_folder_the_train_view_just_trains(env, glue_dir):
    at = open_at({"model": "embedded-minilm", "tasks": "rte,mrpc"}, "train")
    assert page_errors(at) == []
    assert not any("no data to read yet" in w.value for w in at.warning)
    assert not at.button(key="launch").disabled
    assert at.text_input(key="train_glue_dir").value == str(glue_dir)


def _summary(
    runs: Path,
    name: str,
    method: str,
    average: float,
    steps: int,
    location: str | None = "all",
    untrained: list[str] | None = None,
    tasks=("rte", "mrpc"),
) -> None:
    adapter = {"method": method, **({"location": location} if location else {})}
    from pals_core.pricing.config import AdapterConfig

    config = TrainConfig(tasks=list(tasks), adapter=AdapterConfig(**adapter), model="tiny", steps=steps)
    folder = runs / name
    folder.mkdir(parents=True)
    summary = {
        "config": config.as_dict(),
        "average": average,
        "steps": steps,
        "best_step": steps,
        "scores": {t: {"accuracy": average} for t in tasks},
        "params": {"task_specific": 12_345 + len(name)},
        "wall_time_s": 12.0,
    }
    if untrained is not None:
        summary["untrained"] = untrained
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "progress.json").write_text(json.dumps({"status": "finished", "step": steps, "total": steps}))


TINY_Q = {"model": "tiny", "tasks": "rte,mrpc"}


def test_the_majority_line_is_drawn_or_the_caption_says_why_not(env, glue_dir, monkeypatch):
    _summary(env / "runs", "measured", "lhuc", 0.612, 400)
    at = open_at(TINY_Q, "runs")
    assert page_errors(at) == []
    assert fig(at, "fig_measured")["layout"].get("shapes")  # the dashed line
    assert any("the majority class (dashed line" in c.value for c in at.caption)
    monkeypatch.delenv("PALS_GLUE_DIR")
    at = open_at(TINY_Q, "runs")
    assert page_errors(at) == []
    assert not fig(at, "fig_measured")["layout"].get("shapes")
    caption = next(c.value for c in at.caption if "References:" in c.value)
    assert "no majority-class line: it is read from the GLUE files, and no GLUE folder is set" in caption
    assert "dashed line" not in caption


def test_smoke_runs_are_labelled_and_kept_off_the_measured_scale(env, glue_dir):
    """A 20-step run scored 30; a 400-step run of another design 70. The smoke run is labelled wherever it shows, is
    drawn on its own, and ranks nothing: the answer's 'best measured' is the real measurement."""
    _summary(env / "runs", "real", "lhuc", 0.70, 400)
    _summary(env / "runs", "quick", "ia3", 0.30, 20)
    at = open_at(TINY_Q)
    assert page_errors(at) == []
    said = answer(at)
    assert said.startswith("**Recommended:** **lhuc @ all**") and "best measured dev average here: 70.0" in said
    table = table_with(at, "fits")
    cell = table[table["design"] == "ia3 @ all"]["measured dev avg"].item()
    assert cell == "30.0 (1 run), a smoke run (20 steps): not ranked"
    at.segmented_control(key="view").set_value("runs").run()
    assert page_errors(at) == []
    ranked = fig(at, "fig_measured_ranked")["data"][0]
    assert ranked["y"] == ["lhuc @ all · seed 0"]
    assert fig(at, "fig_measured_ranked")["layout"]["xaxis"]["range"][0] > 30  # its scale is the measured one's
    assert [t["y"] for t in fig(at, "fig_measured_smoke")["data"]] == [["ia3 @ all · seed 0"]]
    assert any(m.value.startswith("**Smoke runs**") for m in at.markdown)
    measured = table_with(at, "folder")
    assert dict(zip(measured["design"], measured["note"])) == {"lhuc @ all": "—", "ia3 @ all": "smoke run (20 steps)"}
    runs = table_with(at, "wall time (s)")
    assert dict(zip(runs["run"], runs["note"])) == {"real": "—", "quick": "smoke run (20 steps)"}
    assert list(runs["dev average (0–100)"]) in (["70.00", "30.00"], ["30.00", "70.00"])  # one scale: 0–100


def test_a_run_with_untrained_tasks_says_so(env, glue_dir):
    """A task no step reached (summary.json ``untrained``) is named wherever the run's scores are shown."""
    _summary(env / "runs", "starved", "lhuc", 0.55, 400, untrained=["mrpc"])
    at = open_at(TINY_Q, "runs")
    assert page_errors(at) == []
    assert any("**lhuc @ all** (seed 0): mrpc" in w.value for w in at.warning)  # beside the measured results
    assert table_with(at, "folder")["note"].item() == "untrained: mrpc"
    assert table_with(at, "wall time (s)")["note"].item() == "untrained: mrpc"
    assert any("**Untrained: mrpc** received no training step" in w.value for w in at.warning)  # the inspected run
    assert list(table_with(at, "task")["task"]) == ["rte", "mrpc (untrained)"]


def test_an_empty_study_storage_is_an_invitation_and_the_form_starts_from_the_question(env):
    at = open_at({"model": "embedded-minilm", "tasks": "cola,sst2,mrpc,stsb,rte", "budget": "1.5"}, "studies")
    assert page_errors(at) == []
    assert any(
        i.value.startswith("**No study here yet**") and "start one with the form below" in i.value.lower()
        for i in at.info
    )
    assert at.text_input(key="study_start_tasks").value == "cola,sst2,mrpc,stsb,rte"
    assert at.selectbox(key="study_start_model").value == EMBEDDED_MODEL
    assert at.number_input(key="study_start_budget").value == 1.5
    assert not (env / "studies.db").exists()  # looked at, not created


def test_the_study_form_takes_a_tasks_file_and_a_count_budget(env):
    example = ROOT / inputs.EXAMPLE_TASKS
    at = open_at({"model": "tiny", "tasks_file": str(example), "extra": "250k"}, "studies")
    assert page_errors(at) == []
    assert at.text_input(key="study_start_tasks").value == "intent,reviews,tickets,entities,replies"
    assert at.selectbox(key="study_start_model").value == "tiny random BERT (smoke study)"
    assert at.text_input(key="study_start_budget_count").value == "250,000"
    settings = settings_from_form(
        "design",
        tasks="intent,reviews",
        model="tiny",
        budget="250,000",
        budget_kind="extra",
        tasks_file=str(example),
        steps=4,
    )
    assert settings.tasks == ["intent", "reviews"] and settings.tasks_file == str(example)
    assert settings.budget_obj().extra == 250_000


def test_the_design_table_says_whether_tasks_can_be_added_later():
    """A frozen-trunk LoRA can take a task later; PALs as in the paper (trunk trained) and CA-MTL cannot."""
    from explorer.tables import table_frame
    from pals_core.budget.table import rows
    from pals_core.budget.tasks import Task
    from pals_core.families.shapes import PRESETS

    shape = PRESETS["all-MiniLM-L6-v2"]
    tasks = [Task("a", 2), Task("b", 3)]
    frozen = table_frame(rows(shape, tasks, d_s=8, methods=["lora", "ca_mtl"], location="all", freeze_trunk=True))
    trained = table_frame(rows(shape, tasks, d_s=8, methods=["pals"], location="all", heads=2))
    got = dict(zip(frozen["design"], frozen["add tasks later"])) | dict(
        zip(trained["design"], trained["add tasks later"])
    )
    assert got == {"lora @ all": "yes", "ca_mtl @ all": "no", "pals @ all": "no"}
