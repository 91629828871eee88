"""The GPU check: do the training runs the explorer launches work on CUDA, and does the calculator say what
a GPU does? One command, a few minutes on one H100, one JSON (``--json``) and a table with pass/fail per goal.

    python3 benchmarks/gpu_check.py --model .carry/minilm-fp16 --glue-dir .carry/glue --json gpu_check.json
    .venv/bin/python benchmarks/gpu_check.py --device cpu --tiny --json /tmp/g.json   # CI: the same code, tiny

(.carry: ``benchmarks/carry_minilm.py``; the device command in full: BENCHMARKS.md, "GPU check".)

1. Training step. A BERT-base shape (random weights, nothing downloaded), 8 GLUE tasks, batch 32 x 128, the
   trainer's own Accelerator (``make_accelerator``: bf16 autocast on CUDA), AdamW (``make_optimizer``: fused),
   loss and gradient clipping: ``shared`` (full fine-tuning), PALs, Houlsby and LoRA at the sizes the calculator's
   solver gives at the 1.13x budget (what ``pals-budget --budget 1.13`` answers). Measured: seconds per step
   (CUDA events, warm-up steps excluded), TFLOP/s from the calculator's FLOPs of a step
   (``flops_train_step_per_seq`` x batch: 3x the forward, an overstatement for a frozen trunk), MFU against the
   device profile's peak (pals_core/footprint/devices, chosen by ``torch.cuda.get_device_name``), peak memory (``torch.cuda.max_memory_allocated``, reset between
   designs) against ``pals-budget``'s training memory of the same design, batch and precision, and the step-time
   ratio design/shared against the calculator's timing model on that profile.
2. Serving. ``predict_all`` of 8 tasks against 8 separate passes at batch 64 (benchmarks/bench_serving.py's design
   and model: LoRA at the top half, trunk frozen), against the calculator's FLOP speed-up.
3. A real run end to end. ``pals-train`` on the carried MiniLM (fp16 safetensors read into fp32), RTE + MRPC + STS-B,
   a few hundred steps with ``--mixed-precision auto``, evaluations and checkpoints on the device; then
   ``pals-predict`` on each dev file, scored, against the run's summary.json; and the same run stopped at its first
   evaluation and resumed from that checkpoint on the device (the restore of weights, AdamW state and RNGs).

Goals (on a GPU; on CPU the figures only prove that the code runs):
    MFU >= 40 % for full fine-tuning (shared)            predicted training memory within 10 % of the CUDA peak
    predicted step-time ratios within 10 % of measured   serving within 10 % of the FLOP speed-up
    the run trained, evaluated and checkpointed on the device, and pals-predict reproduces its dev scores

On CPU (``--device cpu``) there is no allocator peak: the measured memory is the bytes of the weights, gradients and
AdamW state after the steps plus the bytes autograd saves in one forward (``memory_probe``), and the profile is
``local`` when pals-calibrate has measured this machine, else h100 (its predictions are then not this machine's).
Device time is scarce: keep each part quick; ``--skip`` leaves parts out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # memory_probe: what torch really holds

import bench_serving  # noqa: E402  (the serving benchmark's design, model and calculator speed-up)
import torch  # noqa: E402
from bench_modules import inputs  # noqa: E402

from pals_core.base_model import tiny_config_dict  # noqa: E402
from pals_core.budget.machine import Machine  # noqa: E402
from pals_core.budget.solver import Budget  # noqa: E402
from pals_core.budget.table import rows  # noqa: E402
from pals_core.budget.tasks import parse_tasks  # noqa: E402
from pals_core.families.shapes import conditions_from_config, from_hf_config  # noqa: E402
from pals_core.footprint.timing import load_profile  # noqa: E402
from pals_core.model import MultiTaskModel  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.train.config import TrainConfig  # noqa: E402
from pals_core.train.machine_report import device_profile  # noqa: E402
from pals_core.train.trainer import make_accelerator, make_optimizer  # noqa: E402

DESIGNS = [  # (method, location, freeze_trunk): the trunk setting given explicitly, whatever a method's default
    ("shared", None, False),  # full fine-tuning: the reference of every ratio
    ("pals", "all", False),  # the paper fine-tunes everything
    ("houlsby", "all", True),  # adapters as Houlsby et al. train them: trunk frozen
    ("lora", "all", True),  # LoRA as Hu et al. train it: trunk frozen
]
BUDGET = 1.13
GOALS = {"mfu_shared": 0.40, "memory": 0.10, "step_ratio": 0.10, "serving": 0.10}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def seconds_per_call(fn, iters, device):
    """Mean seconds of ``fn`` over ``iters`` calls, timed by CUDA events on a GPU (perf_counter on CPU)."""
    sync(device)
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


def free(device):
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


# ----------------------------------------------------------------------------------------------- 1. training steps


def calculator_rows(shape, tasks, cond, machine, seq_len):
    """The solver's row (d_s, FLOPs, memory, step time) of every design at the budget, as pals-budget gives it."""
    out = {}
    for method, location, freeze in DESIGNS:
        [row] = rows(
            shape,
            tasks,
            budget=Budget(ratio=BUDGET),
            methods=[method],
            location=location,
            adapter=AdapterConfig(freeze_trunk=freeze),
            seq_len=seq_len,
            machine=machine,
            model_conditions=cond,
        )
        out[method] = row
    return out


def measured_bytes_cpu(model, optimizer, task, batch, seq_len):
    """CPU stand-in for the allocator's peak: weights + gradients + AdamW state + the bytes one forward saves."""
    from memory_probe import saved_activation_bytes  # tests/memory_probe.py; torch-only, loaded when measured

    tensors = [p for p in model.parameters()] + [p.grad for p in model.parameters() if p.grad is not None]
    tensors += [v for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v)]
    return sum(t.untyped_storage().nbytes() for t in tensors) + saved_activation_bytes(model, task, batch, seq_len)


def one_design(args, device, config, names, task, adapter, batch, labels):
    """(seconds per step, peak bytes, where the peak comes from, bytes allocated before, parameters trained, precision):
    the trainer's step on one task, timed after ``args.warmup`` steps."""
    cfg = TrainConfig(tasks=[task], adapter=adapter, device=args.device)
    acc = make_accelerator(cfg)  # the trainer's: CUDA placement, bf16 autocast where the device has it
    free(device)
    before = torch.cuda.memory_allocated() if device.type == "cuda" else 0  # ~0: the last design is gone
    torch.manual_seed(0)
    model = MultiTaskModel.from_base_config(config, adapter, tasks=names).train()
    model, optimizer = acc.prepare(model, make_optimizer(model, cfg))
    trainable = [p for p in model.parameters() if p.requires_grad]

    def step():  # the trainer's train_step on one part (pals_core/train/trainer.py: part_loss, train_step)
        with acc.autocast():
            logits = model(task=task, **{k: v.to(acc.device) for k, v in batch.items()})
        loss = torch.nn.functional.cross_entropy(logits.float(), labels.to(acc.device))
        acc.backward(loss)
        acc.clip_grad_norm_(trainable, cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup):  # AdamW's state exists after the first step; kernels chosen
        step()
    sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    seconds = seconds_per_call(step, args.iters, device)
    if device.type == "cuda":
        peak, source = torch.cuda.max_memory_allocated(), "torch.cuda.max_memory_allocated"
    else:
        B, n = labels.shape[0], batch["input_ids"].shape[1]
        peak, source = measured_bytes_cpu(acc.unwrap_model(model), optimizer, task, B, n), "tensor bytes (CPU)"
    precision = "bf16" if acc.mixed_precision == "bf16" else "fp32"
    return seconds, int(peak), source, before, sum(p.numel() for p in trainable), precision


def conditions_of(config, names):
    """The model's dropout and attention implementation, read off a built model as the trainer reads them."""
    torch.manual_seed(0)
    probe = MultiTaskModel.from_base_config(config, AdapterConfig(method="shared"), tasks=names)
    return conditions_from_config(
        probe.base_config.to_dict() | {"attn_implementation": probe.base_config._attn_implementation}
    )


def train_steps(args, device, config, tasks, held, keep=lambda figures: None):
    """Each design's training step, timed, its peak memory, beside the calculator's figures; ``keep`` is handed the
    designs measured so far after each one (saved at once: a design that fails later loses none of them)."""
    B, n = args.batch, args.seq_len
    names = {t.name: t.num_labels for t in tasks}
    task = tasks[0].name  # the calculator prices a step of the first task
    batch = inputs(config["vocab_size"], B, n)
    labels = torch.randint(0, names[task], (B,), generator=torch.Generator().manual_seed(0))
    machine = Machine(batch=B, device=args.profile, precision=held["precision"])
    shape = from_hf_config(config, name=args.shape_name)
    calc = calculator_rows(shape, tasks, conditions_of(config, names), machine, n)
    profile = load_profile(args.profile)
    peak_flops = (profile.matmul_flops_bf16 if held["precision"] == "bf16" else None) or profile.matmul_flops
    held["peak_flops"] = peak_flops
    results = []
    for method, location, freeze in DESIGNS:
        row = calc[method]
        adapter = AdapterConfig(method=method, d_s=row.d_s, location=location, freeze_trunk=freeze)
        seconds, peak, source, before, trained, precision = one_design(
            args, device, config, names, task, adapter, batch, labels
        )
        assert precision == held["precision"], (precision, held["precision"])  # the calculator priced this one
        flops = row.flops_train_step_per_seq * B
        results.append(
            {
                "design": method,
                "location": location,
                "d_s": row.d_s,
                "freeze_trunk": freeze,
                "params_trained": trained,
                "step_s": seconds,
                "tflops": flops / seconds / 1e12,
                "flops_per_step": flops,
                "peak_bytes": peak,
                "peak_source": source,
                "allocated_before_bytes": before,
                "predicted_bytes": row.memory_train["total"],
                "predicted_step_s": row.time_step_s,
            }
        )
        r, base = results[-1], results[0]  # shared, measured first, is every ratio's reference
        r["mfu"] = r["tflops"] * 1e12 / peak_flops
        r["memory_ratio"] = r["predicted_bytes"] / r["peak_bytes"]  # predicted / measured
        r["ratio_measured"] = r["step_s"] / base["step_s"]
        r["ratio_predicted"] = r["predicted_step_s"] / base["predicted_step_s"]
        r["ratio_of_ratios"] = r["ratio_predicted"] / r["ratio_measured"]
        keep(list(results))
    free(device)
    return results


# ----------------------------------------------------------------------------------------------------- 2. serving


def serving(args, device, config, tasks, bf16):
    """predict_all of every task against one pass per task, alternated round by round (median of the ratios)."""
    cfg = bench_serving.design(8)
    model = bench_serving.build(config, cfg, {t.name: t.num_labels for t in tasks}).to(device)
    batch = {k: v.to(device) for k, v in inputs(config["vocab_size"], args.serve_batch, args.seq_len).items()}
    names = [t.name for t in tasks]
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else nullcontext()

    def together():
        model.predict_all(**batch)

    def separately():
        for name in names:
            model(task=name, **batch)

    with torch.no_grad(), autocast:
        for _ in range(args.warmup):
            together(), separately()
        rounds = [
            seconds_per_call(separately, args.iters, device) / seconds_per_call(together, args.iters, device)
            for _ in range(args.rounds)
        ]
    out = {
        "design": f"{cfg.method} @ {cfg.location}, d_s {cfg.d_s}, trunk frozen",
        "tasks": len(tasks),
        "batch": args.serve_batch,
        "speedup": statistics.median(rounds),
        "calculator_speedup": bench_serving.calculator_speedup(config, cfg, tasks, args.seq_len),
    }
    out["of_calculator"] = out["speedup"] / out["calculator_speedup"]
    return out


# ---------------------------------------------------------------------------------------------- 3. a real run


def dev_scores_by_pals_predict(run, summary, glue_dir, device, work):
    """Each task's dev file through ``pals-predict`` (its CLI, in this process), scored as the trainer scores."""
    import numpy as np

    from pals_core.cli.predict import main as pals_predict
    from pals_core.data.load import label_array, raw_splits
    from pals_core.data.metrics import task_scores
    from pals_core.tasks.glue_tasks import GLUE_TASKS, glue_record

    scores = {}
    for name in summary["scores"]:
        gt, record = GLUE_TASKS[name], glue_record(name)
        raw = raw_splits(record, glue_dir=glue_dir, train=False)[0]["dev"]  # the rows the trainer scored
        rows_in = work / f"{name}_dev.jsonl"
        rows_in.write_text("".join(json.dumps({"a": a, "b": b}) + "\n" for a, b in zip(raw.text_a, raw.text_b)))
        rows_out = work / f"{name}_pred.jsonl"
        argv = [str(run), "--input", str(rows_in), "--out", str(rows_out), "--tasks", name]
        code = pals_predict([*argv, "--text", "a", "--text-pair", "b", "--device", device.type, "--no-progress"])
        if code != 0:
            raise RuntimeError(f"pals-predict exited {code} on {name}")
        got = [json.loads(line)[name] for line in rows_out.read_text().splitlines()]
        if not record.kind_of.has_labels:  # values in the task's units (float64, as pals-predict writes them)
            pred = np.array(got, dtype=np.float64)
        else:
            pred = np.array([summary["tasks"][name]["labels"].index(v) for v in got])
        gold = label_array(raw.labels, record.kind, gt.num_labels)
        scores[name] = task_scores(record, {"": (pred, gold)}, gt.num_labels)
    return scores


def stopped_and_resumed(argv, out):
    """The same run stopped at its first evaluation, then resumed (``--resume``) from that checkpoint: the trainer's
    restore of weights, AdamW state and RNGs onto the device. Returns the resumed run's summary."""
    from pals_core.train.args import build_parser, config_from_args
    from pals_core.train.trainer import train

    argv = [*argv]
    argv[argv.index("--out") + 1] = str(out)
    cfg, _ = config_from_args(vars(build_parser().parse_args(argv)))

    class Stop(Exception):
        pass

    def stop(step, scores, average):
        raise Stop

    try:
        train(cfg, on_eval=stop, progress=False)
    except Stop:
        pass
    return train(cfg, resume=True, progress=False)


def end_to_end(args, device, work, keep=lambda figures: None):
    """pals-train, then pals-predict on each dev file, then the run stopped and resumed; ``keep`` is handed the
    figures after each step (saved at once: a later step that fails loses none of the training's)."""
    from pals_core.cli.train import main as pals_train

    run = work / "run"
    argv = [
        "--tasks", "rte,mrpc,stsb",
        "--glue-dir", args.glue_dir,
        "--method", "pals", "--budget", str(BUDGET), "--train-trunk",
        "--out", str(run),
        "--steps", str(args.run_steps),
        "--eval-every", str(max(1, args.run_steps // 2)),  # two evaluations, each with its checkpoint
        "--batch-size", str(args.run_batch),
        "--max-len", str(args.run_max_len),
        "--lr", str(args.run_lr),
        "--device", device.type,
        "--mixed-precision", "auto",
        "--cache-dir", str(work / "cache"),
        "--seed", "0",
        "--no-progress",
    ]  # fmt: skip
    if args.model:  # none: the embedded MiniLM
        argv += ["--model", args.model]
    if args.run_max_train:
        argv += ["--max-train-examples", str(args.run_max_train)]
    t0 = time.perf_counter()
    code = pals_train(argv)
    seconds = time.perf_counter() - t0
    if code != 0:
        raise RuntimeError(f"pals-train exited {code}")
    summary = json.loads((run / "summary.json").read_text())
    machine = summary["machine"]
    out = {
        "argv": argv,
        "work": str(work),
        "seconds": seconds,
        "steps": summary["steps"],
        "device": device.type,
        # on CUDA: the trainer's peak memory is the allocator's (the model was placed there), under bf16 autocast
        "on_device": machine["measured"]["peak_memory_source"] == "torch.cuda.max_memory_allocated"
        and machine["predicted"].get("precision") == ("bf16" if torch.cuda.is_bf16_supported() else "fp32")
        if device.type == "cuda"
        else True,
        "checkpoints": sorted(p.name for p in (run / "checkpoints").iterdir() if p.is_dir()),
        "scores": summary["scores"],
        "average": summary["average"],
        "precision": machine["predicted"].get("precision"),  # bf16: the trainer ran under bf16 autocast
        "machine": machine,
    }
    keep(dict(out))
    predicted = dev_scores_by_pals_predict(run, summary, args.glue_dir, device, work)
    diffs = [abs(predicted[t][m] - v) for t, s in summary["scores"].items() for m, v in s.items()]
    out.update(
        pals_predict_scores=predicted, scores_max_abs_diff=max(diffs), scores_equal=predicted == summary["scores"]
    )
    keep(dict(out))
    resumed = stopped_and_resumed(argv, work / "resumed")
    gaps = [abs(resumed["scores"][t][m] - v) for t, s in summary["scores"].items() for m, v in s.items()]
    out["resumed"] = {
        "steps": resumed["steps"],
        "scores": resumed["scores"],
        "max_abs_diff": max(gaps),
        "equal": resumed["scores"] == summary["scores"],
    }
    return out


# ------------------------------------------------------------------------------------------------------- report


def verdicts(out):
    """(goal, figure, passed) for every goal the parts that ran can be held to."""
    v = []
    steps = out.get("steps")
    if steps:
        v.append(("MFU of full fine-tuning >= 40 %", f"{steps[0]['mfu']:.1%}", steps[0]["mfu"] >= GOALS["mfu_shared"]))
        for r in steps:
            off = r["memory_ratio"] - 1
            v.append((f"{r['design']}: memory within 10 %", f"{off:+.1%}", abs(off) <= GOALS["memory"]))
        for r in steps[1:]:
            off = r["ratio_of_ratios"] - 1
            v.append((f"{r['design']}: step-time ratio within 10 %", f"{off:+.1%}", abs(off) <= GOALS["step_ratio"]))
    s = out.get("serving")
    if s:
        off = s["of_calculator"] - 1
        v.append(("serving within 10 % of the FLOP speed-up", f"{off:+.1%}", abs(off) <= GOALS["serving"]))
    for key, error in out.get("errors", {}).items():
        v.append((f"{key} ran", error[:200], False))
    e = out.get("end_to_end")
    if e:
        v.append(
            (
                f"pals-train ran on {e['device']} ({e['precision']}) with checkpoints",
                f"{len(e['checkpoints'])} ckpt",
                e["on_device"],
            )
        )
        r = e.get("resumed")  # a step that failed has no figures (its error is a goal of its own, above)
        if r:
            v.append(("stopped, resumed, finished", f"max |diff| {r['max_abs_diff']:.2g}", r["steps"] == e["steps"]))
        if "scores_equal" in e:
            diff = f"max |diff| {e['scores_max_abs_diff']:.2g}"
            v.append(("pals-predict reproduces the dev scores", diff, e["scores_equal"]))
    return v


def print_table(out):
    print(f"\n{out['device_name']} · torch {out['torch']} · profile {out['profile']} · {out['precision']}")
    if out.get("steps"):
        print(f"training step, batch {out['args']['batch']} x {out['args']['seq_len']} (budget {BUDGET}x):")
        head = f"{'design':<8} {'trunk':<6} {'d_s':>4} {'step ms':>8} {'TFLOP/s':>8} {'MFU':>6}"
        print(head + f" {'peak GiB':>8} {'pred GiB':>8} {'pred/peak':>9} {'ratio':>6} {'pred':>6} {'pred/meas':>9}")
        for r in out["steps"]:
            print(
                f"{r['design']:<8} {'frozen' if r['freeze_trunk'] else 'trains':<6} {r['d_s'] or '—':>4} "
                f"{r['step_s'] * 1e3:>8.2f} {r['tflops']:>8.1f} {r['mfu']:>6.1%} {r['peak_bytes'] / 2**30:>8.3f} "
                f"{r['predicted_bytes'] / 2**30:>8.3f} {r['memory_ratio']:>9.3f} {r['ratio_measured']:>6.3f} "
                f"{r['ratio_predicted']:>6.3f} {r['ratio_of_ratios']:>9.3f}"
            )
    s = out.get("serving")
    if s:
        print(
            f"serving ({s['design']}, {s['tasks']} tasks, batch {s['batch']}): predict_all {s['speedup']:.3f}x "
            f"faster than {s['tasks']} passes; calculator {s['calculator_speedup']:.3f}x ({s['of_calculator']:.1%})"
        )
    e = out.get("end_to_end")
    if e:
        line = f"pals-train ({e['steps']} steps, {e['seconds']:.1f} s on {e['device']}): dev average {e['average']:.4f}"
        if "scores_equal" in e:
            line += f"; pals-predict equal: {e['scores_equal']} (max |diff| {e['scores_max_abs_diff']:.3g})"
        if "resumed" in e:
            line += (
                f"; stopped and resumed: equal {e['resumed']['equal']} (max |diff| {e['resumed']['max_abs_diff']:.3g})"
            )
        print(line)
    print("\ngoals:")
    for goal, figure, ok in out["goals"]:
        print(f"  {'PASS' if ok else 'FAIL'}  {goal}: {figure}")


PARTS = ("steps", "serving", "run")  # what --skip names


def checked_arguments(args) -> str | None:
    """Why the arguments cannot be run, in one line naming the flag, or None: checked before any work, so that a
    typo never costs a device's minutes (nor is found after them). ``--skip`` takes the parts' exact names,
    ``--profile`` a profile the calculator reads, ``--json`` a file that can be written, ``--work`` a folder (or
    none yet)."""
    skip = [s.strip() for s in args.skip.split(",") if s.strip()]
    unknown = [s for s in skip if s not in PARTS]
    if unknown:
        return f"--skip: no part {', '.join(map(repr, unknown))} (parts: {', '.join(PARTS)})"
    args.skip_parts = tuple(dict.fromkeys(skip))
    if args.device == "cuda" and not torch.cuda.is_available():
        return "torch sees no CUDA device (--device cpu --tiny runs the CPU check)"
    if "run" not in args.skip_parts and not args.glue_dir:
        return "give --glue-dir (or $PALS_GLUE_DIR), or --skip run"
    if args.profile is not None:
        try:
            load_profile(args.profile)
        except ValueError as e:
            return f"--profile: {' '.join(str(e).split())}"
    if args.json is not None:
        path = Path(args.json)
        folder = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            return f"--json {args.json}: a folder, not a file to write the figures to"
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            return f"--json {args.json}: its folder {folder} is not there or cannot be written"
    if args.work is not None and os.path.lexists(args.work) and not os.path.isdir(args.work):
        return f"--work {args.work}: not a folder"
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--tiny", action="store_true", help="a tiny random BERT and a short run (CI: the same code paths)")
    p.add_argument("--json", default=None, help="write every figure to this file (after each part, as it ends)")
    p.add_argument("--model", default=None, help="the end-to-end run's model folder (default: the embedded MiniLM)")
    p.add_argument("--glue-dir", default=os.environ.get("PALS_GLUE_DIR"), help="GLUE TSVs of RTE, MRPC, STS-B")
    p.add_argument("--profile", default=None, help="device profile (default: the one matching this GPU)")
    p.add_argument(
        "--work",
        default=None,
        help="folder for the run: its files go to a new gpu_check-* folder inside it, never over a file there "
        "(default: a temporary folder, removed after)",
    )
    p.add_argument("--skip", default="", help=f"comma-separated parts to leave out: {', '.join(PARTS)}")
    args = p.parse_args(argv)
    why = checked_arguments(args)
    if why is not None:
        print(f"gpu_check: error: {why}", file=sys.stderr)
        return 2
    sizes = dict(batch=32, seq_len=128, warmup=3, iters=20, rounds=5, serve_batch=64, run_steps=300, run_batch=32)
    sizes.update(run_max_len=128, run_lr=5e-5, run_max_train=None)
    if args.tiny:
        sizes.update(batch=4, seq_len=32, warmup=1, iters=2, rounds=1, serve_batch=8, run_steps=12, run_batch=8)
        sizes.update(run_max_len=32, run_lr=1e-3, run_max_train=64)
    for k, v in sizes.items():
        setattr(args, k, v)
    args.shape_name = "tiny" if args.tiny else "bert-base"
    args.model = args.model or ("tiny" if args.tiny else None)
    device = torch.device(args.device)
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)  # CPU figures only prove the code runs; one thread is quickest on a shared machine
    try:
        return check(args, device)
    finally:
        torch.set_num_threads(threads)


def check(args, device) -> int:
    """Every part not skipped, the goals, the table and the JSON (0: every part ran, 1: one raised)."""
    config = tiny_config_dict() if args.tiny else bench_serving.BERT_BASE
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    args.profile = args.profile or device_profile(device.type == "cuda") or "h100"
    tasks = parse_tasks(8)
    t0 = time.perf_counter()
    out = {"device_name": name, "torch": torch.__version__, "profile": load_profile(args.profile).name}
    out["peak_flops"] = None
    out["args"] = {k: v for k, v in vars(args).items()}
    held = {"precision": "bf16" if device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"}
    skip = args.skip_parts  # exact names, checked before any work (``checked_arguments``)
    parts = out["part_seconds"] = {}

    def part(key, fn):
        """One part; its figures so far are written as it hands them over (``keep``) and when it ends, and an
        exception is recorded (the other parts still run)."""
        t1 = time.perf_counter()

        def keep(figures):
            out[key] = figures
            save(args.json, out)

        try:
            out[key] = fn(keep)
        except Exception as e:  # noqa: BLE001 — a device's one chance: keep what the other parts measure
            import traceback

            traceback.print_exc()
            out.setdefault("errors", {})[key] = f"{type(e).__name__}: {e}"
        parts[key] = time.perf_counter() - t1
        save(args.json, out)

    if "steps" not in skip:
        part("steps", lambda keep: train_steps(args, device, config, tasks, held, keep))
    out["precision"], out["peak_flops"] = held["precision"], held.get("peak_flops")
    if "serving" not in skip:
        part("serving", lambda keep: serving(args, device, config, tasks, held["precision"] == "bf16"))
        free(device)
    if "run" not in skip:
        with tempfile.TemporaryDirectory() as tmp:
            part("end_to_end", lambda keep: end_to_end(args, device, work_folder(args.work, tmp), keep))
    out["goals"] = verdicts(out)
    out["seconds"] = time.perf_counter() - t0
    print_table(out)
    print(f"({out['seconds']:.0f} s: " + ", ".join(f"{k} {v:.0f} s" for k, v in parts.items()) + ")")
    save(args.json, out)
    return 1 if out.get("errors") else 0


def work_folder(work: str | None, temporary: str) -> Path:
    """Where the run's files go: ``temporary`` without ``--work``; with it, a new ``gpu_check-*`` folder inside
    ``--work`` (made here), so that no file already there — a user's ``rte_dev.jsonl``, an earlier check's run — is
    ever written over or read as this check's."""
    if work is None:
        return Path(temporary)
    Path(work).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="gpu_check-", dir=work))


def save(path, out):
    """Every figure so far, written atomically as strict JSON (``atomic.dumps``: a non-finite figure is null)."""
    if path:
        from pals_core.atomic import atomic_write_text, dumps

        atomic_write_text(path, dumps(out, default=str))


if __name__ == "__main__":
    sys.exit(main())
