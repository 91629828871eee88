"""CA-MTL beside PALs at a matched number of parameters (BENCHMARKS.md, "CA-MTL vs PALs").

Three runs of ``pals-train``'s trainer on the embedded MiniLM and slices of the real GLUE files, same
tasks, steps, seed, batch and learning rate:

  pals             PALs in every layer (the released Bert-n-Pals form: GELU, attention dropout 0.1), full
                   fine-tuning, annealed sampling, d_s (a multiple of h_s = 12) chosen by the calculator so that
                   its total parameters come closest to ca_mtl's (PALs train everything, so trained parameters
                   cannot be matched to a model that freezes part of itself)
  ca_mtl           CA-MTL as its authors released it (the project's defaults: conditional attention in every
                   layer, gain-only conditional LayerNorm in the top half, the re-initialised adapter layer with
                   the linear bottleneck d_s = d/3, d_z = d, embeddings + layers 0..⌊L/2⌋−2 frozen) trained with
                   the released MT-Uncertainty sampler (one mixed batch per step)
  ca_mtl_annealed  the same model with the annealed sampler, to separate the sampler's effect

Every parameter figure comes from the calculator (``pals_core.budget``) and is checked against the
built model (the trainer's ``params``). Prints one table with the ratios side by side.

    PALS_GLUE_DIR=/path/to/glue .venv/bin/python benchmarks/bench_ca_mtl.py            # ≈ 10 min CPU
    .venv/bin/python benchmarks/bench_ca_mtl.py --steps 40 --max-eval 100             # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pals_core.budget.costs import design  # noqa: E402
from pals_core.budget.solver import at_size  # noqa: E402
from pals_core.budget.tasks import Task  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.tasks.glue_tasks import GLUE_TASKS  # noqa: E402


def trained(model, tasks, cfg: AdapterConfig) -> int:
    return at_size(design(model, tasks, cfg), cfg.d_s).params_trained


def total(model, tasks, cfg: AdapterConfig) -> int:
    return at_size(design(model, tasks, cfg), cfg.d_s).params_total


def matched_pals(model, tasks, target: int, heads: int = 12) -> AdapterConfig:
    """PALs (all layers) at the multiple of h_s whose total parameters are closest to ``target``."""
    best = None
    for d_s in range(heads, 4 * model.hidden + 1, heads):
        cfg = AdapterConfig(method="pals", d_s=d_s, location="all", heads=heads)
        gap = abs(total(model, tasks, cfg) - target)
        if best is None or gap < best[0]:
            best = (gap, cfg)
    return best[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="sst2,mrpc,stsb")
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-len", type=int, default=64)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--max-train", type=int, default=2000, help="training examples per task (fixed random subset)")
    p.add_argument("--max-eval", type=int, default=400, help="dev examples per task (fixed random subset)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--glue-dir", default=os.environ.get("PALS_GLUE_DIR"))
    p.add_argument("--out", default=None, help="run folders and results.json (default: a temporary folder)")
    args = p.parse_args(argv)
    if not args.glue_dir:
        print("bench_ca_mtl: error: give --glue-dir or set PALS_GLUE_DIR", file=sys.stderr)
        return 2

    import torch

    from pals_core.base_model import model_shape
    from pals_core.train.config import TrainConfig
    from pals_core.train.trainer import train

    torch.set_num_threads(args.threads)
    names = [t for t in args.tasks.split(",") if t]
    tasks = [Task(t, GLUE_TASKS[t].num_labels) for t in names]
    shape = model_shape(None)  # the embedded MiniLM
    d = shape.hidden
    ca = AdapterConfig(method="ca_mtl", d_s=d // 3)
    designs = {
        "pals": (matched_pals(shape, tasks, total(shape, tasks, ca)), "annealed"),
        "ca_mtl": (ca, "mt_uncertainty"),
        "ca_mtl_annealed": (ca, "annealed"),
    }
    out = args.out or tempfile.mkdtemp(prefix="bench_ca_mtl_")
    results = {}
    for label, (cfg, sampling) in designs.items():
        tc = TrainConfig(
            tasks=names,
            adapter=cfg,
            model=None,
            glue_dir=args.glue_dir,
            out=os.path.join(out, label),
            steps=args.steps,
            batch_size=args.batch_size,
            max_len=args.max_len,
            lr=args.lr,
            eval_every=args.steps,
            max_train_examples=args.max_train,
            max_eval_examples=args.max_eval,
            seed=args.seed,
            num_threads=args.threads,
            sampling=sampling,
        )
        cpu0, wall0 = time.process_time(), time.perf_counter()
        summary = train(tc, progress=False)
        cost = at_size(design(shape, tasks, cfg), cfg.d_s)
        assert summary["params"]["trained"] == cost.params_trained, (label, summary["params"], cost.params_trained)
        assert summary["params"]["total"] == cost.params_total
        results[label] = {
            "config": cfg.as_dict(),
            "sampling": sampling,
            "params_total": cost.params_total,
            "params_trained": cost.params_trained,
            "flops_ratio": cost.flops_per_seq / cost.flops_base_per_seq,
            "scores": summary["scores"],
            "average": summary["average"],
            "train_time_s": summary["train_time_s"],
            "eval_time_s": summary["eval_time_s"],
            "wall_s": time.perf_counter() - wall0,
            "cpu_s": time.process_time() - cpu0,
            "task_steps": summary["task_steps"],
        }
        print(
            f"[{label}] done: dev average {100 * summary['average']:.2f}, {results[label]['wall_s']:.0f} s wall",
            flush=True,
        )

    from pals_core.data.metrics import main_score

    ref = results["pals"]
    print(
        f"\nMiniLM (d = {d}, L = {shape.layers}) · tasks {', '.join(names)} · {args.steps} steps × batch "
        f"{args.batch_size}, max_len {args.max_len}, lr {args.lr:g}, seed {args.seed} · "
        f"≤ {args.max_train} train / {args.max_eval} dev examples per task"
    )
    head = (
        f"{'run':<15} {'d_s':>4} {'total':>11} {'trained':>11} {'trained×':>8} {'FLOPs×':>7} "
        + " ".join(f"{t:>6}" for t in names)
        + f" {'avg':>6} {'Δavg':>6} {'train s':>8} {'time×':>6} {'CPU s':>7}"
    )
    print(head)
    print("-" * len(head))
    for label, r in results.items():
        scores = " ".join(f"{100 * main_score(t, r['scores'][t]):6.2f}" for t in names)
        print(
            f"{label:<15} {r['config']['d_s']:>4} {r['params_total']:>11,} {r['params_trained']:>11,} "
            f"{r['params_trained'] / ref['params_trained']:>8.3f} {r['flops_ratio']:>7.3f} {scores} "
            f"{100 * r['average']:6.2f} {100 * (r['average'] - ref['average']):+6.2f} {r['train_time_s']:>8.1f} "
            f"{r['train_time_s'] / ref['train_time_s']:>6.2f} {r['cpu_s']:>7.0f}"
        )
    print(
        "trained× and time× are relative to pals; FLOPs× is the forward FLOPs of one task's path over the plain "
        "model's (calculator); scores ×100 (CoLA MCC, STS-B Pearson, else accuracy)"
    )
    path = os.path.join(out, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=2)
    os.replace(path + ".tmp", path)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
