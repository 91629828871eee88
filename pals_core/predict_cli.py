"""``pals-predict``: a trained run's predictions on new rows, every asked task in one pass per batch.

    pals-predict runs/mine --input new.csv --out predicted.csv                  # every task of the run
    pals-predict runs/mine --input new.jsonl --out p.parquet --tasks intent --probs
    pals-predict runs/mine --input requests.csv --out p.csv --task-column task  # each row names its own task

In: CSV, TSV, JSON Lines or Parquet (``pals_core.tasks.readers``). Out (the format by the extension): the input's
columns (one named like a prediction column is kept as ``<name> (input)``), then per task ``<task>`` — the label name (classification), the value (regression), the label set
(multilabel: a list, or the labels joined by the task's ``label_sep`` in CSV/TSV) — and ``<task>_prob``, the
predicted label's probability (classification); ``--probs`` adds ``<task>_prob_<label>`` for every label
(softmax; sigmoid for multilabel). The text columns default to the run's tasks' own (``--text``/``--text-pair``
otherwise). The run's best checkpoint is loaded (``--step N``: another kept one) with its tokenizer and max
length; rows are tokenised and batched as the run evaluated its dev sets, so a task's dev file scores here
exactly what summary.json reports. With ``--task-column`` rows of different tasks share each forward
(``MultiTaskModel.forward_mixed``), and only a row's own task column is filled.

RUN_DIR may also be a ``pals-export --format onnx`` folder: ``--engine onnx`` (the default ``auto`` picks it for a
folder with ``model.onnx`` and no checkpoints) serves it with onnxruntime (``pals_core.export.onnx.OnnxRunner``):
the same tokenising, batching and outputs, from the folder alone.

Exit status: 0 written · 2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .flags import OneLineParser, UsageError

OUT_FORMATS = (".csv", ".tsv", ".jsonl", ".parquet")
ENGINES = ("auto", "torch", "onnx")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="pals-predict", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", metavar="RUN_DIR", help="a pals-train run folder (config.json, checkpoints/)")
    p.add_argument("--input", required=True, metavar="FILE", help="rows to predict: .csv .tsv .jsonl .parquet")
    p.add_argument("--out", required=True, metavar="FILE", help="where to write: .csv .tsv .jsonl .parquet")
    p.add_argument("--tasks", metavar="T,T,…", help="tasks to predict (default: every task of the run)")
    p.add_argument("--text", metavar="COL", help="the text column (default: the tasks' own)")
    p.add_argument("--text-pair", metavar="COL", help="the second text column of pair tasks (default: the tasks' own)")
    p.add_argument("--task-column", metavar="COL", help="each row's task: rows of several tasks in one forward")
    p.add_argument("--probs", action="store_true", help="every label's probability, not only the predicted one's")
    p.add_argument("--batch-size", type=int, metavar="N", help="rows per forward (default: the run's eval batch)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="auto = CUDA when present")
    p.add_argument("--step", type=int, metavar="N", help="the checkpoint of step N (default: the best)")
    p.add_argument(
        "--engine",
        default="auto",
        choices=ENGINES,
        help="torch (a run folder) | onnx (a pals-export --format onnx folder) | auto: by the folder",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _text_columns(info, names: Sequence[str], text: Optional[str], pair: Optional[str]) -> tuple[str, Optional[str]]:
    """The text (and pair) columns: given, else the tasks' own — which must agree."""
    own = {info.records[t].text for t in names}
    if text is None:
        if len(own) != 1:
            raise UsageError(
                f"the tasks read different text columns ({'; '.join(sorted(map(', '.join, own)))}): "
                "give --text (and --text-pair)"
            )
        cols = next(iter(own))
        text, pair = cols[0], pair if pair is not None else (cols[1] if len(cols) > 1 else None)
    for t in names:
        if info.records[t].pair and pair is None:
            raise UsageError(f"task {t!r} reads a pair of texts: give --text-pair")
    return text, pair


def _texts(cols, column: str) -> list[str]:
    out = []
    for i, v in enumerate(cols.values[column]):
        if not isinstance(v, str) or not v.strip():
            raise UsageError(f"{cols.where(i, column)}: {'empty' if isinstance(v, str) else 'missing'} text")
        out.append(v)
    return out


def _device(name: str):
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no CUDA device")
    return torch.device("cuda" if name == "cuda" or (name == "auto" and torch.cuda.is_available()) else "cpu")


def engine_of(run_dir: str, engine: str) -> str:
    """torch or onnx: as asked, or (``auto``) onnx for a ``pals-export`` ONNX folder that is not a run folder."""
    from .export.onnx import is_onnx_export

    root = Path(run_dir)
    exported = is_onnx_export(root) and not (root / "config.json").is_file()
    if engine == "auto":
        return "onnx" if exported else "torch"
    if engine == "torch" and exported:
        raise UsageError(f"{run_dir} is an ONNX export (pals-export): it holds no torch weights; use --engine onnx")
    if engine == "onnx" and not is_onnx_export(root):
        raise UsageError(
            f"{run_dir} holds no ONNX export (model.onnx, export.json): "
            f"pals-export {run_dir} --format onnx --out DIR, then pals-predict DIR"
        )
    return engine


def _same_step(run_dir: str, exported: int, step: Optional[int]) -> None:
    """An ONNX export holds one step (-1: each task's best): ``--step`` must be that one."""
    if step is not None and step != exported:
        which = f"step {exported}" if exported >= 0 else "each task's best step"
        raise UsageError(
            f"{run_dir} is an ONNX export of {which}: --step {step} needs the run folder (or an export of that step)"
        )


def read_info(run_dir: str, engine: str, step: Optional[int]):
    """The run's tasks, records, labels and max length from its files (config.json and the checkpoint index, or an
    export's export.json), without loading any weights: what the input is checked against before the model loads."""
    if engine == "onnx":
        from .export.onnx import exported_run, read_export

        info = exported_run(Path(run_dir), read_export(Path(run_dir)))
        _same_step(run_dir, info.step, step)
        return info
    from .run_info import read_run

    return read_run(run_dir, step)


def load_predictor(run_dir: str, engine: str, step: Optional[int], device: str):
    """The run's model (torch) or an ``OnnxRunner`` over an export (onnx): the same predict interface."""
    if engine == "onnx":
        from .export.onnx import OnnxRunner

        runner = OnnxRunner(run_dir, device=device)
        _same_step(run_dir, runner.run.step, step)
        return runner
    from .model import MultiTaskModel

    return MultiTaskModel.from_run(run_dir, step=step, device=_device(device))


def where_it_ran(model) -> str:
    """The device a model ran on, or the onnxruntime provider an ``OnnxRunner`` ran on (for the closing line)."""
    label = getattr(model, "device_label", None)
    return label or next(model.parameters()).device.type


def predict_rows(model, texts, pairs, names, task_of, batch_size, progress) -> dict:
    """{task: TaskOutputs} over every row (each task on every row), or — ``task_of`` given — each row through its
    own task only, batches shared by the tasks (``forward_mixed``): {task: (row indices, TaskOutputs)}."""
    import torch

    from .outputs import decode
    from .run_info import encode_texts, predict_texts

    if task_of is None:
        return predict_texts(model, texts, pairs, tasks=names, batch_size=batch_size, progress=progress)
    info = model.run
    data = encode_texts(info, texts, pairs, [info.records[t].pair for t in task_of])
    device = next(model.parameters()).device
    order = np.argsort(data.lengths, kind="stable")
    rows_of = {t: np.array([i for i, x in enumerate(task_of) if x == t], dtype=np.int64) for t in names}
    logits = {t: np.zeros((len(texts), model.tasks[t]), dtype=np.float32) for t in names}
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            b = data.batch(rows)
            out = model.forward_mixed(
                b["input_ids"].to(device),
                b["attention_mask"].to(device),
                b["token_type_ids"].to(device),
                tasks=[task_of[r] for r in rows],
            )
            for r, row_logits in zip(rows, out):
                logits[task_of[r]][r] = row_logits.float().cpu().numpy()
            progress(len(rows))
    return {t: (idx, decode(t, info.records[t].kind, info.labels[t], logits[t][idx])) for t, idx in rows_of.items()}


def output_columns(info, results: dict, n: int, probs: bool, joined: bool) -> dict[str, list]:
    """The prediction columns (see the module docstring); a row a task did not predict holds None."""
    out: dict[str, list] = {}
    for t, res in results.items():
        idx, o = res if isinstance(res, tuple) else (np.arange(n), res)
        sep = info.records[t].label_sep or ","
        label = [None] * n
        for i, v in zip(idx, o.label):
            label[i] = sep.join(v) if (joined and isinstance(v, list)) else v
        out[t] = label
        if o.prob is not None:
            col = [None] * n
            for i, v in zip(idx, o.prob):
                col[i] = float(v)
            out[f"{t}_prob"] = col
        if probs and o.probs is not None:
            for j, name in enumerate(o.labels):
                col = [None] * n
                for i, v in zip(idx, o.probs[:, j]):
                    col[i] = float(v)
                out[f"{t}_prob_{name}"] = col
    return out


def write_table(path: Path, columns: dict[str, list]) -> None:
    """``columns`` to ``path`` (the format by its extension), atomically."""
    from .atomic import atomic_write, atomic_write_text

    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        names = list(columns)
        rows = zip(*(columns[c] for c in names))
        atomic_write_text(
            path, "".join(json.dumps(dict(zip(names, r)), ensure_ascii=False, default=str) + "\n" for r in rows)
        )
        return
    import pyarrow as pa

    table = pa.Table.from_pydict(columns)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    else:
        import pyarrow.csv as pacsv

        delimiter = "\t" if suffix == ".tsv" else ","
        quoting = "needed" if delimiter == "," else "none"
        atomic_write(
            path,
            lambda tmp: pacsv.write_csv(table, tmp, pacsv.WriteOptions(delimiter=delimiter, quoting_style=quoting)),
        )


def run(argv: Optional[Sequence[str]] = None) -> str:
    from tqdm.auto import tqdm

    from .tasks.readers import read_columns

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    if out.suffix.lower() not in OUT_FORMATS:
        raise UsageError(f"--out {out}: unknown format {out.suffix or '(no extension)'!r} ({', '.join(OUT_FORMATS)})")
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder")
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError(f"--batch-size must be a positive integer, got {args.batch_size}")
    engine = engine_of(args.run_dir, args.engine)
    cols = read_columns(args.input, None)
    info = read_info(args.run_dir, engine, args.step)  # the input is checked against it before any weight loads
    tasks = list(info.num_labels)
    names = tasks if not args.tasks else [t.strip() for t in args.tasks.split(",") if t.strip()]
    for t in names:
        if t not in tasks:
            raise UsageError(f"task {t!r} is not a task of {args.run_dir} ({', '.join(tasks)})")
    task_of = None
    if args.task_column is not None:
        if args.task_column not in cols.values:
            raise UsageError(f"{args.input}: no column {args.task_column!r} (it has {', '.join(cols.values)})")
        task_of = [str(v) if v is not None else "" for v in cols.values[args.task_column]]
        for i, t in enumerate(task_of):
            if t not in names:
                raise UsageError(f"{cols.where(i, args.task_column)}: task {t!r} is not one of {', '.join(names)}")
        names = [t for t in names if t in set(task_of)]
    text, pair = _text_columns(info, names, args.text, args.text_pair)
    for c in (text, pair):
        if c is not None and c not in cols.values:
            raise UsageError(f"{args.input}: no text column {c!r} (it has {', '.join(cols.values)}; --text COL)")
    texts = _texts(cols, text)
    pairs = _texts(cols, pair) if pair is not None and any(info.records[t].pair for t in names) else None
    n = len(texts)
    model = load_predictor(args.run_dir, engine, args.step, args.device)
    info = model.run
    size = args.batch_size or info.eval_batch_size
    started = time.perf_counter()
    with tqdm(total=n, desc="pals-predict", unit="row", disable=args.no_progress or n < 2 * size) as bar:
        results = predict_rows(model, texts, pairs, names, task_of, size, bar.update)
    seconds = time.perf_counter() - started
    predicted = output_columns(info, results, n, args.probs, joined=out.suffix.lower() in (".csv", ".tsv"))
    kept = {(f"{c} (input)" if c in predicted else c): v for c, v in cols.values.items()}  # a label column named
    renamed = [c for c in cols.values if c in predicted]  # like its task (intent: intent) is kept, renamed
    write_table(out, {**kept, **predicted})
    note = f" · input column(s) {', '.join(renamed)} kept as '<name> (input)'" if renamed else ""
    step = f"step {info.step}" if info.step >= 0 else "each task's best step"
    return (
        f"{out}: {n:,} rows · {', '.join(names)} · {step} of {args.run_dir} · "
        f"{n / seconds:,.0f} rows/s ({seconds:.2f} s on {where_it_ran(model)}){note}"
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        print(run(argv), file=sys.stderr)
    except (UsageError, ValueError, OSError) as e:
        print(f"pals-predict: error: {' '.join(str(e).split()) or type(e).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
