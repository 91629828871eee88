"""Trainer overhead: training throughput of ``pals_core.train.train`` vs a bare torch loop.

Both train the same model (same seed, same AdamW + linear schedule, same gradient clipping) on the
same single-task batches: the bare loop replays the trainer's task sampler and data streams to build
the identical batch list up front, then runs only forward / loss / backward / clip / step. The
trainer's figure is its ``train_time_s`` (the training loop: task sampling, batch building, the
Accelerate wrappers, loss bookkeeping, progress bar and progress.json writes — evaluation and
checkpoints excluded). Runs alternate (bare, trainer, bare, trainer, …) and the fastest of each is
compared, to damp the noise of a shared machine; one untimed bare run first warms the kernels for
every batch shape, and the order alternates (bare first, then trainer first, …).

    PALS_GLUE_DIR=/path/to/glue python benchmarks/bench_trainer.py                 # MiniLM, CPU
    PALS_GLUE_DIR=/path/to/glue python benchmarks/bench_trainer.py --steps 200 --device cuda
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from pals_core.data.load import load_tasks, load_tokenizer, tokenizer_path  # noqa: E402
from pals_core.data.samplers import make_sampler  # noqa: E402
from pals_core.kinds import get_kind  # noqa: E402
from pals_core.model import MultiTaskModel  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.tasks.glue_tasks import GLUE_TASKS  # noqa: E402
from pals_core.train.config import TrainConfig  # noqa: E402
from pals_core.train.streams import TaskStream  # noqa: E402
from pals_core.train.trainer import train  # noqa: E402


def batches_like_the_trainer(cfg: TrainConfig, data) -> list[tuple[str, dict]]:
    sizes = {t: len(data[t].train) for t in cfg.tasks}
    sampler = make_sampler(
        cfg.sampling,
        sizes,
        cfg.steps,
        cfg.epoch_steps,
        alpha_start=cfg.alpha_start,
        alpha_end=cfg.alpha_end,
        alpha_shape=cfg.alpha_shape,
    )
    rng = np.random.default_rng([cfg.seed, 1])
    streams = {t: TaskStream(sizes[t], cfg.seed, i) for i, t in enumerate(cfg.tasks)}
    out = []
    for step in range(cfg.steps):
        t = sampler.sample(step, rng)
        out.append((t, data[t].train.batch(streams[t].take(cfg.batch_size))))
    return out


def bare_loop(cfg: TrainConfig, batches, device: torch.device) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of the plain torch loop over ``batches``."""
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(cfg.seed)
    model = MultiTaskModel.from_base(cfg.model, cfg.adapter, {t: GLUE_TASKS[t].num_labels for t in cfg.tasks}).to(
        device
    )
    model.train()
    opt = torch.optim.AdamW(model.parameter_groups(cfg.weight_decay), lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.adam_eps)
    sched = get_linear_schedule_with_warmup(opt, int(round(cfg.warmup * cfg.steps)), cfg.steps)
    params = [p for p in model.parameters() if p.requires_grad]
    bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    t0, c0 = time.perf_counter(), time.process_time()
    for task, b in batches:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(
                task=task,
                input_ids=b["input_ids"].to(device),
                attention_mask=b["attention_mask"].to(device),
                token_type_ids=b["token_type_ids"].to(device),
            )
        labels = b["labels"].to(device)
        loss = get_kind(GLUE_TASKS[task].kind).module().loss(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
    sync()
    return time.perf_counter() - t0, time.process_time() - c0


def interleaved(cfg: TrainConfig, steps: int) -> tuple[float, float]:
    """Per-step CPU time (bare step, trainer step) alternated step by step on one model: the
    trainer's own step (``_Run.draw`` = sampling + batch building, then ``_Run.train_step`` through
    Accelerate) against the bare step on the same batch. Alternating every step cancels the drift of
    a shared machine that whole-run comparisons suffer from."""
    from pals_core.train.params import resolve
    from pals_core.train.rundir import RunDir
    from pals_core.train.trainer import _Run

    cfg = resolve(cfg)
    r = _Run(cfg, RunDir(cfg.out), False, None)
    r.setup(resume=False)
    r.model.train()
    net, opt, sched, params = r.net, r.optimizer.optimizer, r.scheduler, r.trainable
    bare = trainer = 0.0
    for step in range(steps):
        c0 = time.process_time()
        parts = r.draw(step)  # one (task, rows) part: this benchmark's samplers are single-task
        loss = r.train_step(parts)
        task, b = parts[0]
        c1 = time.process_time()
        logits = net(
            task=task, input_ids=b["input_ids"], attention_mask=b["attention_mask"], token_type_ids=b["token_type_ids"]
        )
        loss = get_kind(GLUE_TASKS[task].kind).module().loss(logits, b["labels"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        c2 = time.process_time()
        trainer, bare = trainer + (c1 - c0), bare + (c2 - c1)
    return bare / steps, trainer / steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="HF folder or 'tiny' (default: embedded MiniLM)")
    p.add_argument("--tasks", default="rte,mrpc,stsb,cola,sst2")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--d-s", type=int, default=96)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    work = tempfile.mkdtemp(prefix="bench-trainer-")
    try:

        def config(i: int) -> TrainConfig:
            return TrainConfig(
                tasks=args.tasks.split(","),
                adapter=AdapterConfig(method="pals", d_s=args.d_s, heads=args.heads),
                model=args.model,
                out=os.path.join(work, f"run{i}"),
                steps=args.steps,
                batch_size=args.batch_size,
                max_len=args.max_len,
                eval_every=args.steps,
                max_eval_examples=16,
                device=args.device,
                num_threads=args.threads,
                seed=0,
            )

        cfg = config(0)
        tok = load_tokenizer(tokenizer_path(cfg.model))
        data = load_tasks(cfg.tasks, tok, glue_dir=cfg.glue_dir, max_len=cfg.max_len)
        batches = batches_like_the_trainer(cfg, data)
        tokens = sum(int(b["attention_mask"].sum()) for _, b in batches)
        seqs = args.steps * args.batch_size
        wall = {"bare": [], "trainer": []}
        cpu = {"bare": [], "trainer": []}
        w, _ = bare_loop(cfg, batches, device)  # warm-up: kernels for every batch shape, allocator, caches
        print(f"  warm-up bare loop: {seqs / w:7.1f} seq/s (not counted)")
        for i in range(args.repeats):

            def run_bare() -> None:
                w, c = bare_loop(cfg, batches, device)
                wall["bare"].append(w)
                cpu["bare"].append(c)

            def run_trainer() -> None:
                s = train(config(i + 1), progress=False)  # noqa: B023 (called within this iteration)
                wall["trainer"].append(s["train_time_s"])
                cpu["trainer"].append(s["train_cpu_s"])

            for step in (run_bare, run_trainer) if i % 2 == 0 else (run_trainer, run_bare):  # alternate the order
                step()
            print(
                f"  repeat {i + 1}: bare {seqs / wall['bare'][-1]:7.1f} seq/s ({seqs / cpu['bare'][-1]:7.1f} per CPU-s)   "
                f"trainer {seqs / wall['trainer'][-1]:7.1f} seq/s ({seqs / cpu['trainer'][-1]:7.1f} per CPU-s)"
            )
        print(
            f"model {cfg.model or 'MiniLM-L6-H384'} · PALs d_s={args.d_s}, h_s={args.heads} · tasks {args.tasks} · "
            f"{args.steps} steps × batch {args.batch_size} (max_len {args.max_len}, {tokens / seqs:.1f} real tokens/seq) · "
            f"{args.device}, {args.threads} threads · best of {args.repeats} alternating repeats"
        )
        for label, times in (("wall time", wall), ("CPU time", cpu)):
            b, t = min(times["bare"]), min(times["trainer"])
            mb, mt = statistics.median(times["bare"]), statistics.median(times["trainer"])
            print(
                f"whole runs, {label:9s}: bare loop {seqs / b:8.1f} seq/s · trainer {seqs / t:8.1f} seq/s · "
                f"trainer overhead {100 * (t / b - 1):+.2f} % (median vs median {100 * (mt / mb - 1):+.2f} %)"
            )
        if device.type == "cpu":
            b, t = interleaved(config(args.repeats + 1), args.steps)
            print(
                f"step by step, CPU time: bare step {1e3 * b:8.2f} ms · trainer step (sampling + batch + Accelerate) "
                f"{1e3 * t:8.2f} ms · trainer overhead {100 * (t / b - 1):+.2f} %"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
