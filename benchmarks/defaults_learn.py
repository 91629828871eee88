"""Measured, not asserted: the defaults learn. Every method's recommended design, trained with nothing but the
defaults, on the example's tasks, scored against each task's baseline.

For each method the calculator knows (sized and sizeless), the design the page and ``pals-budget`` recommend for it
on ``examples/tasks/tasks.yaml`` (its model: the embedded MiniLM) at the README's budget, 1.13× — the method's entry
in ``pals-budget --json``'s ranking; a method with no design within 1.13× (its shared modules or its extra layer
alone cost more) takes the smallest budget, in steps of 0.01, at which it has one, and the table says so — is
trained as the README's own-tasks command trains it:

    pals-train --tasks-file examples/tasks/tasks.yaml --method M [--location L] [--budget B] --steps 600 \\
        --threads 1 --out <runs>/<method>

nothing else: no --lr (the method's own, ``Method.recipe``), the trainer's batch, max length, sampling and
evaluation. Each task's dev score (its main metric, the run's summary.json) is set against the task's baseline
(``pals-tasks --json``: the majority class, the training mean, every word "O"). Runs go two at a time (``--jobs``),
one thread each, on CPU; ``benchmarks/results/defaults_learn.json`` is rewritten (atomically) as each run finishes
(with the device its summary.json says measured it, and how many ran at a time), and
running the command again skips the finished methods and resumes a stopped run from its checkpoint.

    python benchmarks/defaults_learn.py                    # every method (hours on 2 cores)
    python benchmarks/defaults_learn.py --methods lora,ia3 # some
    python benchmarks/defaults_learn.py --table            # the BENCHMARKS.md table from the results file
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS_FILE = ROOT / "examples" / "tasks" / "tasks.yaml"
RESULTS = ROOT / "benchmarks" / "results" / "defaults_learn.json"
BUDGET = 1.13  # the README's own-tasks commands
STEPS = 600  # the README's own-tasks command: pals-train --tasks-file examples/tasks/tasks.yaml ... --steps 600
PY = sys.executable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from pals_core.atomic import atomic_write_text  # noqa: E402
from pals_core.cli.budget import run as budget_run  # noqa: E402
from pals_core.footprint.here import cpu_name  # noqa: E402
from pals_core.methods.registry import METHODS, get_method  # noqa: E402
from pals_core.pricing.recipe import rate_text  # noqa: E402


def recommended(method: str) -> dict:
    """The method's recommended design (``pals-budget --json``'s ranking entry) at 1.13×, or at the smallest budget
    (steps of 0.01) at which the method has a design that fits."""
    budget = BUDGET
    while budget < 3:
        answer = json.loads(budget_run(["--tasks-file", str(TASKS_FILE), "--budget", f"{budget:.2f}", "--json"]))
        entry = next((r for r in answer["recommendation"]["ranking"] if r["method"] == method), None)
        if entry is not None:
            return {**entry, "budget": round(budget, 2), "model": answer["model"]["name"]}
        budget += 0.01
    raise ValueError(f"{method}: no design fits below 3×")


def baselines() -> dict:
    """Each task's main metric and its baseline score on the dev rows a run scores (``pals-tasks --json``)."""
    out = subprocess.run(
        [PY, "-m", "pals_core.cli.tasks", str(TASKS_FILE), "--json"], capture_output=True, text=True, check=True
    )
    return {
        t["name"]: {"metric": t["majority"]["metric"], "baseline": t["majority"]["main"]}
        for t in json.loads(out.stdout)["tasks"]
    }


def command(design: dict, out: Path) -> list[str]:
    m = get_method(design["method"])
    argv = [PY, "-m", "pals_core.cli.train", "--tasks-file", str(TASKS_FILE), "--method", m.name]
    if m.within:
        argv += ["--location", design["location"]]
    if m.sized:
        argv += ["--budget", f"{design['budget']:.2f}"]
    argv += ["--steps", str(STEPS), "--threads", "1", "--no-progress", "--out", str(out)]
    if (out / "config.json").exists():
        argv.append("--resume")
    return argv


def load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": {}}


def save(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULTS, json.dumps(results, indent=2) + "\n")


def train_one(method: str, runs: Path, base: dict, results: dict, lock, jobs: int) -> None:
    design = recommended(method)
    out = runs / method
    argv = command(design, out)
    start = time.time()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with open(runs / f"{method}.log", "a") as log:
        code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT).returncode
    if code != 0:
        print(f"{method}: pals-train exited {code} (log: {runs / f'{method}.log'})", flush=True)
        return
    summary = json.loads((out / "summary.json").read_text())
    config = summary["config"]
    tasks = {}
    for t, b in base.items():
        score = summary["scores"][t][b["metric"]]
        tasks[t] = {"metric": b["metric"], "score": score, "baseline": b["baseline"], "left": score > b["baseline"]}
    with lock:
        results["runs"][method] = {
            "design": design["design"],
            "location": design["location"],
            "d_s": config["adapter"]["d_s"],
            "recommended_d_s": design["d_s"],
            "budget": design["budget"],
            "lr": config["lr"],
            "lr_source": config.get("lr_source"),
            "warmup": config["warmup"],
            "weight_decay": config["weight_decay"],
            "trunk": design["trunk"],
            "steps": config["steps"],
            "batch_size": config["batch_size"],
            "max_len": config["max_len"],
            "tasks": tasks,
            "average": summary["average"],
            "command": " ".join(["pals-train", *argv[3:]]).replace(str(ROOT) + "/", ""),
            "wall_s": round(time.time() - start),
            "train_step_s": (summary.get("machine") or {}).get("measured", {}).get("step_s"),
            # what measured it, as the run's summary.json names it, and how many runs shared the machine
            "device": (summary.get("machine") or {}).get("measured", {}).get("device"),
            "runs_at_a_time": jobs,
        }
        save(results)
    print(f"{method}: done ({round(time.time() - start)} s)", flush=True)


def table(results: dict) -> str:
    runs = results["runs"]
    tasks = list(next(iter(runs.values()))["tasks"]) if runs else []
    head = "| method (design, d_s, lr) | " + " | ".join(
        f"{t} ({next(iter(runs.values()))['tasks'][t]['metric']})" for t in tasks
    )
    lines = [head + " | every task off its baseline |", "|---|" + "---|" * len(tasks) + "---|"]
    base = next(iter(runs.values()))["tasks"] if runs else {}
    lines.append("| *baseline* | " + " | ".join(f"*{100 * base[t]['baseline']:.1f}*" for t in tasks) + " | |")
    for name in METHODS:
        r = runs.get(name)
        if r is None:
            lines.append(f"| {name}: not run yet | " + " | ".join("" for _ in tasks) + " | |")
            continue
        over = "" if r["budget"] == BUDGET else f", at {r['budget']:.2f}× (nothing within 1.13×)"
        size = "" if r["d_s"] is None else f", d_s {r['d_s']}"
        cells = [f"{100 * r['tasks'][t]['score']:.1f}" + ("" if r["tasks"][t]["left"] else " ✗") for t in tasks]
        stuck = [t for t in tasks if not r["tasks"][t]["left"]]
        lines.append(
            f"| {r['design']}{size}, lr {rate_text(r['lr'])}{over} | "
            + " | ".join(cells)
            + f" | {'yes' if not stuck else 'no: ' + ', '.join(stuck)} |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", help="comma-separated methods (default: every method)")
    p.add_argument("--runs", default=str(ROOT / "runs" / "defaults_learn"), help="where the run folders go")
    p.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    p.add_argument("--table", action="store_true", help="print the table of the results file and exit")
    args = p.parse_args()
    results = load()
    if args.table:
        print(table(results))
        return 0
    methods = [get_method(m.strip()).name for m in args.methods.split(",")] if args.methods else list(METHODS)
    todo = [m for m in methods if m not in results["runs"]]
    runs = Path(args.runs)
    runs.mkdir(parents=True, exist_ok=True)
    base = baselines()
    results.update(
        device=f"CPU: {cpu_name()}, 1 thread per run (each run's own: runs.<method>.device, runs_at_a_time)",
        model="all-MiniLM-L6-v2 (the embedded model; the example tasks file's model)",
        tasks_file="examples/tasks/tasks.yaml",
        steps=STEPS,
        budget=BUDGET,
    )
    import threading

    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for f in [pool.submit(train_one, m, runs, base, results, lock, args.jobs) for m in todo]:
            f.result()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
