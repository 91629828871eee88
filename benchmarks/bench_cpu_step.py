"""Where a MiniLM training step's time goes on this CPU, and what the free speed-ups buy.

Three parts, all on the embedded MiniLM (``shared`` design: the base model plus the task heads), real
GLUE batches built exactly as the trainer builds them (task sampler, data streams, dynamic padding):

1. **Phases** of a training step (wall time, median over steps): building the padded batch,
   forward + loss, backward, gradient clipping, AdamW step, scheduler + zero_grad — at each thread
   count and batch size asked for. Beside it, the forward + backward of the same batches padded to
   ``max_len`` (what dynamic padding saves).
2. **Optimizer variants, side by side**: the trainer's AdamW (torch's CPU default: a for-loop over
   the tensors) against ``foreach=True`` and ``fused=True``, each on its own copy of the model,
   alternating one step of each on the same batch, so the machine's drift cancels; the number to
   trust is the median per-step ratio. Also the largest parameter difference after the steps
   (fused/foreach reorder floating-point operations: equal up to rounding, not bit for bit).
4. **AdamW alone**: ``optimizer.step()`` of each variant on MiniLM's parameters with fixed gradients, alternating
   (process CPU time) — the optimizer's own cost without the forward/backward noise around it.
3. **Evaluation**: dev prediction in length order (what ``evaluate`` does) vs file order, and under
   ``torch.inference_mode`` vs ``torch.no_grad``.

    PALS_GLUE_DIR=/path/to/glue python benchmarks/bench_cpu_step.py --threads 1,2 --batch 16,32 [--parts 1,2,4,3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from pals_core.data.load import load_tasks, load_tokenizer, tokenizer_path  # noqa: E402
from pals_core.data.samplers import make_sampler  # noqa: E402
from pals_core.kinds import get_kind  # noqa: E402
from pals_core.model import MultiTaskModel  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.tasks.glue_tasks import GLUE_TASKS  # noqa: E402
from pals_core.train.streams import TaskStream  # noqa: E402

TASKS = ["rte", "mrpc", "stsb", "cola", "sst2"]


def trainer_rows(data, steps: int, batch: int, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    """(task, row indices) of the first ``steps`` steps, drawn as the trainer draws them (annealed sampling)."""
    sizes = {t: len(data[t].train) for t in TASKS}
    sampler = make_sampler("annealed", sizes, 60000, 2400)
    rng = np.random.default_rng([seed, 1])
    streams = {t: TaskStream(sizes[t], seed, i) for i, t in enumerate(TASKS)}
    out = []
    for step in range(steps):
        t = sampler.sample(step, rng)
        out.append((t, streams[t].take(batch)))
    return out


def loss_of(model, task: str, b: dict) -> torch.Tensor:
    logits = model(
        task=task, input_ids=b["input_ids"], attention_mask=b["attention_mask"], token_type_ids=b["token_type_ids"]
    )
    return get_kind(GLUE_TASKS[task].kind).module().loss(logits, b["labels"])


def make_model():
    torch.manual_seed(0)
    model = MultiTaskModel.from_base(None, AdapterConfig(method="shared"), {t: GLUE_TASKS[t].num_labels for t in TASKS})
    model.train()
    return model


def make_opt(model, kind: str):
    from transformers import get_linear_schedule_with_warmup

    extra = {"foreach": True} if kind == "foreach" else {"fused": True} if kind == "fused" else {}
    opt = torch.optim.AdamW(model.parameter_groups(0.01), lr=5e-5, betas=(0.9, 0.999), eps=1e-6, **extra)
    return opt, get_linear_schedule_with_warmup(opt, 100, 60000)


def pad_to(b: dict, width: int) -> dict:
    out = dict(b)
    for k in ("input_ids", "attention_mask", "token_type_ids"):
        x = b[k]
        out[k] = torch.nn.functional.pad(x, (0, width - x.shape[1]))
    return out


def phases(data, rows, max_len: int) -> dict[str, float]:
    """Median wall ms of each phase of a training step over ``rows`` (first step untimed)."""
    model = make_model()
    opt, sched = make_opt(model, "default")
    params = [p for p in model.parameters() if p.requires_grad]
    names = ("batch", "forward+loss", "backward", "clip", "adamw", "sched+zero_grad", "fwd+bwd padded to max_len")
    times: dict[str, list[float]] = {n: [] for n in names}
    for i, (task, r) in enumerate(rows):
        c = [time.perf_counter()]
        b = data[task].train.batch(r)
        c.append(time.perf_counter())
        loss = loss_of(model, task, b)
        c.append(time.perf_counter())
        loss.backward()
        c.append(time.perf_counter())
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        c.append(time.perf_counter())
        opt.step()
        c.append(time.perf_counter())
        sched.step()
        opt.zero_grad(set_to_none=True)
        c.append(time.perf_counter())
        padded = pad_to(b, max_len)  # the same batch padded to max_len: forward + backward only (no update)
        c0 = time.perf_counter()
        loss_of(model, task, padded).backward()
        model.zero_grad(set_to_none=True)
        c.append(c[-1] + time.perf_counter() - c0)
        if i == 0:
            continue
        for n, a, z in zip(names, c, c[1:]):
            times[n].append(1000 * (z - a))
    return {n: statistics.median(v) for n, v in times.items()}


def optimizer_variants(data, rows, kinds) -> dict:
    """Alternate one training step of each variant on the same batch; median per-step ratio to the first."""
    models = {k: make_model() for k in kinds}
    opts = {k: make_opt(models[k], k) for k in kinds}
    params = {k: [p for p in models[k].parameters() if p.requires_grad] for k in kinds}
    per: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    for i, (task, r) in enumerate(rows):
        b = data[task].train.batch(r)
        order = kinds if i % 2 == 0 else list(reversed(kinds))
        for k in order:
            opt, sched = opts[k]
            torch.manual_seed(1000 + i)  # the same dropout masks for every variant
            c0, p0 = time.perf_counter(), time.process_time()
            loss_of(models[k], task, b).backward()
            torch.nn.utils.clip_grad_norm_(params[k], 1.0, foreach=True if k != "default" else None)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            if i > 0:
                per[k].append(time.perf_counter() - c0)
                cpu[k].append(time.process_time() - p0)
    ref = kinds[0]
    out = {}
    for k in kinds:
        ratios = [a / b for a, b in zip(per[k], per[ref])]
        cpu_ratios = [a / b for a, b in zip(cpu[k], cpu[ref])]
        diff = max(
            float((p.detach() - q.detach()).abs().max())
            for p, q in zip(models[k].parameters(), models[ref].parameters())
        )
        out[k] = {
            "step_ms": 1000 * statistics.median(per[k]),
            "ratio": statistics.median(ratios),
            "max_param_diff": diff,
            "cpu_ms": 1000 * statistics.median(cpu[k]),
            "cpu_ratio": statistics.median(cpu_ratios),
        }
    return out


def adamw_alone(kinds, reps: int) -> dict:
    """Process CPU ms of ``optimizer.step()`` alone on MiniLM's parameters with fixed random gradients,
    alternating the variants; median over ``reps`` and the median per-round ratio to the first."""
    models = {k: make_model() for k in kinds}
    opts = {k: make_opt(models[k], k)[0] for k in kinds}
    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(p.shape, generator=g) * 1e-3 for p in models[kinds[0]].parameters()]
    for k in kinds:
        for p, gr in zip(models[k].parameters(), grads):
            p.grad = gr.clone()
        opts[k].step()  # warm-up (state allocation)
    t: dict[str, list[float]] = {k: [] for k in kinds}
    for i in range(reps):
        for k in kinds if i % 2 == 0 else list(reversed(kinds)):
            c0 = time.process_time()
            opts[k].step()
            t[k].append(1000 * (time.process_time() - c0))
    ref = kinds[0]
    return {
        k: {"ms": statistics.median(v), "ratio": statistics.median([a / b for a, b in zip(v, t[ref])])}
        for k, v in t.items()
    }


def eval_variants(data, n: int, batch: int, rounds: int) -> dict:
    """Process CPU s of predicting ``n`` SST-2 + ``n`` MRPC dev rows: sorted/unsorted × no_grad/inference_mode."""
    model = make_model()
    model.eval()
    sets = [(t, data[t].dev[""]) for t in ("sst2", "mrpc")]

    def run(sort: bool, ctx) -> float:
        c0 = time.process_time()
        with ctx():
            for t, d in sets:
                order = np.argsort(d.lengths[:n], kind="stable") if sort else np.arange(min(n, len(d)))
                for s in range(0, len(order), batch):
                    b = d.batch(order[s : s + batch])
                    model(
                        task=t,
                        input_ids=b["input_ids"],
                        attention_mask=b["attention_mask"],
                        token_type_ids=b["token_type_ids"],
                    )
        return time.process_time() - c0

    variants = {
        "file order, no_grad": (False, torch.no_grad),
        "length order, no_grad": (True, torch.no_grad),
        "length order, inference_mode": (True, torch.inference_mode),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    run(True, torch.no_grad)  # warm-up
    for i in range(rounds):
        for k in list(variants) if i % 2 == 0 else list(reversed(variants)):
            times[k].append(run(*variants[k]))
    ref = "length order, no_grad"
    return {
        k: {"cpu_s": statistics.median(v), "ratio": statistics.median([a / b for a, b in zip(v, times[ref])])}
        for k, v in times.items()
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--batch", default="16,32")
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=7, help="steps per phase measurement (the first is untimed)")
    p.add_argument("--variant-steps", type=int, default=9)
    p.add_argument("--eval-rows", type=int, default=256)
    p.add_argument("--glue-dir", default=os.environ.get("PALS_GLUE_DIR"))
    p.add_argument(
        "--parts",
        default="1,2,4,3",
        help="which parts to run (1 phases, 2 optimizer variants, 3 evaluation, 4 AdamW alone)",
    )
    args = p.parse_args()
    data = load_tasks(TASKS, load_tokenizer(tokenizer_path(None)), glue_dir=args.glue_dir, max_len=args.max_len)
    threads = [int(x) for x in args.threads.split(",")]
    batches = [int(x) for x in args.batch.split(",")]
    print(
        f"MiniLM-L6-H384 (shared design), tasks {','.join(TASKS)}, max_len {args.max_len}, torch {torch.__version__}, "
        f"load average {os.getloadavg()[0]:.2f} at start"
    )
    parts = {int(x) for x in args.parts.split(",")}
    if 1 in parts:
        print("\n1. phases of one training step (wall ms, median; the trainer's code path)")
        for th in threads:
            torch.set_num_threads(th)
            for bs in batches:
                ph = phases(data, trainer_rows(data, args.steps, bs), args.max_len)
                total = sum(v for k, v in ph.items() if not k.startswith("fwd+bwd padded"))
                cells = " · ".join(
                    f"{k} {v:.1f} ({100 * v / total:.1f}%)" for k, v in ph.items() if not k.startswith("fwd+bwd")
                )
                fb = ph["forward+loss"] + ph["backward"]
                print(
                    f"  {th} thread(s), batch {bs}: step {total:.0f} ms → {1000 / total:.3f} steps/s | {cells}",
                    flush=True,
                )
                print(
                    f"      forward+backward padded to {args.max_len}: {ph['fwd+bwd padded to max_len']:.0f} ms vs dynamic "
                    f"{fb:.0f} ms ({ph['fwd+bwd padded to max_len'] / fb:.2f}×)"
                )
    if 2 in parts:
        print(
            "\n2. optimizer variants, alternating steps on the same batches (per whole training step; median of the "
            "per-step ratios to the default; CPU = process CPU time, steadier than wall time on a loaded machine)"
        )
        kinds = ["default", "foreach", "fused"]
        for th in threads:
            torch.set_num_threads(th)
            for bs in batches:
                res = optimizer_variants(data, trainer_rows(data, args.variant_steps, bs, seed=1), kinds)
                cells = " · ".join(
                    f"{k}: wall {v['step_ms']:.0f} ms, ratio {v['ratio']:.3f}; CPU {v['cpu_ms']:.0f} ms "
                    f"({1000 / v['cpu_ms']:.3f} steps/CPU-s), ratio {v['cpu_ratio']:.3f}; "
                    f"max |Δθ| {v['max_param_diff']:.1e}"
                    for k, v in res.items()
                )
                print(f"  {th} thread(s), batch {bs}: {cells}", flush=True)
    if 4 in parts:
        print("\n4. AdamW step alone on MiniLM's 22.7M parameters (process CPU ms, median of 30, alternating)")
        for th in threads:
            torch.set_num_threads(th)
            res = adamw_alone(["default", "foreach", "fused"], 30)
            print(
                f"  {th} thread(s): " + " · ".join(f"{k} {v['ms']:.1f} ms ({v['ratio']:.3f}×)" for k, v in res.items()),
                flush=True,
            )
    if 3 in parts:
        print(
            f"\n3. evaluation, {args.eval_rows} SST-2 + {args.eval_rows} MRPC dev rows, batch 128 (process CPU s, median of 3)"
        )
        for th in threads:
            torch.set_num_threads(th)
            res = eval_variants(data, args.eval_rows, 128, 3)
            print(
                f"  {th} thread(s): "
                + " · ".join(f"{k} {v['cpu_s']:.2f} s ({v['ratio']:.3f}×)" for k, v in res.items()),
                flush=True,
            )
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
