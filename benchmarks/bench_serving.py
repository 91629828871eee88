"""Serving speed: one trunk answering many tasks, measured side by side.

    .venv/bin/python benchmarks/bench_serving.py                       # MiniLM and a BERT-base shape, 5 and 8 tasks
    .venv/bin/python benchmarks/bench_serving.py --shapes minilm --tasks 5 --reps 3   # quicker

For each model shape and task count T, on one design (LoRA at the top half, d_s 8, trunk frozen: a design that
peft expresses, whose lower half every task shares), with random weights of the shape (speed does not depend on
the values):

1. ``predict_all`` (the trunk's shared layers once, the rest once per task) against T separate ``model(task=…)``
   passes — the separate-models deployment — beside the speed-up the calculator's FLOPs predict,
   T · flops_per_seq / flops_all_tasks_per_seq. Goal: the measured speed-up within 10 % of the prediction.
2. A mixed batch (B rows, row i of task i mod T: ``forward_mixed``) against grouping the rows by task and running
   each group through ``model(task=…)`` (what a service without mixed batches does).
3. torch against onnxruntime on the same ``predict_all`` graph (``pals-export --format onnx``'s graph).
4. The mixed batch against peft's own mixed-batch inference (``adapter_names=[…]``) on the same LoRA design
   (every task: C = 2 labels, since peft's mixed batch needs one output width). Goal: not slower than peft.

``--tagging K`` (default 1) makes the first K of the T tasks tagging tasks (kind: tokens, C = 9: CoNLL-2003's BIO
tags): a head on every token, (B, n, 9) logits, in every comparison but peft's (whose mixed batch takes one head
class); the others are sentence tasks of 2 or 3 classes. ``--tagging 0``: sentence tasks only.

Clock: the process's CPU time with one thread for torch and onnxruntime alike; variants timed round-robin
(``bench_modules.round_robin``), a ratio is the median over rounds of the per-round ratio, so slow drifts of a
shared machine cancel. ``--json`` writes the figures (benchmarks/results/serving.json is the committed one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from bench_modules import inputs, round_robin  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from pals_core.budget.table import rows  # noqa: E402
from pals_core.budget.tasks import Task  # noqa: E402
from pals_core.families.shapes import from_hf_config  # noqa: E402
from pals_core.model import MultiTaskModel, default_checkpoint  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402

BERT_BASE = {
    "model_type": "bert",
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}


def shapes() -> dict[str, dict]:
    with open(os.path.join(default_checkpoint(), "config.json"), encoding="utf-8") as f:
        minilm = json.load(f)
    return {"minilm": minilm, "bert-base": BERT_BASE}


def design(d_s: int) -> AdapterConfig:
    return AdapterConfig(method="lora", d_s=d_s, location="top", freeze_trunk=True)


def build(config: dict, cfg: AdapterConfig, tasks: dict[str, int], per_word=()) -> MultiTaskModel:
    torch.manual_seed(0)
    model = MultiTaskModel.from_base_config(config, cfg, tasks=tasks, per_word=per_word).eval()
    with torch.no_grad():  # LoRA's B starts at zero: give every adapter weights, as a trained one has
        for name, p in model.named_parameters():
            if "lora" in name.lower():
                p.normal_(0, 0.02)
    return model


def calculator_speedup(config: dict, cfg: AdapterConfig, tasks, seq_len: int) -> float:
    shape = from_hf_config(config, name="bench")
    [row] = rows(
        shape,
        tasks,
        d_s=cfg.d_s,
        methods=[cfg.method],
        location=cfg.location,
        seq_len=seq_len,
        freeze_trunk=cfg.freeze_trunk,
    )
    return len(tasks) * row.flops_per_seq / row.flops_all_tasks_per_seq


def no_grad(fn):
    def run():
        with torch.no_grad():
            fn()

    return run


def bench_shared(model, batch, names, args) -> dict:
    t = round_robin(
        {
            "together": no_grad(lambda: model.predict_all(**batch)),
            "separately": no_grad(lambda: [model(task=n, **batch) for n in names]),
        },
        args.reps,
        args.warmup,
    )
    paired, mins, _ = t.ratio("separately", "together")
    return {"speedup": paired, "speedup_minima": mins}


def bench_mixed(model, batch, names, args) -> dict:
    tasks = [names[i % len(names)] for i in range(batch["input_ids"].shape[0])]
    groups = {n: torch.tensor([i for i, t in enumerate(tasks) if t == n]) for n in names}

    def grouped():
        for n, idx in groups.items():
            model(task=n, **{k: v[idx] for k, v in batch.items()})

    t = round_robin(
        {"mixed": no_grad(lambda: model.forward_mixed(**batch, tasks=tasks)), "grouped": no_grad(grouped)},
        args.reps,
        args.warmup,
    )
    paired, mins, _ = t.ratio("grouped", "mixed")
    return {"mixed_speedup_over_grouped": paired, "minima": mins}


def bench_onnx(model, batch, args) -> dict:
    import onnxruntime as ort

    from pals_core.export.onnx import write_graph

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        write_graph([model], Path(path))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = args.threads
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        names = {i.name for i in session.get_inputs()}
        feed = {k: v.numpy() for k, v in batch.items() if k in names}
        t = round_robin(
            {"torch": no_grad(lambda: model.predict_all(**batch)), "onnxruntime": lambda: session.run(None, feed)},
            args.reps,
            args.warmup,
        )
    paired, mins, _ = t.ratio("torch", "onnxruntime")
    return {"onnxruntime_speedup_over_torch": paired, "minima": mins}


def bench_peft(config: dict, cfg: AdapterConfig, names: list[str], batch, args) -> dict:
    """Our mixed batch against peft's ``adapter_names`` mixed batch, the same LoRA design on every task."""
    from peft import PeftModel, get_peft_model  # noqa: F401
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from pals_core.export.peft import peft_config

    ours = build(config, cfg, {n: 2 for n in names})
    hf_config = AutoConfig.for_model(**{**config, "num_labels": 2})
    hf = AutoModelForSequenceClassification.from_config(hf_config).eval()
    prefix = hf.base_model_prefix
    peft = get_peft_model(hf, peft_config(ours, names[0], prefix), adapter_name=names[0])
    for n in names[1:]:
        peft.add_adapter(n, peft_config(ours, n, prefix))
    peft.eval()
    tasks = [names[i % len(names)] for i in range(batch["input_ids"].shape[0])]
    t = round_robin(
        {
            "ours": no_grad(lambda: ours.forward_mixed(**batch, tasks=tasks)),
            "peft": no_grad(lambda: peft(**batch, adapter_names=tasks)),
        },
        args.reps,
        args.warmup,
    )
    paired, mins, _ = t.ratio("peft", "ours")
    return {"ours_speedup_over_peft": paired, "minima": mins}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="minilm,bert-base")
    p.add_argument("--tasks", default="5,8", help="task counts T")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--d-s", type=int, default=8)
    p.add_argument("--tagging", type=int, default=1, help="how many of the T tasks tag every token (kind: tokens)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--skip", default="", help="comma-separated: onnx, peft")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    skip = set(filter(None, args.skip.split(",")))
    cfg = design(args.d_s)
    print(
        f"torch {torch.__version__}, CPU, {args.threads} thread(s); lora @ top, d_s {args.d_s}, trunk frozen; "
        f"batch {args.batch}, n = {args.seq_len}, {args.reps} rounds (CPU time, round-robin); "
        f"{args.tagging} tagging task(s) of 9 tags among the T"
    )
    header = (
        f"{'shape':<10} {'T':>2}  {'predict_all vs T passes':>24} {'(calculator)':>12} {'of calc.':>8}  "
        f"{'mixed vs grouped':>16}  {'ort vs torch':>12}  {'ours vs peft':>12}"
    )
    print(header)
    out = []
    for shape_name in args.shapes.split(","):
        config = shapes()[shape_name]
        for T in (int(x) for x in args.tasks.split(",")):
            tasks = [Task(f"tag{i}", 9, "tokens") for i in range(min(args.tagging, T))]
            tasks += [Task(f"t{i}", 2 if i % 2 else 3) for i in range(len(tasks), T)]
            names = [t.name for t in tasks]
            per_word = [t.name for t in tasks if t.kind == "tokens"]
            model = build(config, cfg, {t.name: t.num_labels for t in tasks}, per_word)
            batch = inputs(config["vocab_size"], args.batch, args.seq_len)
            t0 = time.perf_counter()
            row = {
                "shape": shape_name,
                "tasks": T,
                "tagging": len(per_word),
                "calculator_speedup": calculator_speedup(config, cfg, tasks, args.seq_len),
            }
            row.update(bench_shared(model, batch, names, args))
            row.update(bench_mixed(model, batch, names, args))
            if "onnx" not in skip:
                row.update(bench_onnx(model, batch, args))
            if "peft" not in skip:
                row.update(bench_peft(config, cfg, names, batch, args))
            row["seconds"] = time.perf_counter() - t0
            out.append(row)
            of = row["speedup"] / row["calculator_speedup"]
            print(
                f"{shape_name:<10} {T:>2}  {row['speedup']:>23.3f}× {row['calculator_speedup']:>11.3f}× {of:>8.1%}  "
                f"{row['mixed_speedup_over_grouped']:>15.3f}×  "
                f"{row.get('onnxruntime_speedup_over_torch', float('nan')):>11.3f}×  "
                f"{row.get('ours_speedup_over_peft', float('nan')):>11.3f}×",
                flush=True,
            )
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "rows": out}, f, indent=2)
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
