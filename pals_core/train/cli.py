"""``pals-train``: multi-task training of one BERT with task-specific adapters on GLUE (paper Section 4).

    pals-train --method pals --d-s 204 --tasks rte,mrpc,stsb,cola,sst2 --sampling annealed --steps 2000 --out runs/pals
    pals-train --method pals --budget 1.13 --tasks rte,mrpc --out runs/b113     # d_s from the calculator
    pals-train --resume --out runs/pals                                           # continue a stopped/killed run
    accelerate launch --num_processes 4 -m pals_core.train.cli …                  # several GPUs
    pals-train --seeds 0,1,2 --jobs 3 … --out runs/x      # one run per seed + mean/std/95 % interval (orchestrate.py)
    pals-train --method separate --tasks … --out runs/sep  # one fully fine-tuned model per task (separate.py)

Defaults: the embedded MiniLM on the best device present (CPU here), the paper's optimiser settings.
Exit status: 0 finished · 1 training failed (see progress.json) · 2 bad arguments or data (one line on
stderr) · 130 interrupted · 143 stopped by SIGTERM (checkpoint written; --resume continues).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from ..budget.config import AdapterConfig
from .config import TrainConfig

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_STOPPED = 1, 2, 130, 143
_S = argparse.SUPPRESS


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse would print the usage too)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pals-train", description="Multi-task training on GLUE with task-specific adapters "
                "(BERT and PALs, Stickland & Murray 2019). Writes config.json, progress.json, metrics.jsonl, "
                "checkpoints/ and summary.json to --out.", argument_default=_S)
    d = p.add_argument_group("design")
    d.add_argument("--method", help="adapter method: pals (default), shared, pals_unshared, low_rank, houlsby, lora, lhuc, "
                   "proj_attn_top, proj_ffn_top, bert_layer_top, ca_mtl")
    size = d.add_mutually_exclusive_group()
    size.add_argument("--d-s", dest="d_s", type=int, help="adapter size d_s")
    size.add_argument("--budget", type=float, help="parameter budget ratio B (N_total ≤ B·N_base): d_s from the calculator")
    d.add_argument("--location", help="adapted layers: all (default) | top | bottom | i,j,… (0-based)")
    d.add_argument("--heads", type=int, help="adapter attention heads h_s (default 12)")
    d.add_argument("--freeze-trunk", dest="freeze_trunk", action="store_true", help="train only task-specific weights")
    d.add_argument("--per-task-pooler", dest="per_task_pooler", action="store_true", help="one pooler per task")
    d.add_argument("--model", help="local HF BERT folder, or 'tiny' (random tiny BERT); default: embedded MiniLM")
    d.add_argument("--task-embedding-dim", dest="task_embedding_dim", type=int, help="ca_mtl: d_z (default: hidden size)")
    d.add_argument("--frozen-layers", dest="frozen_layers", type=int,
                   help="ca_mtl: freeze the embeddings and layers 0..F-1 (default ⌊L/2⌋; 0 = none)")
    d.add_argument("--cond-adapter-layers", dest="cond_adapter_layers", type=int,
                   help="ca_mtl: top layers with the conditional bottleneck (default 1)")
    g = p.add_argument_group("data")
    g.add_argument("--tasks", help="comma-separated GLUE tasks: cola,sst2,mrpc,stsb,qqp,mnli,qnli,rte")
    g.add_argument("--glue-dir", dest="glue_dir", help="official GLUE TSV folder (default: $PALS_GLUE_DIR)")
    g.add_argument("--hub", dest="hub", action="store_true", help="load GLUE from the Hugging Face hub (nyu-mll/glue)")
    g.add_argument("--max-len", dest="max_len", type=int, help="max tokens per example (default 128)")
    g.add_argument("--max-train-examples", dest="max_train_examples", type=int, help="per-task cap (fixed random subset)")
    g.add_argument("--max-eval-examples", dest="max_eval_examples", type=int, help="per-dev-set cap (fixed random subset)")
    g.add_argument("--cache-dir", dest="cache_dir", help="tokenisation cache (default: $PALS_CACHE_DIR or the datasets cache)")
    t = p.add_argument_group("training")
    t.add_argument("--sampling", help="round_robin | uniform | proportional | sqrt | annealed (default) | alpha_schedule | mt_uncertainty")
    t.add_argument("--alpha-start", dest="alpha_start", type=float, help="alpha_schedule: α in the first epoch (1.0)")
    t.add_argument("--alpha-end", dest="alpha_end", type=float, help="alpha_schedule: α in the last epoch (0.2)")
    t.add_argument("--alpha-shape", dest="alpha_shape", help="alpha_schedule: linear | cosine | exponential | step")
    t.add_argument("--epoch-steps", dest="epoch_steps", type=int, help="steps per sampling epoch (2400)")
    t.add_argument("--steps", type=int, help="training steps (60000)")
    t.add_argument("--batch-size", dest="batch_size", type=int, help="examples per step and process (32)")
    t.add_argument("--lr", type=float, help="peak learning rate (2e-5)")
    t.add_argument("--warmup", type=float, help="warm-up fraction of the steps (0.1)")
    t.add_argument("--weight-decay", dest="weight_decay", type=float, help="AdamW weight decay (0.01)")
    t.add_argument("--grad-clip", dest="grad_clip", type=float, help="max gradient norm (1.0; 0 = off)")
    t.add_argument("--seed", type=int, help="random seed (0)")
    t.add_argument("--device", help="auto (default) | cpu | cuda")
    t.add_argument("--mixed-precision", dest="mixed_precision", help="auto (bf16 on CUDA) | no | bf16 | fp16")
    t.add_argument("--threads", dest="num_threads", type=int, help="torch CPU threads")
    r = p.add_argument_group("run")
    r.add_argument("--out", help="run directory (required)")
    r.add_argument("--eval-every", dest="eval_every", type=int, help="evaluate (and checkpoint) every N steps (1000)")
    r.add_argument("--eval-batch-size", dest="eval_batch_size", type=int, help="evaluation batch size (128)")
    r.add_argument("--save-every", dest="save_every", type=int, help="checkpoint every N steps (default: at evaluations)")
    r.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    r.add_argument("--no-progress", dest="no_progress", action="store_true", help="no progress bar")
    return p


ADAPTER_FIELDS = ("method", "d_s", "location", "heads", "freeze_trunk", "per_task_pooler", "task_embedding_dim",
                  "frozen_layers", "cond_adapter_layers")


def config_from_args(given: dict) -> tuple[TrainConfig, bool]:
    """TrainConfig from the given flags (absent flags: the saved run's values with --resume, else the
    defaults). Returns (config, resume)."""
    from .rundir import RunDir, read_json

    given = dict(given)
    resume = bool(given.pop("resume", False))
    given.pop("no_progress", None)
    if "out" not in given:
        raise UsageError("--out is required (the run directory)")
    if given.pop("hub", False):
        given["glue_source"] = "hub"
    if given.get("grad_clip") == 0:
        given["grad_clip"] = None
    adapter_given = {k: given.pop(k) for k in ADAPTER_FIELDS if k in given}
    run = RunDir(given["out"])
    if resume and run.has_run():
        base = read_json(run.config)
        adapter = {**base["adapter"], **adapter_given}
        cfg = TrainConfig.from_dict({**base, **given, "adapter": adapter})
        return cfg, True
    if "tasks" not in given:
        raise UsageError("--tasks is required (e.g. --tasks rte,mrpc,stsb,cola,sst2)")
    adapter_given.setdefault("method", "pals")
    from ..budget import get_method

    if get_method(adapter_given["method"]).sized and adapter_given.get("d_s") is None and given.get("budget") is None:
        raise UsageError(f"method {adapter_given['method']!r} needs --d-s N or --budget RATIO")
    adapter = AdapterConfig(**adapter_given)
    return TrainConfig(adapter=adapter, **given), resume


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    try:
        from . import orchestrate  # --seeds, --jobs, --method separate: several runs (SPEC section 11)

        orch, argv = orchestrate.split_flags(sys.argv[1:] if argv is None else argv)
        args = vars(parser.parse_args(argv))
        progress = not args.get("no_progress", False)
        if orchestrate.handles(orch, args):
            return orchestrate.run(orch, args, progress)
        cfg, resume = config_from_args(args)
        from .trainer import resolve

        cfg = resolve(cfg)
        if resume and not os.path.isfile(os.path.join(cfg.out, "config.json")):
            print(f"pals-train: nothing to resume in {cfg.out}; starting a new run", file=sys.stderr)
    except (UsageError, ValueError, TypeError) as e:
        print(f"pals-train: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    from .trainer import TrainingStopped, train

    try:
        summary = train(cfg, resume=resume, progress=progress)
    except TrainingStopped as e:
        print(f"pals-train: {e}", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt:
        print(f"pals-train: interrupted; continue with --resume --out {cfg.out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ValueError as e:  # bad data (missing / malformed GLUE files), an existing run, …
        print(f"pals-train: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    if int(os.environ.get("RANK", "0")) == 0:  # one table, also under accelerate launch
        print(format_summary(summary))
    return 0


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def format_summary(summary: dict) -> str:
    """The best checkpoint's dev scores (×100) and the parameter cost, as a small table."""
    from ..data.metrics import main_score

    lines = [f"best step {summary['best_step']} of {summary['steps']}  ·  dev average {100 * summary['average']:.2f}  ·  "
             f"{summary['wall_time_s']:.0f} s"]
    for task, scores in summary["scores"].items():
        metrics = "  ".join(f"{k} {100 * v:.2f}" for k, v in scores.items())
        lines.append(f"  {task:6s} {100 * main_score(task, scores):6.2f}   ({metrics})")
    p = summary["params"]
    lines.append(f"parameters: {p['total']:,} total ({p['ratio']:.4f}× base), {p['task_specific']:,} task-specific, "
                 f"{p['trained']:,} trained")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
