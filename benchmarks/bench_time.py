"""Step time and memory: the calculator's predictions beside torch's measurements, on this machine.

    .venv/bin/python benchmarks/bench_time.py                 # MiniLM shape, 8 GLUE tasks, budget 1.13×, B = 4, n = 128
    .venv/bin/python benchmarks/bench_time.py --model deberta  # the same designs on a DeBERTa-v3 shape (or modernbert)

1. ``pals-calibrate``'s measurement of this machine (the ``local`` profile, one torch thread), then for each design
   at the size the solver picks: the predicted training-step time ratio against the base model with one task head
   (``time_ratio``), the FLOP ratio (``flops_per_seq`` ratio) and the measured ratio. Target: predicted within
   ±10 % of measured. The clock is the process's CPU time with one thread; designs are timed round-robin, the order
   rotating each round; a measured ratio is the median over rounds of (design / base in the same round), so the
   machine's drifts (it is shared) cancel.
2. Training memory: the calculator's ``memory_train.activations`` beside the bytes autograd saves, the optimizer
   figure beside AdamW's state, and on a CUDA device the predicted peak beside ``torch.cuda.max_memory_allocated``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))  # memory_probe

import torch  # noqa: E402
from memory_probe import batch_inputs, cuda_step_peak_bytes, saved_activation_bytes  # noqa: E402  (tests/)
from transformers import AutoConfig  # noqa: E402

from pals_core.budget.costs import design, evaluate  # noqa: E402
from pals_core.budget.solver import Budget  # noqa: E402
from pals_core.budget.table import rows  # noqa: E402
from pals_core.budget.tasks import parse_tasks  # noqa: E402
from pals_core.cli.calibrate import measure  # noqa: E402
from pals_core.families.shapes import conditions_from_config, from_hf_config  # noqa: E402
from pals_core.footprint.memory import memory_train  # noqa: E402
from pals_core.footprint.timing import step_seconds  # noqa: E402
from pals_core.model import MultiTaskBert  # noqa: E402
from pals_core.pricing.config import AdapterConfig, design_label  # noqa: E402

MINILM = dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, vocab_size=30522)
# the same width and depth in the other families' layouts (DeBERTa-v3's relative attention, ModernBERT's GLU and RoPE)
MODELS = {
    "minilm": (
        dict(MINILM, model_type="bert"),
        ("hidden_dropout_prob", "attention_probs_dropout_prob"),
        "MiniLM shape (d = 384, L = 6, h = 12)",
    ),
    "deberta": (
        dict(
            MINILM,
            model_type="deberta-v2",
            type_vocab_size=0,
            relative_attention=True,
            position_buckets=256,
            max_relative_positions=-1,
            pos_att_type="p2c|c2p",
            share_att_key=True,
            position_biased_input=False,
            norm_rel_ebd="layer_norm",
        ),
        ("hidden_dropout_prob", "attention_probs_dropout_prob"),
        "DeBERTa-v3 layout at the MiniLM shape (d = 384, L = 6, h = 12, k = 256)",
    ),
    "modernbert": (
        dict(
            MINILM,
            model_type="modernbert",
            intermediate_size=576,
            local_attention=128,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            cls_token_id=1,
            sep_token_id=2,
        ),
        ("mlp_dropout", "attention_dropout"),
        "ModernBERT layout at the MiniLM width (d = 384, L = 6, h = 12, GLU d_ff = 576, window 128)",
    ),
}
DESIGNS = [
    ("shared", None),
    ("pals", "all"),
    ("pals", "top"),
    ("low_rank", "all"),
    ("houlsby", "all"),
    ("lora", "all"),
    ("ia3", "all"),
    ("lhuc", "all"),
    ("proj_attn_top", None),
    ("proj_ffn_top", None),
    ("bert_layer_top", None),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--budget", type=float, default=1.13)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dropout", type=float, default=0.1, help="the model's hidden and attention dropout")
    ap.add_argument("--model", choices=sorted(MODELS), default="minilm", help="the base model's family layout")
    args = ap.parse_args()
    torch.set_num_threads(1)
    profile = measure(1)
    print(
        f"local profile: {profile.matmul_flops / 1e9:.1f} GFLOP/s, {profile.bandwidth / 1e9:.1f} GB/s, "
        f"{profile.kernel_overhead_s * 1e6:.1f} µs/op, rng {profile.rng_s_per_element * 1e9:.2f} ns/elt"
    )
    fields, dropouts, title = MODELS[args.model]
    fields = dict(fields, **{name: args.dropout for name in dropouts})
    hf = AutoConfig.for_model(fields.pop("model_type"), **fields)
    shape, tasks = from_hf_config(hf.to_dict(), name=args.model), parse_tasks(8)
    cond = conditions_from_config(hf.to_dict() | {"attn_implementation": hf._attn_implementation})
    B, n = args.batch, args.seq_len
    entries = []
    for method, loc in DESIGNS:
        [row] = rows(shape, tasks, budget=Budget(ratio=args.budget), methods=[method], location=loc, seq_len=n)
        cfg = AdapterConfig(method=method, d_s=row.d_s, location=loc)
        ds = design(shape, tasks, cfg, seq_len=n)
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(hf, cfg, {t.name: t.num_labels for t in tasks}).train()
        entries.append(
            dict(
                label=design_label(method, loc),
                d_s=row.d_s,
                ds=ds,
                model=model,
                flops=row.flops_per_seq,
                predicted=step_seconds(ds, row.d_s, B, cond, profile),
                times=[],
            )
        )
    base = entries[0]
    inputs = batch_inputs(base["model"], B, n)

    def step(model) -> float:
        model.zero_grad(set_to_none=True)
        t = time.process_time()
        model(task="cola", **inputs).sum().backward()
        return time.process_time() - t

    for e in entries:
        step(e["model"])
    ratios = {e["label"]: [] for e in entries}
    wall0 = time.perf_counter()
    for r in range(args.rounds):
        order = entries[r % len(entries) :] + entries[: r % len(entries)]
        got = {e["label"]: step(e["model"]) for e in order}
        for e in entries:
            e["times"].append(got[e["label"]])
            ratios[e["label"]].append(got[e["label"]] / got[base["label"]])
    print(
        f"\n{title}, 8 GLUE tasks, budget {args.budget}×, B = {B}, n = {n}, dropout {args.dropout}, "
        f"{cond.attention}, 1 thread; {args.rounds} interleaved rounds ({time.perf_counter() - wall0:.0f} s wall)"
    )
    print(
        f"{'design':22s} {'d_s':>4s} {'FLOPs ratio':>11s} {'predicted':>9s} {'measured':>9s} {'pred/meas':>9s} "
        f"{'step s (pred)':>13s} {'step s (meas)':>13s}"
    )
    worst = 0.0
    for e in entries:
        measured = statistics.median(ratios[e["label"]])
        predicted = e["predicted"] / base["predicted"]
        flops = e["flops"] / base["flops"]
        if e is not base:
            worst = max(worst, abs(predicted / measured - 1))
        print(
            f"{e['label']:22s} {str(e['d_s'] or '—'):>4s} {flops:11.3f} {predicted:9.3f} {measured:9.3f} "
            f"{predicted / measured:9.3f} {e['predicted']:13.3f} {statistics.median(e['times']):13.3f}"
        )
    print(f"largest |predicted / measured − 1| = {100 * worst:.1f} % (target ≤ 10 %)")

    print(f"\nTraining memory (B = {B}, n = {n}): calculator vs torch")
    print(f"{'design':22s} {'activations (calc)':>18s} {'(torch)':>12s} {'total MiB':>10s}")
    for e in entries:
        ds, s = e["ds"], e["d_s"]
        mem = memory_train(ds, s, evaluate(ds, s), batch=B, cond=cond)
        got = saved_activation_bytes(e["model"], "cola", B, n)
        print(f"{e['label']:22s} {mem.activations:18,d} {got:12,d} {mem.total / 2**20:10.1f}")
    if torch.cuda.is_available():
        gpu_cond = replace(cond, backend="cuda")
        print("\nCUDA peak (torch.cuda.max_memory_allocated) vs predicted total (cuda backend)")
        for e in entries:
            ds, s = e["ds"], e["d_s"]
            mem = memory_train(ds, s, evaluate(ds, s), batch=B, cond=gpu_cond)
            peak = cuda_step_peak_bytes(e["model"].cuda(), "cola", B, n)
            print(
                f"{e['label']:22s} predicted {mem.total / 2**20:9.1f} MiB  measured {peak / 2**20:9.1f} MiB  "
                f"ratio {mem.total / peak:.3f}"
            )
    else:
        print("\n(no CUDA device: the torch.cuda.max_memory_allocated comparison is skipped)")


if __name__ == "__main__":
    main()
