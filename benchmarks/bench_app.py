"""How fast the explorer page redraws (streamlit.testing AppTest, in-process, no browser).

Measures side by side, in one run:
- the first draw of the page (imports done before timing; calculator caches empty),
- a redraw after a new budget (a question the cache has not seen: every calculator call runs),
- a redraw of a question already seen (st.cache_data hits),
- the calculator work alone for one new question (explorer.calc: table, curves, scaling),
and prints the ratios. Usage: .venv/bin/python benchmarks/bench_app.py [--reps N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    os.environ.setdefault("PALS_RUNS_DIR", tempfile.mkdtemp(prefix="bench-app-runs-"))
    os.environ.setdefault("PALS_STUDY_STORAGE", f"sqlite:///{tempfile.mkdtemp()}/none.db")
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from streamlit.testing.v1 import AppTest

    from explorer import calc
    from explorer.inputs import RawInputs, parse_inputs
    import explorer.page  # noqa: F401  (imports outside the timings)

    t = time.perf_counter()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    first = time.perf_counter() - t
    assert not at.exception, at.exception

    new, seen, calc_only = [], [], []
    for i in range(args.reps):
        ratio = f"{1.05 + 0.01 * (i + 1):.2f}"
        box = at.sidebar.text_input(key="budget_ratio")
        t = time.perf_counter()
        box.set_value(ratio).run()
        new.append(time.perf_counter() - t)
        t = time.perf_counter()
        at.run()
        seen.append(time.perf_counter() - t)
        inp = parse_inputs(RawInputs(budget_value=f"{1.2 + 0.01 * i:.2f}"))
        t = time.perf_counter()
        costs = calc.table(inp)
        calc.curves(inp, costs)
        calc.scaling(inp, costs)
        calc_only.append(time.perf_counter() - t)
    med = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    print(f"first draw of the page                 : {first * 1000:8.1f} ms")
    print(f"redraw, new budget (cache miss)        : {med(new):8.1f} ms median of {args.reps}")
    print(f"redraw, same question (cache hit)      : {med(seen):8.1f} ms median of {args.reps}  "
          f"→ cache makes a redraw {med(new) / med(seen):.1f}× faster")
    print(f"calculator work for one new question   : {med(calc_only):8.1f} ms  ({med(calc_only) / med(new):.0%} of a cache-miss redraw)")


if __name__ == "__main__":
    main()
