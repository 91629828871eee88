"""``pals-export``: a trained run handed over in a format others serve (docs/design.md "Using a trained run").

    pals-export runs/mine --format onnx --out exported/        # one graph, every task; tokenizer + export.json
    pals-export runs/mine --format peft --out adapters/        # DIR/base + DIR/<task> peft adapters (LoRA, IA³)
    pals-export runs/mine --format hf --out merged/            # DIR/<task> merged transformers models (LoRA, IA³)

Every peft / hf task folder holds a model card (README.md) giving the transformers ``pipeline(...)`` call that
reproduces pals-predict on it; a peft adapter names the base it was trained on (a frozen trunk: the checkpoint the
run started from, by its hub id where it records one; a fine-tuned one: ``DIR/base``).

onnx works for every design (a ``--method separate`` folder too: one graph with every task's model): ``model.onnx``
with inputs input_ids, attention_mask (and token_type_ids where the family reads them), dynamic batch and sequence
axes and one logits output per task, named after the task, with its kind's axes (printed: [batch, C] for a sentence
task, [batch, sequence, C] for a tagging task); the run's tokenizer and ``export.json`` (tasks, label
names, max length) beside it, so ``pals-predict DIR`` serves from the folder alone. Before the folder is published
onnxruntime's logits are compared with torch's on a few dev rows of every task (``--no-check`` skips it). peft and hf
express LoRA and IA³ runs; other designs are refused. The best checkpoint is exported (``--step N``: another kept one).

Exit status: 0 written · 1 the export failed (torch could not trace it, or its logits differ) · 2 bad input or a
format that cannot express the design (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..atomic import read_json_file
from ..export import ExportFailed, ExportRefused
from ..flags import OneLineParser, UsageError

FORMATS = ("onnx", "peft", "hf")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="pals-export", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", metavar="RUN_DIR", help="a pals-train run folder (config.json, checkpoints/)")
    p.add_argument("--format", required=True, choices=FORMATS, help="onnx (every design) | peft | hf (LoRA, IA³)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write (new, or empty)")
    p.add_argument("--step", type=int, metavar="N", help="the checkpoint of step N (default: the best)")
    p.add_argument("--opset", type=int, metavar="N", help="ONNX opset (default: 17, the least accepted)")
    p.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="onnx: compare onnxruntime's logits with torch's on a few dev rows before publishing",
    )
    return p


def _say(line: str) -> None:
    print(f"pals-export: {line}", file=sys.stderr, flush=True)


def _load(args) -> list:
    from ..export.onnx import load_models  # late: loads numpy

    _say(f"loading {args.run_dir}{f' (step {args.step})' if args.step is not None else ''} …")
    return load_models(args.run_dir, args.step)


def unfinished(models: list) -> list[str]:
    """A line for each model whose run has not finished (no summary.json): still training (a trainer holds its lock)
    or stopped, with the step its progress.json reached and the checkpoint step the export takes."""
    from ..train.lock import holder  # late: loads numpy

    lines = []
    for m in models:
        root = Path(m.run.path)
        if (root / "summary.json").is_file():
            continue
        try:
            progress = read_json_file(root / "progress.json", "progress.json")
        except ValueError:
            progress = {}
        progress = progress if isinstance(progress, dict) else {}
        at = f"at step {progress.get('step')} of {progress.get('total')}" if "step" in progress else "unfinished"
        pid = holder(root)
        state = f"is still training ({at}, pid {pid})" if pid else f"has not finished ({at}, no summary.json)"
        lines.append(f"{root} {state}: exported its best checkpoint so far, step {m.run.step}")
    return lines


def _onnx(args, out: Path) -> str:
    from ..export.onnx import DEFAULT_OPSET, INPUT_AXES, check_opset, export_onnx, shapes_text  # late: loads numpy

    opset = check_opset(DEFAULT_OPSET if args.opset is None else args.opset)
    models = _load(args)
    notes = unfinished(models)
    for line in notes:
        _say(line)
    _say(f"tracing {', '.join(t for m in models for t in m.tasks)} to ONNX (opset {opset}) …")
    started = time.perf_counter()
    done = export_onnx(
        models if len(models) > 1 else models[0], out, opset=opset, check=args.check, run_dir=args.run_dir
    )
    meta = done.meta
    steps = sorted({d["step"] for d in meta["tasks"].values()})
    lines = [
        f"{out}: {', '.join(done.files)} ({time.perf_counter() - started:.1f} s)",
        f"  graph: inputs {', '.join(done.inputs)} [{', '.join(INPUT_AXES)}] · opset {done.opset} · "
        f"{meta['method']} on {meta['family']} · step {', '.join(map(str, steps))} of {args.run_dir} · "
        f"max_len {meta['max_len']}",
        f"  outputs (logits): {shapes_text(meta)}",
    ]
    if done.max_abs_diff is not None:
        lines.append(
            f"  check: onnxruntime vs torch max |Δ logit| = {done.max_abs_diff:.2e} on {done.check_rows} "
            f"{done.check_source}"
        )
    lines.append(f"  serve: pals-predict {out} --input FILE --out FILE")
    lines += [f"  note: {line}" for line in notes]
    return "\n".join(lines)


def _peft(args, out: Path) -> str:
    if args.opset is not None:
        raise UsageError(f"--opset is an ONNX setting: it does not apply to --format {args.format}")
    try:
        from ..export.peft import export_hf, export_peft  # late: loads torch
    except ImportError:
        raise UsageError(
            f"--format {args.format} is not available in this installation (pals_core.export.peft)"
        ) from None
    models = _load(args)
    if len(models) > 1:
        raise ExportRefused(
            f"{args.run_dir} is a separate-models folder (one fully fine-tuned model per task): "
            f"--format {args.format} expresses LoRA and IA³ runs; use --format onnx"
        )
    notes = unfinished(models)
    for line in notes:
        _say(line)
    model = models[0]
    written = (export_peft if args.format == "peft" else export_hf)(model, out)
    lines = [f"{written}: {args.format} export of {args.run_dir} (step {model.run.step})"]
    if args.format == "peft":
        named = read_json_file(written / next(iter(model.tasks)) / "adapter_config.json", "adapter_config.json")
        lines.append(f"  base: {named['base_model_name_or_path']} (the trunk as trained: {written / 'base'})")
    lines += [
        f"  {', '.join(model.tasks)}: one folder each; its README.md gives the pipeline(...) call that reproduces "
        "pals-predict",
        *(f"  note: {n}" for n in notes),
    ]
    return "\n".join(lines)


def run(argv: Sequence[str] | None = None) -> str:
    from ..export.onnx import check_out  # late: loads numpy

    args = build_parser().parse_args(argv)
    if not Path(args.run_dir).is_dir():
        raise UsageError(f"{args.run_dir}: no such run folder")
    out = check_out(args.out)
    if args.format == "onnx":
        return _onnx(args, out)
    return _peft(args, out)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        print(run(argv))
    except ExportFailed as e:
        print(f"pals-export: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    except (UsageError, ValueError, OSError) as e:  # ExportRefused is a ValueError: its reason, exit 2
        print(f"pals-export: error: {' '.join(str(e).split()) or type(e).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
