"""PALs vs the `shared` model on real GLUE, on CPU: the five tasks with training data here, MiniLM.

Two runs with identical settings — `pals` (d_s from the calculator for a 1.13× budget, the paper's
ratio) and `shared` (only the task heads are task-specific) — then one table: each task's dev
score of the best checkpoint next to the majority-class baseline (most frequent training label;
the training mean for STS-B), the paper's dev average (Table 3: accuracy, CoLA MCC, STS-B Pearson)
and the parameter cost.

Defaults are sized for about 30 minutes per run on 2 CPU cores (measured: 0.65 s per PALs step of
16 sequences and 30 s per evaluation of the five full dev sets, 2 threads, load average ~1.5):
2400 steps of 16, annealed sampling over 5 epochs of 480 steps (α 1 → 0.2, the paper's schedule
compressed from 25 epochs of 2400), lr 5e-5 (short runs need more than the paper's 2e-5) with 10 %
warm-up, evaluation on the full dev sets every 600 steps. Both runs resume if interrupted (run the
same command again); each writes its run directory under --out, and the table goes to
<out>/results.md and results.json.

    PALS_GLUE_DIR=/path/to/glue python benchmarks/glue_cpu_run.py --out runs/glue-cpu
    PALS_GLUE_DIR=/path/to/glue python benchmarks/glue_cpu_run.py --out /tmp/smoke --steps 20 --eval-every 10 --max-eval-examples 64
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")


from pals_core.atomic import atomic_write_text  # noqa: E402
from pals_core.data.load import load_tasks, load_tokenizer, tokenizer_path  # noqa: E402
from pals_core.data.metrics import dev_average, main_score, majority_scores  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.tasks.glue_tasks import glue_record  # noqa: E402
from pals_core.train.config import TrainConfig  # noqa: E402
from pals_core.train.trainer import train  # noqa: E402

TASKS = ["rte", "mrpc", "stsb", "cola", "sst2"]


def majority(tasks: list[str], glue_dir: str | None, max_eval: int | None) -> dict[str, dict[str, float]]:
    data = load_tasks(tasks, load_tokenizer(tokenizer_path(None)), glue_dir=glue_dir, max_eval=max_eval)
    return {t: majority_scores(t, d.train.labels, {s: e.labels for s, e in d.dev.items()}) for t, d in data.items()}


def table(tasks: list[str], base: dict, summaries: dict[str, dict]) -> str:
    names = list(summaries)
    head = "| task | metric | majority | " + " | ".join(names) + " |"
    lines = [head, "|" + "---|" * (3 + len(names))]
    for t in tasks:
        for m in glue_record(t).reported_metrics():
            cells = [f"{100 * s['scores'][t][m]:.2f}" for s in summaries.values()]
            star = " *" if m == glue_record(t).main_metric else ""
            lines.append(f"| {t} | {m}{star} | {100 * base[t][m]:.2f} | " + " | ".join(cells) + " |")
    avg = [f"**{100 * s['average']:.2f}**" for s in summaries.values()]
    lines.append(f"| **average** | Table 3 | {100 * dev_average(base):.2f} | " + " | ".join(avg) + " |")
    beats = [
        "yes"
        if all(main_score(t, s["scores"][t]) > main_score(t, base[t]) for t in tasks)
        else "no: " + ", ".join(t for t in tasks if main_score(t, s["scores"][t]) <= main_score(t, base[t]))
        for s in summaries.values()
    ]
    lines.append("| beats majority on every task | | | " + " | ".join(beats) + " |")
    lines.append(
        "| d_s | | | " + " | ".join(str(s["config"]["adapter"]["d_s"] or "—") for s in summaries.values()) + " |"
    )
    lines.append(
        "| task-specific params | | | "
        + " | ".join(f"{s['params']['task_specific']:,}" for s in summaries.values())
        + " |"
    )
    lines.append(
        "| total / base | | | " + " | ".join(f"{s['params']['ratio']:.4f}×" for s in summaries.values()) + " |"
    )
    lines.append(
        "| best step / steps | | | " + " | ".join(f"{s['best_step']} / {s['steps']}" for s in summaries.values()) + " |"
    )
    lines.append(
        "| wall time | | | " + " | ".join(f"{s['wall_time_s'] / 60:.1f} min" for s in summaries.values()) + " |"
    )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/glue-cpu")
    p.add_argument("--glue-dir", default=None)
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--budget", type=float, default=1.13, help="PALs budget ratio (d_s from the calculator)")
    p.add_argument("--steps", type=int, default=2400)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--epoch-steps", type=int, default=480)
    p.add_argument("--sampling", default="annealed")
    p.add_argument("--eval-every", type=int, default=600)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--max-eval-examples", type=int, default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--methods", default="pals,shared")
    args = p.parse_args()
    tasks = args.tasks.split(",")
    summaries = {}
    for method in args.methods.split(","):
        adapter = AdapterConfig(method=method)
        cfg = TrainConfig(
            tasks=tasks,
            adapter=adapter,
            model=None,
            glue_dir=args.glue_dir or os.environ.get("PALS_GLUE_DIR"),
            out=os.path.join(args.out, method),
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            max_len=args.max_len,
            sampling=args.sampling,
            epoch_steps=args.epoch_steps,
            eval_every=args.eval_every,
            max_eval_examples=args.max_eval_examples,
            seed=args.seed,
            device="cpu",
            num_threads=args.threads,
            budget=args.budget if method != "shared" else None,
        )
        print(f"== {method}: {cfg.out}", file=sys.stderr, flush=True)
        summaries[method] = train(cfg, resume=True)
    base = majority(tasks, args.glue_dir, args.max_eval_examples)
    text = table(tasks, base, summaries)
    cfg0 = next(iter(summaries.values()))["config"]
    header = (
        f"MiniLM-L6-H384 · tasks {', '.join(tasks)} · {cfg0['steps']} steps × batch {cfg0['batch_size']} · "
        f"{cfg0['sampling']} sampling (epoch {cfg0['epoch_steps']} steps) · lr {cfg0['lr']:g} · max_len {cfg0['max_len']} · "
        f"seed {cfg0['seed']} · scores ×100 on the full dev sets, best checkpoint; * = enters the average"
    )
    print(header)
    print(text)
    atomic_write_text(os.path.join(args.out, "results.md"), header + "\n\n" + text + "\n")
    atomic_write_text(
        os.path.join(args.out, "results.json"),
        json.dumps({"majority": base, "runs": summaries}, indent=2, default=float) + "\n",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
