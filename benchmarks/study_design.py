"""A small real Optuna design study, end to end through the ``pals-study`` command line.

Embedded MiniLM (22.7M parameters), real GLUE slices, a parameter budget; every trial is a real multi-task
training run. Prints, in one table, each trial's design with its parameter ratio N_total / N_base and FLOP ratio
(from the calculator) next to the dev average it reached and its wall time, then the best design and the report
files (CSV + plotly HTML, small: plotly.js comes from its CDN).

    PALS_GLUE_DIR=/path/to/glue .venv/bin/python benchmarks/study_design.py --trials 6
    # → benchmarks/results/study_design/{trials.csv, leaderboard.csv, history.html, pareto.html, …}
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")


def majority_baseline(tasks: list[str], max_train: int, max_eval: int) -> dict:
    """Predict each task's most frequent training class on the same dev subsets the trials are scored on."""
    from pals_core.data.load import load_tasks, load_tokenizer, tokenizer_path
    from pals_core.data.metrics import main_score, majority_scores

    data = load_tasks(
        tasks, load_tokenizer(tokenizer_path(None)), max_len=64, max_train=max_train or None, max_eval=max_eval or None
    )
    scores = {
        t: main_score(t, majority_scores(t, d.train.labels, {s: e.labels for s, e in d.dev.items()}))
        for t, d in data.items()
    }
    return {"scores": scores, "average": sum(scores.values()) / len(scores)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", default="5")
    p.add_argument("--tasks", default="sst2,mrpc")
    p.add_argument("--budget", default="1.10")
    p.add_argument("--steps", default="40")
    p.add_argument("--eval-every", default="20")
    p.add_argument("--max-train-examples", default="2000")
    p.add_argument("--max-eval-examples", default="128")
    p.add_argument("--batch-size", default="8")
    p.add_argument("--methods", default="pals,low_rank,houlsby,lora,proj_attn_top,shared")
    p.add_argument("--sampler-seed", default="0")
    p.add_argument("--threads", default="2")
    p.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results", "study_design"))
    p.add_argument("--storage", help="default: a fresh SQLite file in a temporary folder")
    args = p.parse_args()
    if not os.environ.get("PALS_GLUE_DIR"):
        print("set PALS_GLUE_DIR to the GLUE TSV folder", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="pals-study-bench-")
    storage = args.storage or f"sqlite:///{os.path.join(work, 'studies.db')}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = [
        EXE,
        "run",
        "design",
        "--trials",
        args.trials,
        "--storage",
        storage,
        "--out",
        os.path.join(work, "runs"),
        "--tasks",
        args.tasks,
        "--budget",
        args.budget,
        "--steps",
        args.steps,
        "--eval-every",
        args.eval_every,
        "--max-train-examples",
        args.max_train_examples,
        "--max-eval-examples",
        args.max_eval_examples,
        "--batch-size",
        args.batch_size,
        "--methods",
        args.methods,
        "--sampler-seed",
        args.sampler_seed,
        "--threads",
        args.threads,
        "--no-checkpoints",
    ]
    print("$ " + " ".join(run), flush=True)
    t0 = time.perf_counter()
    subprocess.run(run, check=True, env=env)
    wall = time.perf_counter() - t0
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = cpu.ru_utime + cpu.ru_stime
    subprocess.run(
        [EXE, "report", "design", "--storage", storage, "--out", args.results],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )

    import optuna

    from studies import report

    study = optuna.load_study(study_name="design", storage=storage)
    df = report.trials_frame(study)
    print(
        f"\nstudy 'design': {len(df)} trials in {wall:.0f} s wall ({wall / 60:.1f} min), {cpu_s / 60:.1f} min CPU · "
        f"tasks {args.tasks} · "
        f"budget {args.budget}× · {args.steps} steps per trial"
    )
    cols = ["trial", "state", "design", "d_s", "ratio", "flops_ratio", report.PARAMS, report.AVERAGE, "wall time s"]
    print(report.format_table(df, cols, max_rows=100))
    board = report.leaderboard(study)
    if not board.empty:
        b = board.iloc[0]
        print(
            f"\nbest: trial {b['trial']} {b['design']}"
            + (f" d_s={b['d_s']}" if "d_s" in b and b["d_s"] is not None and str(b["d_s"]) != "<NA>" else "")
            + f" · dev average {b[report.AVERAGE]:.2f} (0–100) · {b['ratio']:.4f}× the base model's parameters "
            f"· {b['flops_ratio']:.3f}× its FLOPs"
        )
        front = board[board["pareto"]]
        print(
            "Pareto front (dev average vs task-specific parameters): "
            + ", ".join(
                f"{r['design']} ({int(r['d_s']) if str(r['d_s']) != '<NA>' else '—'}): {r[report.AVERAGE]:.2f} "
                f"@ {int(r[report.PARAMS]):,}"
                for _, r in front.iterrows()
            )
        )
    base = majority_baseline(args.tasks.split(","), int(args.max_train_examples), int(args.max_eval_examples))
    print(
        f"\nmajority-class baseline on the same dev slices: dev average {100 * base['average']:.2f} ("
        + ", ".join(f"{t} {100 * v:.2f}" for t, v in base["scores"].items())
        + ")"
    )
    print(f"\nfiles in {os.path.relpath(args.results, ROOT)}:")
    for f in sorted(os.listdir(args.results)):
        print(f"  {f}  {os.path.getsize(os.path.join(args.results, f)):,} bytes")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
