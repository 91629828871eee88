"""The Studies view in a real headless Chromium at 1400 px: reached from the first screen, its start form asks what the
page asks (a link's ``methods=pals`` starts a study of PALs only, at the question's sequence length), the worker it
starts trains a real trial (tiny random BERT, real GLUE rows, a real SQLite storage), and the leaderboard shows the
design, its location, d_s and the score without scrolling sideways. Screenshots go to test-artifacts/ (gitignored).

Chromium is Debian's (``apt-get install chromium``), never ``playwright install``; the server is the app on
127.0.0.1 (``tests/test_browser_app.py``'s fixture)."""

from __future__ import annotations

import json
import time

import optuna
import pytest
from test_browser_app import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, _settled, server  # noqa: F401 - the app's fixture

from pals_core.supervise.workers import list_workers

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTH, HEIGHT = 1400, 900


def _headers(page) -> list[str]:
    """The leaderboard's column headers the grid draws at its scroll position (its accessible table holds the
    columns on screen, not the ones scrolled out of view)."""
    grid = page.get_by_test_id("stDataFrame").first
    return [h.inner_text().strip() for h in grid.locator("th[role=columnheader]").all()]


def test_studies_from_the_first_screen_start_what_the_page_asks_and_fit(server, monkeypatch):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    url, runs = server
    monkeypatch.setenv("PALS_RUNS_DIR", str(runs))
    storage = f"sqlite:///{runs.parent / 'studies.db'}"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(f"{url}/?model=tiny&tasks=rte&budget=1.1&methods=pals&seq_len=32")
            expect(page.get_by_text("Recommended:")).to_be_visible(timeout=60_000)
            _settled(page)
            # the Studies view from the first screen: its button lies inside the window before any scrolling
            door = page.get_by_role("button", name="Studies: search designs for this question with Optuna")
            box = door.bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT, box
            page.screenshot(path=str(ARTIFACTS / "studies-1-first-screen.png"))
            door.click()
            expect(page.get_by_text("Optuna studies")).to_be_visible(timeout=30_000)
            _settled(page)

            # the form asks what the page asks: PALs only, the question's length; a study of it starts
            methods = page.get_by_test_id("stMultiSelect").filter(has_text="Methods (design studies search these)")
            expect(methods).to_contain_text("pals")
            assert "lora" not in methods.inner_text() and "houlsby" not in methods.inner_text()
            expect(page.get_by_role("spinbutton", name="Max length (tokens)")).to_have_value("32")
            page.get_by_role("textbox", name="Study name").fill("browser-pals")
            for label, value in (
                ("Steps per trial", "4"),
                ("Trials (study total)", "1"),
                ("Examples per task (0 = default)", "16"),
                ("Batch size", "4"),
            ):
                page.get_by_role("spinbutton", name=label, exact=True).fill(value)
            page.screenshot(path=str(ARTIFACTS / "studies-2-form.png"), full_page=True)
            page.get_by_role("button", name="Start", exact=True).click()
            expect(page.get_by_text("Started worker")).to_be_visible(timeout=30_000)

            (worker,) = list_workers()
            record = json.loads((worker.path / "worker.json").read_text())
            assert record["study_name"] == "browser-pals" and record["settings"]["methods"] == ["pals"]
            assert (record["settings"]["max_len"], record["settings"]["steps"]) == (32, 4)
            end = time.time() + 300
            while any(w.alive for w in list_workers()):
                assert time.time() < end, worker.log_tail(30)
                time.sleep(1)
            (trial,) = optuna.load_study(study_name="browser-pals", storage=storage).get_trials()
            assert trial.state == optuna.trial.TrialState.COMPLETE, worker.log_tail(30)
            assert trial.params["method"] == "pals" and trial.user_attrs["design"].startswith("pals @ ")

            # the leaderboard at 1400 px: design, location, d_s and the score on screen, no sideways scrolling
            page.goto(f"{url}/?model=tiny&tasks=rte&budget=1.1&methods=pals&seq_len=32&view=studies")
            board = page.get_by_test_id("stDataFrame").first
            expect(board).to_contain_text("pals @", timeout=60_000)
            _settled(page)
            board.scroll_into_view_if_needed()
            shown = _headers(page)
            for column in ("design", "location", "d_s", "dev average (0–100)"):
                assert column in shown, shown
            assert shown.index("dev average (0–100)") < len(shown) - 1, shown  # a column after it is on screen too
            assert shown[:6] == ["rank", "trial", "design", "location", "d_s", "dev average (0–100)"], shown
            grid = board.bounding_box()
            assert grid is not None and grid["x"] + grid["width"] <= WIDTH, grid
            page.screenshot(path=str(ARTIFACTS / "studies-3-leaderboard.png"))
        finally:
            browser.close()
