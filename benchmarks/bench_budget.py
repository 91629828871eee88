"""Calculator speed (issue 2, issue 11): `pals-budget` as a whole process, and the full design-space sweep, for
BERT-base and for every encoder family.

    .venv/bin/python benchmarks/bench_budget.py

Targets: `pals-budget --tasks 8 --budget 1.13` under 0.3 s wall time; the sweep (all methods × locations ×
d_s 1..1024 × tasks 1..32) at ≥ 10⁵ configurations per second. Both are measured beside a reference in the
same run as a bare `python -c pass` (the interpreter floor), since these machines are noisy.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pals_core.budget import PRESETS  # noqa: E402
from pals_core.budget.sweep import sweep  # noqa: E402


def wall(argv: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    exe = shutil.which("pals-budget", path=os.path.dirname(sys.executable)) or "pals-budget"
    floor = wall([sys.executable, "-c", "pass"], 15)
    cli = wall([exe, "--tasks", "8", "--budget", "1.13"], 15)
    print(f"pals-budget --tasks 8 --budget 1.13 : {cli * 1000:7.1f} ms median of 15 (target < 300 ms)")
    print(f"python -c pass (interpreter floor)  : {floor * 1000:7.1f} ms   → calculator adds {(cli - floor) * 1000:.1f} ms, "
          f"{cli / floor:.2f}× the floor")

    model = PRESETS["bert-base-uncased"]
    t = time.perf_counter()
    n = sum(1 for _ in sweep(model))
    dt = time.perf_counter() - t
    print(f"sweep: {n:,} configurations (all methods × locations × d_s 1..1024 (÷h_s for attention) × T 1..32) "
          f"in {dt:.2f} s → {n / dt:,.0f} configs/s (target ≥ 100,000)")
    t = time.perf_counter()
    n_all = sum(1 for _ in sweep(model, heads=1))
    dt_all = time.perf_counter() - t
    print(f"sweep with h_s = 1 (every d_s valid): {n_all:,} configurations in {dt_all:.2f} s → {n_all / dt_all:,.0f} configs/s")

    # every encoder family (issue 11): its largest preset as a whole process, and the sweep over one preset of each
    for name in ("xlm-roberta-large", "deberta-v3-large", "ModernBERT-large", "electra-small-discriminator",
                 "distilbert-base-uncased"):
        t_cli = wall([exe, "--model", name, "--tasks", "8", "--budget", "1.13"], 7)
        print(f"pals-budget --model {name:<28}: {t_cli * 1000:7.1f} ms median of 7 (target < 300 ms)")
    by_family = {}
    for name, m in PRESETS.items():
        by_family.setdefault(m.family, name)
    total_n, total_dt = 0, 0.0
    for family, name in by_family.items():
        t = time.perf_counter()
        n_f = sum(1 for _ in sweep(PRESETS[name]))
        dt_f = time.perf_counter() - t
        total_n, total_dt = total_n + n_f, total_dt + dt_f
        print(f"sweep {family:<11} ({name}): {n_f:,} configurations in {dt_f:.2f} s → {n_f / dt_f:,.0f} configs/s")
    print(f"sweep, every family: {total_n:,} configurations in {total_dt:.2f} s → {total_n / total_dt:,.0f} configs/s "
          f"(target ≥ 100,000)")


if __name__ == "__main__":
    main()
