"""How fast the explorer answers a new question: server-side redraw and browser latency.

1. Server-side (streamlit.testing AppTest, in-process): the time the page's script takes (``explorer.page.main``,
   timed around the call, so AppTest's own polling is not counted) to redraw after a new budget — a question the
   caches have not seen — for each view, and for a question already seen.
2. Browser (a real ``streamlit run`` server on 127.0.0.1 and headless Chromium driven by Playwright): from the
   Enter key after typing a new budget to the new solved d_s on screen, timed inside the page
   (``performance.now()`` at the key press, ``requestAnimationFrame`` polling of the metric's text).

Usage: python benchmarks/bench_app.py [--reps N] [--browser-reps N] [--no-browser]
Chromium: /usr/bin/chromium (``apt-get install chromium``), or $PALS_CHROMIUM.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHROMIUM = os.environ.get("PALS_CHROMIUM", "/usr/bin/chromium")
VIEWS = ("designs", "sizes", "scaling", "breakdown", "paper", "train", "runs")
BUDGET_BOX = "Budget ratio B: N_total ≤ B × N_base"


def med(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def server_side(reps: int) -> None:
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from streamlit.testing.v1 import AppTest

    import explorer.page as page

    inner = page.main
    times: list[float] = []
    cpu: list[float] = []  # the script thread's own CPU time: what an idle machine's wall time would be

    def timed() -> None:
        t, c = time.perf_counter(), time.thread_time()
        try:
            inner()
        finally:
            times.append(time.perf_counter() - t)
            cpu.append(time.thread_time() - c)

    page.main = timed
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        assert not at.exception, at.exception
        print(f"first draw of the page (cold caches, imports done)      : {times[-1] * 1000:7.1f} ms")
        k = 0
        for view in VIEWS:
            at.segmented_control(key="view").set_value(view).run()
            new, seen, new_cpu = [], [], []
            for _ in range(reps):
                k += 1
                at.sidebar.text_input(key="budget_ratio").set_value(f"{1.05 + 0.001 * k:.3f}").run()
                new.append(times[-1])
                new_cpu.append(cpu[-1])
                at.run()
                seen.append(times[-1])
            assert not at.exception, at.exception
            print(
                f"redraw, view {view:<10} new budget: {med(new):6.1f} ms wall, {med(new_cpu):5.1f} ms CPU   "
                f"same question: {med(seen):5.1f} ms wall   (median of {reps})"
            )
    finally:
        page.main = inner


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LATENCY_JS = f"""
async ([want]) => {{
  const box = [...document.querySelectorAll('input')].find(i => i.getAttribute('aria-label') === {BUDGET_BOX!r});
  const value = () => {{
    const m = [...document.querySelectorAll('[data-testid=stMetric]')].find(e => e.innerText.includes('solved d_s'));
    return m ? m.querySelector('[data-testid=stMetricValue]').innerText.trim() : null;
  }};
  const t0 = performance.now();
  box.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter', code: 'Enter', keyCode: 13, bubbles: true}}));
  await new Promise((resolve, reject) => {{
    const check = () => {{
      if (value() === want) resolve();
      else if (performance.now() - t0 > 20000) reject(new Error('timeout: ' + value()));
      else requestAnimationFrame(check);
    }};
    check();
  }});
  return performance.now() - t0;
}}
"""


def browser(reps: int) -> None:
    from playwright.sync_api import sync_playwright

    from pals_core.budget.costs import design
    from pals_core.budget.solver import Budget, solve
    from pals_core.budget.tasks import parse_tasks
    from pals_core.families.shapes import PRESETS
    from pals_core.pricing.config import AdapterConfig

    ds = design(
        PRESETS["bert-base-uncased"], parse_tasks(8), AdapterConfig(method="pals", location="all"), check_size=False
    )
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="bench-app-")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PALS_RUNS_DIR": f"{tmp}/runs",
        "PALS_STUDY_STORAGE": f"sqlite:///{tmp}/none.db",
    }
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
        ],
        cwd=ROOT,
        env=env,
        stdout=open(f"{tmp}/server.log", "wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as p:
            b = p.chromium.launch(
                executable_path=CHROMIUM,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/?design=pals%20%40%20all")
            page.get_by_test_id("stMetricValue").first.wait_for(timeout=60_000)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1500)
            box = page.get_by_role("textbox", name=BUDGET_BOX)
            lat = []
            for i in range(reps + 2):
                # alternate between two far-apart budgets (so that d_s changes), each time a value not seen before
                ratio = (1.13 if i % 2 else 1.5) + 0.0001 * (i + 1)
                box.fill(f"{ratio:.3f}")
                ms = page.evaluate(LATENCY_JS, [str(solve(ds, Budget(ratio=ratio)).d_s)])
                if i >= 2:  # the first two warm the browser's code paths
                    lat.append(ms)
                page.wait_for_timeout(300)
            b.close()
        print(
            f"browser: Enter after a new budget → new d_s on screen     : {statistics.median(lat):7.1f} ms median of {reps}"
            f"  (min {min(lat):.0f}, max {max(lat):.0f})"
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--browser-reps", type=int, default=15)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("PALS_RUNS_DIR", tempfile.mkdtemp(prefix="bench-app-runs-"))
    os.environ.setdefault("PALS_STUDY_STORAGE", f"sqlite:///{tempfile.mkdtemp()}/none.db")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    server_side(args.reps)
    if not args.no_browser:
        browser(args.browser_reps)


if __name__ == "__main__":
    main()
