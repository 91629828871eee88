"""End to end in a real headless Chromium: `streamlit run app.py` on 127.0.0.1, a person changes the
budget, sees the solved d_s change, launches a tiny real training run on real GLUE rows, watches it
finish and finds it in the runs table. Screenshots go to test-artifacts/ (gitignored).

Chromium is Debian's (`apt-get install chromium`; .ci/run installs it), never `playwright install`.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pals_core.budget.costs import design
from pals_core.budget.solver import Budget, solve
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import PRESETS
from pals_core.pricing.config import AdapterConfig

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("PALS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _solved_pals(ratio: float, model=None, tasks="rte,mrpc") -> int:
    from pals_core.base_model import model_shape

    shape = model or model_shape("tiny")
    ds = design(shape, parse_tasks(tasks), AdapterConfig(method="pals", location="all"), check_size=False)
    return solve(ds, Budget(ratio=ratio)).d_s


VIEWS = {
    "designs": "Designs",
    "sizes": "Size vs budget",
    "scaling": "All tasks on one input",
    "breakdown": "Where the parameters go",
    "paper": "Paper check",
    "train": "Train",
    "runs": "Runs & measured",
    "studies": "Studies",
}


def _settled(page) -> None:
    """Wait until the app has finished a rerun and drawn its charts."""
    page.wait_for_load_state("networkidle")
    page.get_by_test_id("stApp").wait_for()
    for _ in range(120):
        if (
            page.locator("[data-testid=stSkeleton]").count() == 0
            and page.locator("[data-testid=stStatusWidget]").count() == 0
        ):
            break
        page.wait_for_timeout(250)
    page.wait_for_timeout(500)


def _view(page, name: str) -> None:
    page.get_by_test_id("stButtonGroup").get_by_role("radio", name=VIEWS[name], exact=True).click()
    _settled(page)


@pytest.fixture(scope="module")
def server(tmp_path_factory, glue_dir):
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("app")
    port = _free_port()
    env = {
        **os.environ,
        "PALS_RUNS_DIR": str(tmp / "runs"),
        "PALS_GLUE_DIR": str(glue_dir),
        "PALS_CACHE_DIR": str(tmp / "cache"),
        "PALS_STUDY_STORAGE": f"sqlite:///{tmp / 'studies.db'}",
    }
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
        yield url, tmp / "runs"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_budget_to_a_finished_run_in_a_real_browser(server):
    """The question asked of the model that trains (tiny), a new budget, a run launched from the page, finished,
    and its score drawn — 20 steps: a smoke run, labelled so and kept apart from the measured ranking."""
    from playwright.sync_api import expect, sync_playwright

    url, runs = server
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.goto(f"{url}/?model=tiny&tasks=rte,mrpc&budget=1.13&design=pals%20%40%20all")
            solved = page.get_by_test_id("stMetric").filter(has_text="solved d_s").get_by_test_id("stMetricValue")
            expect(solved).to_have_text(str(_solved_pals(1.13)), timeout=60_000)

            # the person changes the budget: the solved size follows the calculator, and so does the address
            budget = page.get_by_role("textbox", name="Budget ratio B: N_total ≤ B × N_base")
            budget.fill("1.5")
            budget.press("Enter")
            expect(solved).to_have_text(str(_solved_pals(1.5)), timeout=20_000)
            assert _solved_pals(1.5) != _solved_pals(1.13)
            expect(page).to_have_url(re.compile(r"budget=1\.5"), timeout=10_000)

            # a tiny real run of the chosen design (PALs, all layers) on RTE and MRPC: the sidebar's model trains
            _view(page, "train")
            code = page.get_by_test_id("stCode").filter(has_text="pals-train")
            expect(code).to_contain_text(f"--d-s {_solved_pals(1.5)} ")
            expect(code).to_contain_text("--tasks rte,mrpc ")
            expect(code).to_contain_text("--model tiny")
            for role, label, value, flag in (
                ("spinbutton", "Steps", "20", "--steps 20"),
                ("textbox", "Max train examples per task (empty = all)", "64", "--max-train-examples 64"),
                ("textbox", "CPU threads (empty = torch's default)", "1", "--threads 1"),
                ("textbox", "Run name (optional)", "browser-run", "/browser-run"),
            ):
                box = page.get_by_role(role, name=label, exact=True)
                box.fill(value)
                box.press("Enter")
                expect(code).to_contain_text(flag)
            page.screenshot(path=str(ARTIFACTS / "browser-run-1-launcher.png"), full_page=True)
            page.get_by_role("button", name="Launch training").click()
            expect(page.get_by_text(re.compile("Launched run browser-run"))).to_be_visible(timeout=20_000)
            assert (runs / "browser-run" / "launch.json").is_file()

            # it appears, runs, finishes; the runs table (read from disk) says so
            _view(page, "runs")
            # the runs table by its first columns: the grid holds only the columns in view, and a finished run's wider
            # cells (its note, its dev average) move the last ones out of a 1400 px page
            table = page.get_by_test_id("stDataFrame").filter(has_text=re.compile(r"^run\s*status"))
            expect(table).to_contain_text("browser-run", timeout=20_000)
            try:
                expect(page.get_by_test_id("stProgress")).to_be_visible(timeout=15_000)
                page.screenshot(path=str(ARTIFACTS / "browser-run-2-running.png"), full_page=True)
            except AssertionError:
                pass  # a fast machine may finish before the first redraw
            expect(table).to_contain_text(re.compile(r"browser-run\s*finished"), timeout=150_000)
            expect(page.get_by_test_id("stProgress")).to_have_count(0)
            page.reload()
            _settled(page)
            # 20 steps: a smoke run, drawn on its own scale and labelled so, never ranked as measured
            smoke = page.get_by_test_id("stPlotlyChart").filter(has_text="Smoke runs (not measurements)")
            expect(smoke).to_be_visible(timeout=30_000)
            expect(page.get_by_test_id("stPlotlyChart").filter(has_text="Measured designs ranked")).to_have_count(0)
            summary = json.loads((runs / "browser-run" / "summary.json").read_text())
            drawn = smoke.locator(".js-plotly-plot").evaluate("g => g.data.map(t => [t.x, t.y])")
            assert drawn == [
                [
                    [pytest.approx(100 * summary["average"])],
                    [f"pals @ all, d_s {summary['config']['adapter']['d_s']} · seed 0"],
                ]
            ]
            expect(table).to_contain_text("smoke run (20 steps)")
            page.screenshot(path=str(ARTIFACTS / "browser-run-3-measured.png"), full_page=True)
        finally:
            browser.close()


def test_every_view_a_link_and_the_csv_in_a_real_browser(server, tmp_path):
    """Each view of the paper's question, drawn in the browser and saved as a screenshot; a link with a bad value;
    the nothing-fits answer; the CSV download equals the calculator's table."""
    import csv

    from playwright.sync_api import expect, sync_playwright

    from pals_core.budget.table import rows

    url, _ = server
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800}, accept_downloads=True)
            page.goto(url)
            expect(page.get_by_text("Recommended:")).to_be_visible(timeout=60_000)
            _settled(page)
            for i, name in enumerate(VIEWS):
                _view(page, name)
                expect(page).to_have_url(re.compile(f"view={name}"), timeout=10_000)
                if name in ("designs", "sizes", "scaling", "breakdown", "paper"):
                    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=30_000)
                    page.wait_for_timeout(800)
                assert page.get_by_test_id("stException").count() == 0
                page.screenshot(path=str(ARTIFACTS / f"view-{i + 1}-{name}.png"), full_page=True)

            # the CSV download is the table on screen: the calculator's rows
            _view(page, "designs")
            with page.expect_download() as info:
                page.get_by_role("button", name="Download the table (CSV)").click()
            path = tmp_path / "designs.csv"
            info.value.save_as(path)
            got = {r["design"]: r for r in csv.DictReader(path.open())}
            want = rows(PRESETS["bert-base-uncased"], parse_tasks(8), budget=Budget(ratio=1.13))
            assert len(got) == len(want)
            for c in want:
                r = got[c.method if c.location is None else f"{c.method} @ {c.location}"]
                assert r["d_s"] == ("—" if c.d_s is None else str(c.d_s))
                assert int(r["task-specific (all tasks)"]) == c.params_task_specific
                assert r["fits"] == ("yes" if c.feasible else "no")

            # nothing fits: the answer says so and names the smallest budget that does
            page.goto(f"{url}/?budget=1.0001&view=designs")
            expect(page.get_by_text("Nothing fits a budget of 1.0001×.")).to_be_visible(timeout=60_000)
            _settled(page)
            page.screenshot(path=str(ARTIFACTS / "answer-nothing-fits.png"), full_page=True)

            # a link with values the page has not seen, one of them bad
            page.goto(
                f"{url}/?model=minilm-l6-h384&tasks=rte,stsb,mnli&per_task=300k&methods=pals,houlsby,lora,lhuc"
                "&location=top&heads=6&view=sizes&seq_len=oops"
            )
            expect(page.get_by_text("the link's seq_len='oops' was not used")).to_be_visible(timeout=60_000)
            expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=30_000)
            _settled(page)
            page.screenshot(path=str(ARTIFACTS / "link-per-task-minilm.png"), full_page=True)
        finally:
            browser.close()
