"""In a real headless Chromium, the newcomer's visit: the example's tasks file (four kinds, a tagging task among them)
with a finished run and a study of it — every view of the explorer draws without an error box, and what the page
draws reads: its marks in a font it ships (no emoji), no error before anything was entered, the Designs table's FLOPs
columns in view at 1400 px, the design space's labels clear of its markers, every point of the step-time scatter
named. Screenshots under test-artifacts/ (gitignored).

Chromium is Debian's (`apt-get install chromium`), never `playwright install`.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from test_browser_app import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, _settled
from test_browser_truth import _serve

from explorer.page import VIEWS  # the page's views, by their labels

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUN_STEPS = 100  # a measured run (not a smoke run: SMOKE_STEPS), so that it ranks and fills the measured column


@pytest.fixture(scope="module")
def four_kinds(tmp_path_factory):
    """The example tasks (classification, regression, multilabel, tagging), a finished PALs run of them on the tiny
    BERT and a one-trial design study of them, served by the app."""
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.config import TrainConfig
    from pals_core.train.trainer import train

    tmp = tmp_path_factory.mktemp("every-view")
    shutil.copytree(ROOT / "examples" / "tasks", tmp / "tasks")
    tasks = tmp / "tasks" / "tasks.yaml"
    cfg = TrainConfig(
        tasks=[],
        tasks_file=str(tasks),
        adapter=AdapterConfig(method="pals", location="all", d_s=12),
        model="tiny",
        out=str(tmp / "runs" / "mine"),
        steps=RUN_STEPS,
        batch_size=8,
        max_len=32,
        eval_every=50,
        max_eval_examples=32,
        num_threads=1,
        seed=0,
    )
    summary = train(cfg, progress=False)
    study = subprocess.run(
        [sys.executable, "-c", "import sys; from studies.cli import main; sys.exit(main())", "run", "design"]
        + ["--tasks-file", str(tasks), "--model", "tiny", "--trials", "1", "--steps", "10", "--max-len", "32"]
        + ["--max-train-examples", "32", "--max-eval-examples", "16", "--threads", "1", "--sampler-seed", "0"]
        + ["--storage", f"sqlite:///{tmp / 'studies.db'}", "--out", str(tmp / "studies_out")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert study.returncode == 0, study.stderr[-2000:]
    for url, _ in _serve(tmp, {**os.environ}):
        yield url, tasks, summary


def _question(tasks: Path, view: str) -> str:
    return "?" + urlencode({"model": "tiny", "tasks_file": str(tasks), "budget": "1.13", "view": view})


def _open(page, url: str, tasks: Path, view: str) -> None:
    page.goto(url + "/" + _question(tasks, view))
    page.get_by_test_id("stButtonGroup").first.wait_for(timeout=120_000)
    _settled(page)


def _errors(page) -> list[str]:
    return [e.inner_text() for e in page.get_by_test_id("stAlertContentError").all()] + [
        e.inner_text() for e in page.get_by_test_id("stException").all()
    ]


# the characters an emoji font draws (an empty box without one), as the page's text holds them
_EMOJI = r"""(root) => Array.from(root.innerText.matchAll(/[\p{Extended_Pictographic}\u{FE0F}]/gu))
  .map((m) => m[0]).filter((c) => !'©®™'.includes(c))"""


def test_every_view_takes_every_kind(four_kinds):
    """Each view of the question on the four example tasks draws with no error box and no emoji; Your tasks charts
    the tagging task's entities per type, train and dev; Runs & measured draws the measured plot with its majority
    line and shows the regression task's errors in its units; the Designs table's measured column holds the run's
    score; the Studies view shows the study's leaderboard with the tagging task's score."""
    from playwright.sync_api import expect, sync_playwright

    from pals_core.kinds import get_kind

    url, tasks, summary = four_kinds
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            _open(page, url, tasks, "designs")
            for name, title in VIEWS.items():  # as a person goes from view to view
                page.get_by_test_id("stButtonGroup").get_by_role("radio", name=title, exact=True).click()
                expect(page).to_have_url(re.compile(f"view={name}"), timeout=180_000)
                _settled(page)
                if name == "tasks":
                    expect(page.locator(".st-key-fig_labels--entities svg.main-svg").first).to_be_visible(
                        timeout=120_000
                    )
                if name == "runs":
                    expect(page.locator(".st-key-fig_measured svg.main-svg").first).to_be_visible(timeout=60_000)
                if name == "studies":
                    expect(page.get_by_text("Leaderboard", exact=True)).to_be_visible(timeout=60_000)
                _settled(page)
                assert _errors(page) == [], (name, _errors(page))
                assert page.get_by_test_id("stMain").evaluate(_EMOJI) == [], name
                page.screenshot(path=str(ARTIFACTS / f"every-view-{name}.png"), full_page=True)

                if name == "tasks":  # the entities per type, train and dev: the counts pals-tasks prints
                    chart = page.locator(".st-key-fig_labels--entities .js-plotly-plot")
                    bars = chart.evaluate("g => g.data.map(t => [t.name, t.x, t.customdata])")
                    assert [b[0].split()[0] for b in bars] == ["train", "dev"]
                    assert set(bars[0][1]) == {"PRODUCT", "CITY", "AMOUNT", "ORDER", "DATE"}
                    assert all(sum(b[2]) > 0 for b in bars)
                    expect(
                        page.get_by_text(re.compile(r"entities \(one tag per word\) — train: 300 sentences"))
                    ).to_be_visible()
                if name == "runs":
                    ranked = page.locator(".st-key-fig_measured_ranked .js-plotly-plot")
                    annotations = ranked.evaluate("g => (g.layout.annotations || []).map(a => a.text)")
                    assert any(a.startswith("majority class") for a in annotations), annotations
                    rmse = summary["scores"]["reviews"]["rmse"]
                    shown = get_kind("regression").metric_text("rmse", rmse)  # in the task's units, not ×100
                    expect(page.get_by_test_id("stDataFrame").filter(has_text="Spearman")).to_contain_text(shown)
                if name == "designs":  # the measured column, as the table's CSV holds it (the grid draws some rows)
                    with page.expect_download() as info:
                        page.get_by_role("button", name="Download the table (CSV)").click()
                    rows = {r["design"]: r for r in csv.DictReader(open(info.value.path(), encoding="utf-8"))}
                    assert rows["pals @ all"]["measured dev avg"].startswith(f"{100 * summary['average']:.1f} (1 run)")
                if name == "studies":
                    expect(page.get_by_test_id("stDataFrame").filter(has_text="entity_f1").first).to_be_visible()
        finally:
            browser.close()


_SHAPES = """(root) => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, e.textContent]; };
  const texts = (sel) => Array.from(root.querySelectorAll(sel)).filter((e) => e.textContent.trim()).map(box);
  return {
    chart: box(root.querySelector('svg.main-svg')),
    labels: texts('g.annotation-text-g text').concat(texts('g.textpoint text')),
    markers: Array.from(root.querySelectorAll('g.trace.scatter path.point')).map(box),
    names: Array.from(root.querySelectorAll('g.annotation-text-g text')).map((e) =>
      Array.from(e.querySelectorAll('tspan.line')).map((t) => t.textContent).concat(
        e.querySelector('tspan.line') ? [] : [e.textContent])).flat(),
  };
}"""


def _overlap(a, b) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def _clear(shapes) -> list:
    """Labels over another label or over a marker."""
    labels, markers = shapes["labels"], shapes["markers"]
    return [(a[4], b[4]) for i, a in enumerate(labels) for b in labels[i + 1 :] if _overlap(a, b)] + [
        (a[4], m[:2]) for a in labels for m in markers if _overlap(a, m)
    ]


def test_what_the_newcomer_met_reads_well(four_kinds):
    """The answer's icon is a Material Symbol (the page's own font), not an emoji; choosing a tasks file before
    entering one is a prompt, no error; at 1400 px the Designs table shows its FLOPs columns whole; at 1000 and
    1400 px the design space's labels and the step-time scatter's labels lie clear of every marker and of each other,
    and the scatter names every design."""
    from playwright.sync_api import expect, sync_playwright

    url, tasks, _ = four_kinds
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            _open(page, url, tasks, "designs")
            icon = page.get_by_test_id("stAlert").filter(has_text="Recommended:").get_by_test_id("stAlertDynamicIcon")
            expect(icon).to_have_text("check_circle")  # a ligature of the Material Symbols font the page serves
            assert "Material Symbols" in icon.evaluate("e => getComputedStyle(e).fontFamily")

            # the table's FLOPs columns in view: a column is whole when the one after it starts in view too
            # (the grid's accessible header row holds the columns that start inside its viewport)
            table = page.get_by_test_id("stDataFrame").first
            headers = table.evaluate("t => Array.from(t.querySelectorAll('th')).map((h) => h.textContent)")
            for column in ("FLOPs × base", "GFLOPs, all tasks", "GFLOPs, train step"):
                assert column in headers[:-1], headers
            page.screenshot(path=str(ARTIFACTS / "newcomer-designs-1400.png"), full_page=True)

            for width in (1000, 1400):
                page.set_viewport_size({"width": width, "height": 1600})
                _open(page, url, tasks, "designs")
                space = page.locator(".st-key-fig_space")
                expect(space.locator("svg.main-svg").first).to_be_visible(timeout=60_000)
                space.scroll_into_view_if_needed()
                shapes = space.evaluate(_SHAPES)
                assert len(shapes["labels"]) >= 5 and _clear(shapes) == [], _clear(shapes)
                space.screenshot(path=str(ARTIFACTS / f"newcomer-design-space-{width}.png"))

                _open(page, url, tasks, "machine")
                scatter = page.locator(".st-key-fig_step_time")
                expect(scatter.locator("svg.main-svg").first).to_be_visible(timeout=60_000)
                scatter.scroll_into_view_if_needed()
                shapes = scatter.evaluate(_SHAPES)
                assert _clear(shapes) == [], _clear(shapes)
                memory = page.locator(".st-key-fig_memory")  # names every design under its bar
                designs = memory.evaluate("r => Array.from(r.querySelectorAll('g.xtick text')).map(e => e.textContent)")
                named = [n for n in shapes["names"] if n.strip()]  # a line each: designs on one spot share a label
                assert sorted(named) == sorted(designs) and len(named) == len(shapes["markers"]), (named, designs)
                scatter.screenshot(path=str(ARTIFACTS / f"newcomer-step-time-{width}.png"))

            # nothing entered yet: the page asks for a tasks file, it shows no error
            page.goto(url + "/?view=designs")
            page.get_by_test_id("stButtonGroup").first.wait_for(timeout=120_000)
            page.get_by_test_id("stSidebar").get_by_text("a tasks file", exact=True).click()
            expect(page.get_by_text(re.compile(r"Your tasks: Enter the path of a tasks file"))).to_be_visible(
                timeout=30_000
            )
            _settled(page)
            assert _errors(page) == [], _errors(page)
            page.screenshot(path=str(ARTIFACTS / "newcomer-no-tasks-file-yet.png"), full_page=True)
        finally:
            browser.close()
