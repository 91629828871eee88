"""In a real headless Chromium: the numbers a person reads on the page, in the CSV the
browser downloads and in ``pals-budget``'s table are the same digits; a first visit without a GLUE folder is offered
the example tasks instead of failing on its first click; an empty study storage is an invitation. Every view looked
at is saved at 1400 and 1000 px wide under test-artifacts/ (gitignored).

Chromium is Debian's (`apt-get install chromium`), never `playwright install`.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from test_browser_app import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, _free_port, _settled
from test_explorer_truth import QUESTION, cli_rows

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTHS = (1400, 1000)


@pytest.fixture(scope="module")
def first_visit(tmp_path_factory):
    """The app as a newcomer starts it: no $PALS_GLUE_DIR, no hub, no runs, no study storage yet."""
    tmp = tmp_path_factory.mktemp("first-visit")
    env = {k: v for k, v in os.environ.items() if k != "PALS_GLUE_DIR"}
    yield from _serve(tmp, env)


def _serve(tmp: Path, env: dict):
    """Streamlit serving the app on 127.0.0.1 (runs and studies under ``tmp``): yields (url, tmp)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    port = _free_port()
    env = dict(env)
    env.update(
        {
            "PALS_RUNS_DIR": str(tmp / "runs"),
            "PALS_STUDY_STORAGE": f"sqlite:///{tmp / 'studies.db'}",
            "PALS_LOCAL_PROFILE": str(tmp / "no-local-profile.json"),
            "HF_HUB_OFFLINE": "1",
        }
    )
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.time() + 60
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > end:
                raise AssertionError(f"streamlit did not start:\n{(tmp / 'server.log').read_text()}")
            time.sleep(0.3)
        yield url, tmp
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _metric(page, name: str) -> str:
    return page.get_by_test_id("stMetric").filter(has_text=name).get_by_test_id("stMetricValue").inner_text().strip()


def test_the_page_the_downloaded_csv_and_pals_budget_agree_to_the_digit(first_visit):
    from playwright.sync_api import expect, sync_playwright

    url, tmp = first_visit
    ARTIFACTS.mkdir(exist_ok=True)
    query = "&".join(f"{k}={v}" for k, v in QUESTION.items())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1800}, accept_downloads=True)
                page.goto(f"{url}/?{query}&view=designs")
                expect(page.get_by_text("Recommended:")).to_be_visible(timeout=60_000)
                _settled(page)
                said = page.get_by_test_id("stAlertContentSuccess").inner_text()
                design = re.search(r"Recommended: (\S+(?: @ \S+)?) ", said).group(1)
                method, _, location = design.partition(" @ ")
                cli = cli_rows(
                    "--model", QUESTION["model"], "--tasks", QUESTION["tasks"], "--budget", QUESTION["budget"]
                )[(method, location or "—")]
                share = re.search(r"spends (\d+\.\d%) of the budget", said).group(1)
                # every metric written whole (a narrow page wraps them, never cuts '1.4989×' to '1.4…')
                assert _metric(page, "% of budget used") == share
                assert _metric(page, "total × base") == f"{cli['× base']}×"
                assert _metric(page, "FLOPs × base") == f"{cli['FLOPs × base']}×"
                with page.expect_download() as info:
                    page.get_by_role("button", name="Download the table (CSV)").click()
                path = tmp / f"designs-{width}.csv"
                info.value.save_as(path)
                row = next(r for r in csv.DictReader(path.open()) if r["design"] == design)
                assert row["% of budget used"] + "%" == share
                assert (row["total × base"], row["FLOPs × base"]) == (cli["× base"], cli["FLOPs × base"])
                assert f"a step {cli['step × base']}× the base model's" in said
                assert f"{cli['train GiB']} GiB to train" in said
                page.screenshot(path=str(ARTIFACTS / f"truth-designs-{width}.png"), full_page=True)
                page.close()
        finally:
            browser.close()


def test_a_first_visit_is_offered_the_example_tasks_and_an_invitation_to_study(first_visit):
    from playwright.sync_api import expect, sync_playwright

    url, _ = first_visit
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1800})
                page.goto(f"{url}/?model=embedded-minilm&tasks=rte,mrpc&budget=1.13&view=train")
                offer = page.get_by_role("button", name="Use the example tasks (examples/tasks/tasks.yaml)")
                expect(offer).to_be_visible(timeout=60_000)
                expect(page.get_by_text("This run has no data to read yet")).to_be_visible()
                expect(page.get_by_role("button", name="Launch training")).to_be_disabled()
                _settled(page)
                page.screenshot(path=str(ARTIFACTS / f"truth-train-no-glue-{width}.png"), full_page=True)
                offer.click()
                expect(page.get_by_role("textbox", name="Tasks file (YAML or JSON)")).to_have_value(
                    re.compile(r"examples/tasks/tasks\.yaml$"), timeout=30_000
                )
                expect(page.get_by_role("button", name="Launch training")).to_be_enabled(timeout=30_000)
                expect(page.get_by_text("This run has no data to read yet")).to_have_count(0)
                expect(page.get_by_test_id("stCode").filter(has_text="pals-train")).to_contain_text("--tasks-file")
                _settled(page)
                assert page.get_by_test_id("stException").count() == 0
                page.screenshot(path=str(ARTIFACTS / f"truth-train-examples-{width}.png"), full_page=True)

                page.goto(f"{url}/?model=embedded-minilm&tasks=cola,sst2,mrpc,stsb,rte&budget=1.5&view=studies")
                expect(page.get_by_text("No study here yet")).to_be_visible(timeout=60_000)
                expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
                # the form under it, from the question in the sidebar (drawn once the page's run reaches it)
                expect(page.get_by_role("textbox", name="Tasks", exact=True)).to_have_value(
                    "cola,sst2,mrpc,stsb,rte", timeout=60_000
                )
                _settled(page)
                page.screenshot(path=str(ARTIFACTS / f"truth-studies-empty-{width}.png"), full_page=True)
                page.close()
        finally:
            browser.close()


# ------------------------------------------------------------------ readable at 1000 and 1400 px


@pytest.fixture(scope="module")
def measured_visit(tmp_path_factory, glue_dir):
    """The app with four measured runs of the question's model and tasks (their summaries), and the GLUE folder."""
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.config import TrainConfig

    tmp = tmp_path_factory.mktemp("measured-visit")
    for i, (method, location, average) in enumerate(
        [("lhuc", "all", 0.612), ("pals", "all", 0.655), ("lora", "all", 0.641), ("houlsby", "top", 0.598)]
    ):
        run = tmp / "runs" / f"run-{i}"
        run.mkdir(parents=True)
        adapter = AdapterConfig(method=method, location=location, d_s=None if method == "lhuc" else 8)
        config = TrainConfig(tasks=["rte", "mrpc"], adapter=adapter, model="tiny").as_dict()
        summary = {"config": config, "average": average, "scores": {}, "steps": 400, "params": {"task_specific": i + 1}}
        (run / "summary.json").write_text(json.dumps(summary))
    yield from _serve(tmp, {**os.environ, "PALS_GLUE_DIR": str(glue_dir)})


# the page boxes of a chart's SVG texts, by what they are (plotly's classes)
_BOXES = """(root) => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, e.textContent]; };
  const all = (sel) => Array.from(root.querySelectorAll(sel)).filter((e) => e.textContent.trim()).map(box);
  const svg = root.querySelector('svg.main-svg').getBoundingClientRect();
  const legend = root.querySelector('g.legend');
  return {
    chart: [svg.left, svg.top, svg.right, svg.bottom],
    legend: legend ? box(legend) : null,
    title: all('g.g-gtitle text'),
    annotations: all('g.annotation-text-g text'),
    points: all('g.textpoint text'),
    xticks: all('g.xtick text'),
    bars: root.querySelectorAll('g.trace.bars g.point').length,
  };
}"""


def _boxes(page, key: str) -> dict:
    chart = page.locator(f".st-key-{key}")
    chart.scroll_into_view_if_needed()
    return chart.evaluate(_BOXES)


def _overlap(a, b) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def _overlapping(boxes) -> list:
    return [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if _overlap(a, b)]


def _inside(box, area) -> bool:
    return area[0] - 0.5 <= box[0] and box[2] <= area[2] + 0.5 and area[1] - 0.5 <= box[1] and box[3] <= area[3] + 0.5


def test_labels_never_overlap_and_over_budget_is_said_in_every_view(measured_visit):
    """At 1000 and 1400 px: the majority-class label clear of the ranked plot's title and subtitle; the design
    space's labels inside the figure and clear of its legend and of each other; the Memory view names every design
    under its bar and marks the one over the budget, in the bars, the step-time plot and its table."""
    from playwright.sync_api import expect, sync_playwright

    url, _ = measured_visit
    ARTIFACTS.mkdir(exist_ok=True)
    question = "model=tiny&tasks=rte,mrpc&budget=1.02"  # on tiny, ca_mtl @ all is over this budget
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1400})
                page.goto(f"{url}/?{question}&view=runs")
                expect(page.locator(".st-key-fig_measured_ranked svg.main-svg").first).to_be_visible(timeout=90_000)
                _settled(page)
                ranked = _boxes(page, "fig_measured_ranked")
                [majority] = [a for a in ranked["annotations"] if a[4].startswith("majority class")]
                assert ranked["title"] and not any(_overlap(majority, t) for t in ranked["title"]), ranked
                assert all(_inside(t, ranked["chart"]) for t in ranked["title"]), ranked  # the title not cut
                page.screenshot(path=str(ARTIFACTS / f"readable-runs-{width}.png"), full_page=True)

                page.goto(f"{url}/?{question}&view=designs")
                expect(page.locator(".st-key-fig_space svg.main-svg").first).to_be_visible(timeout=90_000)
                _settled(page)
                space = _boxes(page, "fig_space")
                labels = space["points"] + space["annotations"]
                assert labels and _overlapping(labels) == [], _overlapping(labels)
                for t in labels:
                    assert _inside(t, space["chart"]) and not _overlap(t, space["legend"]), (t, space["legend"])
                assert any("over budget, not drawn: ca_mtl @ all" in t[4] for t in space["title"]), space["title"]
                page.screenshot(path=str(ARTIFACTS / f"readable-designs-{width}.png"), full_page=True)

                page.goto(f"{url}/?{question}&view=machine")
                expect(page.locator(".st-key-fig_memory svg.main-svg").first).to_be_visible(timeout=90_000)
                _settled(page)
                memory = _boxes(page, "fig_memory")
                names = [t[4] for t in memory["xticks"]]
                assert len(names) == memory["bars"] // 4 and _overlapping(memory["xticks"]) == []  # every bar named
                assert [n for n in names if n.endswith("(over budget)")] == ["ca_mtl @ all (over budget)"], names
                assert any("over the budget" in t[4] for t in memory["title"])
                time_plot = _boxes(page, "fig_step_time")
                named = time_plot["points"] + time_plot["annotations"]  # each design's name, beside or led away
                assert named and _overlapping(named) == [], _overlapping(named)
                assert all(_inside(t, time_plot["chart"]) for t in named)
                page.screenshot(path=str(ARTIFACTS / f"readable-machine-{width}.png"), full_page=True)
                page.close()
        finally:
            browser.close()


def test_the_train_form_starts_at_the_tasks_p95_and_its_labels_are_whole(measured_visit):
    """With tasks from a file, Max length starts at the largest p95 of the tasks' tokens (and says so); the trunk
    checkbox's label is not cut (no ellipsis) at 1000 or 1400 px."""
    from playwright.sync_api import expect, sync_playwright

    from pals_core.data.profile import profile_tasks
    from pals_core.tasks.taskfile import read_tasks_file

    url, _ = measured_visit
    tasks = ROOT / "examples" / "tasks" / "tasks.yaml"
    p95 = max(p["tokens"]["p95"] for p in profile_tasks(list(read_tasks_file(tasks).values()), model="tiny"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1400})
                page.goto(f"{url}/?model=tiny&tasks_file={tasks}&budget=1.5&view=train")
                field = page.get_by_label("Max length (tokens)")
                expect(field).to_be_visible(timeout=90_000)
                _settled(page)
                assert field.input_value() == str(p95)
                expect(page.get_by_text(f"Default {p95}: the p95 of these tasks' token counts")).to_be_visible()
                freeze = page.get_by_test_id("stCheckbox").filter(has_text="Freeze the trunk")
                freeze.scroll_into_view_if_needed()
                cut = freeze.evaluate(
                    "(e) => Array.from(e.querySelectorAll('*')).filter((x) => x.textContent.trim() && x.scrollWidth >"
                    " x.clientWidth + 1 && getComputedStyle(x).overflow !== 'visible').map((x) => x.textContent)"
                )
                assert cut == [] and freeze.inner_text().strip() == "Freeze the trunk", cut
                page.screenshot(path=str(ARTIFACTS / f"readable-train-{width}.png"))
                page.close()
        finally:
            browser.close()
