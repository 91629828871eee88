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

from pals_core.budget import PRESETS, AdapterConfig, Budget, design, parse_tasks, solve

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("PALS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _solved_pals(ratio: float) -> int:
    ds = design(PRESETS["bert-base-uncased"], parse_tasks(8), AdapterConfig(method="pals", location="all"), check_size=False)
    return solve(ds, Budget(ratio=ratio)).d_s


@pytest.fixture(scope="module")
def server(tmp_path_factory, glue_dir):
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("app")
    port = _free_port()
    env = {**os.environ, "PALS_RUNS_DIR": str(tmp / "runs"), "PALS_GLUE_DIR": str(glue_dir),
           "PALS_CACHE_DIR": str(tmp / "cache"), "PALS_STUDY_STORAGE": f"sqlite:///{tmp / 'studies.db'}"}
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.address", "127.0.0.1",
                             "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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
    from playwright.sync_api import expect, sync_playwright

    url, runs = server
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            solved = page.get_by_test_id("stMetric").filter(has_text="solved d_s").get_by_test_id("stMetricValue")
            expect(solved).to_have_text(str(_solved_pals(1.13)), timeout=60_000)
            expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "browser-1-design.png"))

            # the person changes the budget: the solved size follows the calculator
            budget = page.get_by_role("textbox", name="Budget ratio B: N_total ≤ B × N_base")
            budget.fill("1.5")
            budget.press("Enter")
            expect(solved).to_have_text(str(_solved_pals(1.5)), timeout=20_000)
            assert _solved_pals(1.5) != _solved_pals(1.13)
            page.screenshot(path=str(ARTIFACTS / "browser-2-budget-1.5.png"))

            # a tiny real run of the chosen design (PALs, all layers) on RTE and MRPC
            page.get_by_role("tab", name="Train & runs").click()
            code = page.get_by_test_id("stCode").filter(has_text="pals-train")
            expect(code).to_contain_text(f"--d-s {_solved_pals(1.5)}")
            tasks = page.get_by_test_id("stMultiSelect").filter(has_text="Tasks to train")
            for t in ("cola", "sst2", "stsb"):
                tasks.get_by_role("button", name=f"Remove {t}").click()
                expect(tasks.get_by_role("button", name=f"Remove {t}")).to_have_count(0)
            expect(code).to_contain_text("--tasks mrpc,rte")
            page.get_by_role("combobox", name="Model", exact=True).click()
            page.get_by_role("option", name=re.compile("^tiny")).click()
            expect(code).to_contain_text("--model tiny")
            for role, label, value, flag in (
                    ("spinbutton", f"d_s (solved on bert-base-uncased: {_solved_pals(1.5)})", "24", "--d-s 24"),
                    ("spinbutton", "Steps", "20", "--steps 20"),
                    ("textbox", "Max train examples per task (empty = all)", "64", "--max-train-examples 64"),
                    ("textbox", "CPU threads (empty = torch's default)", "1", "--threads 1"),
                    ("textbox", "Run name (optional)", "browser-run", "/browser-run")):
                box = page.get_by_role(role, name=label, exact=True)
                box.fill(value)
                box.press("Enter")
                expect(code).to_contain_text(flag)
            page.screenshot(path=str(ARTIFACTS / "browser-3-launcher.png"))
            page.get_by_role("button", name="Launch training").click()
            expect(page.get_by_text("Launched run browser-run")).to_be_visible(timeout=20_000)
            assert (runs / "browser-run" / "launch.json").is_file()

            # it appears, runs, finishes; the runs table (read from disk) says so
            table = page.get_by_test_id("stDataFrame").filter(has_text="wall time")
            expect(table).to_contain_text("browser-run", timeout=20_000)
            try:
                expect(page.get_by_test_id("stProgress")).to_be_visible(timeout=15_000)
                page.screenshot(path=str(ARTIFACTS / "browser-4-running.png"))
            except AssertionError:
                pass  # a fast machine may finish before the first redraw
            expect(table).to_contain_text(re.compile(r"browser-run\s*finished"), timeout=150_000)
            expect(page.get_by_test_id("stProgress")).to_have_count(0)
            measured = page.get_by_test_id("stPlotlyChart").filter(has_text="Measured: dev score")
            expect(measured).to_be_visible()
            summary = json.loads((runs / "browser-run" / "summary.json").read_text())
            drawn = measured.locator(".js-plotly-plot").evaluate("g => g.data.map(t => [t.name, t.x, t.y])")
            assert drawn == [["pals", [summary["params"]["task_specific"]], [summary["average"]]]]
            page.screenshot(path=str(ARTIFACTS / "browser-5-finished.png"), full_page=True)
        finally:
            browser.close()
