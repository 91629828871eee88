"""Issue #29 in a real headless Chromium (items 3, 6 and 8): the numbers a person reads on the page, in the CSV the
browser downloads and in ``pals-budget``'s table are the same digits; a first visit without a GLUE folder is offered
the example tasks instead of failing on its first click; an empty study storage is an invitation. Every view looked
at is saved at 1400 and 1000 px wide under test-artifacts/ (gitignored).

Chromium is Debian's (`apt-get install chromium`), never `playwright install`.
"""

from __future__ import annotations

import csv
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
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("first-visit")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PALS_GLUE_DIR"}
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
                expect(page.get_by_role("textbox", name="Tasks", exact=True)).to_have_value("cola,sst2,mrpc,stsb,rte")
                _settled(page)
                page.screenshot(path=str(ARTIFACTS / f"truth-studies-empty-{width}.png"), full_page=True)
                page.close()
        finally:
            browser.close()
