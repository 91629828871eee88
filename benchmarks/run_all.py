"""Run every benchmark script in turn (each prints its own side-by-side ratios).

.venv/bin/python benchmarks/run_all.py            # all
.venv/bin/python benchmarks/run_all.py budget app # those whose file name contains a word
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
# Quick ones first; the GLUE accuracy runs (glue_cpu_run.py, study_design.py) take tens of minutes and run only by name.
DEFAULT = ["bench_budget.py", "bench_app.py", "bench_modules.py", "bench_trainer.py", "bench_ca_mtl.py"]


def main(words: list[str]) -> int:
    scripts = sorted(p.name for p in HERE.glob("*.py") if p.name != "run_all.py")
    chosen = [s for s in scripts if any(w in s for w in words)] if words else DEFAULT
    failed = 0
    for name in chosen:
        print(f"\n=== {name}", flush=True)
        failed += subprocess.call([sys.executable, str(HERE / name)]) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
