"""``pals-predict``: a trained run's predictions on new rows, every asked task in one pass per batch.

    pals-predict runs/mine --input new.csv --out predicted.csv                  # every task of the run
    pals-predict runs/mine --input new.jsonl --out p.parquet --tasks intent --probs
    pals-predict runs/mine --input requests.csv --out p.csv --task-column task  # each row names its own task
    pals-predict runs/mine --input ner_dev.conll --out tagged.conll             # the run's per-word tasks

In: CSV, TSV, JSON Lines, Parquet or a CoNLL file (``pals_core.tasks.readers``; a CoNLL file, or a ``.conll`` output,
predicts the run's per-word tasks unless ``--tasks`` names others). Out (the format by the extension): the input's
columns (one named like a prediction column is kept as ``<name> (input)``, or ``<name> (input 2)``, … when the input has
that name too: never dropped, and the closing line names each), then per task ``<task>`` — the label name
(classification), the value (regression), the label set
(multilabel: a list, or the labels joined by the task's ``label_sep`` in CSV/TSV), the tag of each word (tokens: a
list, space-joined in CSV/TSV; a sentence longer than the max length is read in the run's overlapping windows; a
word the tokenizer reduces to nothing — or, in a run trained with ``--truncate``, one past the max length — gets the
baseline's tag, counted in the closing line; the text is a list of words, or split at whitespace), the chosen
candidate's position (choice: ``<task>_text`` its text; the task's own context and candidate columns are read, as its
training read them) — and ``<task>_prob``, the predicted label's probability (classification, choice); ``--probs``
adds ``<task>_prob_<label>`` for every label
(softmax; sigmoid for multilabel). The text columns default to the run's tasks' own (``--text``/``--text-pair``
otherwise). The run's best checkpoint is loaded (``--step N``: another kept one) with its tokenizer and max
length; rows are tokenised and batched as the run evaluated its dev sets, so a task's dev file scores here
exactly what summary.json reports. With ``--task-column`` rows of different tasks share each forward
(``MultiTaskModel.forward_mixed``), and only a row's own task column is filled. Words and tags (every column of a
CoNLL input, a per-word task's words and tags) are space-joined in CSV/TSV like the predicted tags. ``.conll``
(per-word tasks only): a word a line — the input's columns (a CoNLL input's: word, the gold tag, …; another input's:
the word and each task's gold tag where it holds one), then each task's predicted tag — a blank line between rows.

RUN_DIR may also be a ``pals-export --format onnx`` folder: ``--engine onnx`` (the default ``auto`` picks it for a
folder with ``model.onnx`` and no checkpoints) serves it with onnxruntime (``pals_core.export.onnx.OnnxRunner``):
the same tokenising, batching and outputs, from the folder alone.

``--out`` is checked before anything is read or computed (``check_out``): an existing file is refused unless
``--overwrite`` is given; the input file and a run's own files (``config.json``, ``metrics.jsonl``, …, anything under
``checkpoints/``) are refused even then; a missing folder is named. The file is written atomically (a temporary file
beside it, then renamed): a failure leaves what was there. Columns a CSV, TSV or Parquet file cannot hold (strings
and numbers in one column of a JSON Lines input) are named, row and column, before predicting.

Exit status: 0 written · 2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..data.words import empty_words
from ..export.onnx import OnnxRunner, exported_run, is_onnx_export, read_export
from ..flags import OneLineParser, UsageError
from ..forward import words_of
from ..kinds import get_kind
from ..run_info import predict_texts, read_run
from ..tasks.readers import conll_index, read_columns
from ..train.rundir import run_owning
from .predict_out import (
    JOINED,
    check_writable,
    conll_columns,
    kept_input_columns,
    output_columns,
    prediction_columns,
    space_joined,
    word_columns,
    write_conll,
    write_table,
)

OUT_FORMATS = (".csv", ".tsv", ".jsonl", ".parquet", ".conll")
ENGINES = ("auto", "torch", "onnx")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="pals-predict", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", metavar="RUN_DIR", help="a pals-train run folder (config.json, checkpoints/)")
    p.add_argument("--input", required=True, metavar="FILE", help="rows to predict: .csv .tsv .jsonl .parquet .conll")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="where to write: .csv .tsv .jsonl .parquet (a new file), or .conll (per-word tasks: a word a line)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace --out if it exists (never the input file, nor a run's own files)",
    )
    p.add_argument(
        "--tasks",
        metavar="T,T,…",
        help="tasks to predict (default: every task of the run; for a .conll input, its per-word tasks)",
    )
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


def _text_columns(info, names: Sequence[str], text: str | None, pair: str | None) -> tuple[str, str | None]:
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


def _texts(cols, column: str, rows: Sequence[int] | None = None) -> list:
    """The texts of ``column``: strings, or lists of words (a tagging task's rows, JSON Lines / Parquet); ``rows``:
    those rows only (the others None)."""
    out = []
    keep = None if rows is None else set(rows)
    for i, v in enumerate(cols.values[column]):
        if keep is not None and i not in keep:
            out.append(None)
            continue
        if isinstance(v, (list, tuple)) and v and all(isinstance(w, str) and w.strip() for w in v):
            out.append(list(v))
            continue
        if not isinstance(v, str) or not v.strip():
            raise UsageError(f"{cols.where(i, column)}: {'empty' if isinstance(v, str) else 'missing'} text")
        out.append(v)
    return out


def own_texts(info, names: Sequence[str], cols, path: str, task_of: Sequence[str] | None) -> dict[str, tuple]:
    """The tasks whose kind reads its rows' sequences itself (``Kind.own_texts``: a multiple-choice task's context and
    candidates), each read as its training read its rows (``Kind.texts``; with ``task_of``, its own rows only):
    task → (first segments, second segments or None, the text each label stands for), one entry a row of the input
    (None for another task's row)."""
    out = {}
    n = len(next(iter(cols.values.values()), []))
    for t in names:
        record = info.records[t]
        kind = get_kind(record.kind)
        if not kind.own_texts:
            continue
        rows = [i for i in range(n) if task_of is None or task_of[i] == t]
        named = kind.row_columns(record, path, lambda: list(cols.values))  # None: the kind finds its own
        needed = [c for c in named or () if c != record.label]
        missing = [c for c in needed if c not in cols.values]
        if missing:
            raise UsageError(
                f"{path}: no column {', '.join(map(repr, missing))} (task {t!r} reads {', '.join(map(repr, needed))})"
            )
        some = cols.subset(rows)
        firsts, seconds = kind.texts(record, some)
        meant = kind.label_texts(record, some)
        full = [[None] * n, None if seconds is None else [None] * n, [None] * n]
        for j, i in enumerate(rows):
            full[0][i], full[2][i] = firsts[j], meant[j]
            if seconds is not None:
                full[1][i] = seconds[j]
        out[t] = tuple(full)
    return out


def _device(name: str):
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no CUDA device")
    return torch.device("cuda" if name == "cuda" or (name == "auto" and torch.cuda.is_available()) else "cpu")


def engine_of(run_dir: str, engine: str) -> str:
    """torch or onnx: as asked, or (``auto``) onnx for a ``pals-export`` ONNX folder that is not a run folder."""
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


def _same_step(run_dir: str, exported: int, step: int | None) -> None:
    """An ONNX export holds one step (-1: each task's best): ``--step`` must be that one."""
    if step is not None and step != exported:
        which = f"step {exported}" if exported >= 0 else "each task's best step"
        raise UsageError(
            f"{run_dir} is an ONNX export of {which}: --step {step} needs the run folder (or an export of that step)"
        )


def read_info(run_dir: str, engine: str, step: int | None):
    """The run's tasks, records, labels and max length from its files (config.json and the checkpoint index, or an
    export's export.json), without loading any weights: what the input is checked against before the model loads."""
    if engine == "onnx":
        info = exported_run(Path(run_dir), read_export(Path(run_dir)))
        _same_step(run_dir, info.step, step)
        return info

    return read_run(run_dir, step)


def load_predictor(run_dir: str, engine: str, step: int | None, device: str):
    """The run's model (torch) or an ``OnnxRunner`` over an export (onnx): the same predict interface."""
    if engine == "onnx":
        runner = OnnxRunner(run_dir, device=device)
        _same_step(run_dir, runner.run.step, step)
        return runner
    from ..model import MultiTaskModel  # late: loads torch

    return MultiTaskModel.from_run(run_dir, step=step, device=_device(device))


def where_it_ran(model) -> str:
    """The device a model ran on, or the onnxruntime provider an ``OnnxRunner`` ran on (for the closing line)."""
    label = getattr(model, "device_label", None)
    return label or next(model.parameters()).device.type


def chosen_tasks(info, asked: str | None, words: str | None, run_dir: str) -> list[str]:
    """The tasks to predict: ``--tasks``' (each a task of the run), else every task of the run — but for words to tag
    (``words``: what says so, a CoNLL input or a ``.conll`` output) the run's per-word tasks: a sentence task runs on
    them only when named."""
    tasks = list(info.num_labels)
    if asked:
        names = [t.strip() for t in asked.split(",") if t.strip()]
        for t in names:
            if t not in tasks:
                raise UsageError(f"task {t!r} is not a task of {run_dir} ({', '.join(tasks)})")
        return names
    if words is None:
        return tasks
    per_word = [t for t in tasks if get_kind(info.records[t].kind).per_word]
    if not per_word:
        raise UsageError(f"{words} and {run_dir} has no per-word task ({', '.join(tasks)}): give --tasks")
    return per_word


def check_out(out: Path, input_file: str, run_dir: str, overwrite: bool) -> None:
    """``--out`` before anything is read or computed: a known format, in a folder that exists, not the input file
    nor a run's own file (``rundir.run_owning``; ``--overwrite`` does not apply), not an existing file unless
    ``--overwrite`` (and then a regular file). ``UsageError`` in one line."""
    import os
    import stat

    if out.suffix.lower() not in OUT_FORMATS:
        raise UsageError(f"--out {out}: unknown format {out.suffix or '(no extension)'!r} ({', '.join(OUT_FORMATS)})")
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder")
    folder = out.parent
    if not folder.is_dir():
        raise UsageError(
            f"--out {out}: the folder {folder} {'is not a folder' if folder.exists() else 'does not exist'} "
            "(create it first)"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: the folder {folder} is not writable")
    try:
        same = os.path.samefile(out, input_file)
    except OSError:
        same = False
    if same:
        raise UsageError(
            f"--out {out} is the input file {input_file}: pals-predict never overwrites its input "
            "(--overwrite does not apply); give another --out"
        )
    run = run_owning(out, (run_dir,))
    if run is not None:
        raise UsageError(
            f"--out {out} is a file of the run {run}: pals-predict never writes a run's own files "
            "(--overwrite does not apply); give another --out"
        )
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise UsageError(f"--out {out} exists: give --overwrite to replace it, or another --out")
        if not out.exists() or not stat.S_ISREG(out.stat().st_mode):
            raise UsageError(f"--out {out} exists and is not a regular file: give another --out")


def run(argv: Sequence[str] | None = None) -> str:
    from tqdm.auto import tqdm

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    check_out(out, args.input, args.run_dir, args.overwrite)
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError(f"--batch-size must be a positive integer, got {args.batch_size}")
    engine = engine_of(args.run_dir, args.engine)
    cols = read_columns(args.input, None)
    info = read_info(args.run_dir, engine, args.step)  # the input is checked against it before any weight loads
    words = (
        f"{args.input} is a CoNLL file (words to tag)"
        if cols.numbers is not None
        else (f"--out {out} is a CoNLL file (words and their tags)" if out.suffix.lower() == ".conll" else None)
    )
    names = chosen_tasks(info, args.tasks, words, args.run_dir)
    task_of = None
    if args.task_column is not None:
        if args.task_column not in cols.values:
            raise UsageError(f"{args.input}: no column {args.task_column!r} (it has {', '.join(cols.values)})")
        task_of = [str(v) if v is not None else "" for v in cols.values[args.task_column]]
        for i, t in enumerate(task_of):
            if t not in names:
                raise UsageError(f"{cols.where(i, args.task_column)}: task {t!r} is not one of {', '.join(names)}")
        names = [t for t in names if t in set(task_of)]
    own = own_texts(info, names, cols, args.input, task_of)
    plain = [t for t in names if t not in own]
    n = len(next(iter(cols.values.values()), []))
    texts: list = [None] * n
    pairs: list | None = None
    text = None
    if plain:
        text, pair = _text_columns(info, plain, args.text, args.text_pair)
        if (
            cols.numbers is not None
        ):  # a CoNLL file (its columns named by number): a record's column read as training reads it
            k = conll_index(text, len(cols.values))
            text = text if k is None else str(k)
        for c in (text, pair):
            if c is not None and c not in cols.values:
                raise UsageError(f"{args.input}: no text column {c!r} (it has {', '.join(cols.values)}; --text COL)")
        mine = None if task_of is None else [i for i in range(n) if task_of[i] in plain]
        texts = _texts(cols, text, mine)
        wanted = pair is not None and any(info.records[t].pair for t in plain)
        pairs = _texts(cols, pair, mine) if wanted else None
    if task_of is not None and own:  # each row's own texts: a choice row its candidates'
        pairs = pairs if pairs is not None else [None] * n
        for t, (firsts, seconds, _) in own.items():
            for i in range(n):
                if task_of[i] == t:
                    texts[i], pairs[i] = firsts[i], None if seconds is None else seconds[i]
    suffix = out.suffix.lower()
    if suffix == ".conll":
        repeated = conll_columns(cols, info, names, text, texts, args.task_column, out)
    else:
        planned = prediction_columns(info, names, args.probs)
        kept = kept_input_columns(list(cols.values), list(planned))
        joined = word_columns(cols, info, names, text) if suffix in JOINED else ()
        inputs = {c: space_joined(cols, c) if c in joined else v for c, v in cols.values.items()}
        check_writable(cols, kept, out, inputs)
    model = load_predictor(args.run_dir, engine, args.step, args.device)
    info = model.run
    size = args.batch_size or info.eval_batch_size
    started = time.perf_counter()
    passes = 1 if task_of is not None else (1 if plain else 0) + len(own)
    with tqdm(total=n * passes, desc="pals-predict", unit="row", disable=args.no_progress or n < 2 * size) as bar:
        common = dict(batch_size=size, progress=bar.update, keep=args.probs)
        if task_of is not None:
            results = predict_texts(model, texts, pairs, tasks=names, task_of=task_of, **common)
        else:
            results = predict_texts(model, texts, pairs, tasks=plain, **common) if plain else {}
            for t, (firsts, seconds, _) in own.items():  # a task reading its own rows: its own pass
                results |= predict_texts(model, firsts, seconds, tasks=[t], **common)
    seconds = time.perf_counter() - started
    note = ""
    if suffix == ".conll":
        write_conll(out, repeated, [results[t].label for t in names])
    else:
        meant = {t: m for t, (_, _, m) in own.items()}
        predicted = output_columns(planned, info, results, n, joined=suffix in JOINED, meant=meant)
        write_table(out, {**{kept[c]: v for c, v in inputs.items()}, **predicted})
        renamed = [f"{c!r} as {new!r}" for c, new in kept.items() if new != c]  # a label column named like its task
        note = f" · input column(s) kept under new names: {', '.join(renamed)}" if renamed else ""
    for t in names:  # a per-word task's words no token predicts: tagged as its baseline tags them, counted by cause
        kind = get_kind(info.records[t].kind)
        if kind.per_word:
            rows, res = results[t] if isinstance(results[t], tuple) else (np.arange(n), results[t])
            fill = res.labels[kind.fill_index(res.labels)]
            empty = empty_words(info.tokenizer(), [words_of(texts[i]) for i in rows])
            if empty:
                first = cols.where_word(int(rows[empty[0][0]]), empty[0][1], text)
                note += (
                    f" · {t}: {len(empty):,} word(s) with no sub-token in the run's tokenizer (it reduces them to "
                    f"nothing; first: {first}), tagged {fill!r}"
                )
            cut = int(sum(np.isnan(p).sum() for p in res.prob)) - len(empty)
            if cut:
                note += (
                    f" · {t}: {cut:,} word(s) cut by max length {info.max_len} (the run's --truncate), tagged {fill!r}"
                )
    step = f"step {info.step}" if info.step >= 0 else "each task's best step"
    return (
        f"{out}: {n:,} rows · {', '.join(names)} · {step} of {args.run_dir} · "
        f"{n / seconds:,.0f} rows/s ({seconds:.2f} s on {where_it_ran(model)}){note}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        print(run(argv), file=sys.stderr)
    except (UsageError, ValueError, OSError) as e:
        print(f"pals-predict: error: {' '.join(str(e).split()) or type(e).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
