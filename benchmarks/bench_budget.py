"""Calculator speed, every encoder family included: `pals-budget` as a whole process beside the interpreter's
own start-up, and the full design-space sweep, for BERT-base and for every encoder family.

    .venv/bin/python benchmarks/bench_budget.py [--rounds 21]

Target ("instant"): `pals-budget --tasks 8 --budget 1.13` (every column, every method) within
2× `python -c pass`, the interpreter's start-up, measured side by side in this run: the two commands alternate,
round after round, so the machine's load weighs on both alike; the ratio of their medians is the figure to read
(wall time; the CPU time of each process, less sensitive to other processes, beside it). The sweep (all methods ×
locations × d_s 1..1024 × tasks 1..32): ≥ 10⁵ configurations per second.

The processes run with bytecode written and read (``PYTHONDONTWRITEBYTECODE`` is dropped for them, one warm-up run
each first), as an installed package runs: a stale ``.pyc`` recompiled at every start-up is not the calculator's time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pals_core.budget.sweep import sweep  # noqa: E402
from pals_core.families.shapes import PRESETS  # noqa: E402

TARGET = 2.0  # × python -c pass
CONSOLE = "import sys; from pals_core.cli.budget import console; sys.exit(console())"
STDLIB = "import argparse, dataclasses, json, locale, textwrap, typing"  # what the CLI cannot start without


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=_env())
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def side_by_side(commands: dict[str, list[str]], rounds: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each command, the commands alternating round after round (one warm-up each)."""
    for argv in commands.values():
        run_once(argv)
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for _ in range(rounds):
        for label, argv in commands.items():
            times[label].append(run_once(argv))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    exe = shutil.which("pals-budget", path=os.path.dirname(sys.executable)) or "pals-budget"
    question = ["--tasks", "8", "--budget", "1.13"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.rounds} alternating rounds")
    got = side_by_side(
        {
            "python -c pass": [sys.executable, "-c", "pass"],
            "pals-budget --tasks 8 --budget 1.13": [exe, *question],
            "console() entry, same question": [sys.executable, "-c", CONSOLE, *question],
            "the stdlib modules it needs, alone": [sys.executable, "-c", STDLIB],
        },
        args.rounds,
    )
    floor_wall, floor_cpu = got["python -c pass"]
    for label, (wall, cpu) in got.items():
        verdict = (
            ""
            if label == "python -c pass"
            else f"  {wall / floor_wall:.2f}× the interpreter"
            + (
                ""
                if label.startswith("the stdlib")
                else f" (target ≤ {TARGET:g}×: {'met' if wall <= TARGET * floor_wall else 'NOT met'})"
            )
        )
        print(f"{label:36s}: {wall * 1000:6.1f} ms wall, {cpu * 1000:6.1f} ms CPU (medians){verdict}")

    model = PRESETS["bert-base-uncased"]
    t = time.perf_counter()
    n = sum(1 for _ in sweep(model))
    dt = time.perf_counter() - t
    print(
        f"sweep: {n:,} configurations (all methods × locations × d_s 1..1024 (÷h_s for attention) × T 1..32) "
        f"in {dt:.2f} s → {n / dt:,.0f} configs/s (target ≥ 100,000)"
    )
    t = time.perf_counter()
    n_all = sum(1 for _ in sweep(model, heads=1))
    dt_all = time.perf_counter() - t
    print(
        f"sweep with h_s = 1 (every d_s valid): {n_all:,} configurations in {dt_all:.2f} s → {n_all / dt_all:,.0f} configs/s"
    )

    # every encoder family: its largest preset as a whole process, beside the interpreter
    names = (
        "xlm-roberta-large",
        "deberta-v3-large",
        "ModernBERT-large",
        "electra-small-discriminator",
        "distilbert-base-uncased",
        "mpnet-base",
    )
    fam = side_by_side(
        {
            "python -c pass": [sys.executable, "-c", "pass"],
            **{name: [exe, "--model", name, *question] for name in names},
        },
        max(5, args.rounds // 3),
    )
    floor_wall = fam["python -c pass"][0]
    for name in names:
        wall, cpu = fam[name]
        print(
            f"pals-budget --model {name:<28}: {wall * 1000:6.1f} ms wall ({wall / floor_wall:.2f}×), "
            f"{cpu * 1000:6.1f} ms CPU"
        )
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
    print(
        f"sweep, every family: {total_n:,} configurations in {total_dt:.2f} s → {total_n / total_dt:,.0f} configs/s "
        f"(target ≥ 100,000)"
    )


if __name__ == "__main__":
    main()
