"""``pals-tasks``: what the data of a tasks file looks like, before any training — per task its rows, its label
distribution, the majority-class reference every design must beat, and its token lengths in the model's own
tokenizer, with the ``--max-len`` / ``--seq-len`` that keeps 95 % of rows whole.

    pals-tasks examples/tasks/tasks.yaml
    pals-tasks my_tasks.yaml --model path/to/model --max-len 256 --json

Bad input (a missing file, a bad record or row, an unknown model) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields

from ..atomic import dumps
from ..families.bert.presets import EMBEDDED_MODEL
from ..flags import OneLineParser, UsageError, add_flags, given_values
from ..kinds import get_kind
from ..tasks.taskfile import read_tasks_file
from ..train.config import TrainConfig

ONLY_STRIDE = [f.name for f in fields(TrainConfig) if f.name != "stride"]  # pals-train's --stride, as it declares it


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="pals-tasks",
        description=__doc__.splitlines()[0],
        epilog="Example: pals-tasks examples/tasks/tasks.yaml --max-len 64",
    )
    p.add_argument("tasks_file", metavar="FILE", help="a tasks file (YAML/JSON with a top-level 'tasks:' mapping)")
    p.add_argument(
        "--model",
        default=None,
        help="whose tokenizer counts the tokens: a local HF model folder or 'tiny'; without it the tasks file's "
        f"model: where it names one, as pals-train trains it (default: the embedded {EMBEDDED_MODEL})",
    )
    p.add_argument(
        "--max-len",
        type=int,
        default=128,
        metavar="N",
        help="the length to judge truncation against (pals-train --max-len; default 128)",
    )
    add_flags(p, TrainConfig, skip=ONLY_STRIDE)
    p.add_argument("--glue-dir", metavar="DIR", help="GLUE folder for {glue: …} tasks (default: $PALS_GLUE_DIR)")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="K",
        help="seed that draws the dev rows of a task without a dev file, as pals-train --seed K (default 0)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    return p


# ------------------------------------------------------------------------------------ formatting


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    fmt = lambda r: indent + "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
    return [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows)]


def _labels_lines(p: dict) -> list[str]:
    return get_kind(p["kind"]).profile_lines(p, _table)


def _majority_line(p: dict) -> str:
    """The majority reference's scores as the kind writes its metrics (``Kind.metric_text``: a fraction ×100, an
    error in the task's own units as it is)."""
    m, kind = p["majority"], get_kind(p["kind"])
    what = kind.baseline_text(p)
    text = lambda k, v: f"{k} {kind.metric_text(k, v, digits=1)}"  # noqa: E731
    others = " · ".join(text(k, v) for k, v in m["scores"].items() if k != m["metric"])
    return f"  majority reference, {what}: {text(m['metric'], m['main'])}" + (f" · {others}" if others else "")


def _tokens_line(p: dict) -> str:
    t = p["tokens"]
    if t is None:
        return "  tokens: not counted (no tokenizer)"
    k = t.get("sequences_per_row", 1)  # a row of several sequences (a choice row's pairs): counted each
    each = "" if k == 1 else f", per sequence: {k:g} a row"
    line = (
        f"  tokens (untruncated, special tokens included{each}): p50 {t['p50']} · p95 {t['p95']} · max {t['max']} · "
        f"{_pct(t['truncated'])} % of {'rows' if k == 1 else 'sequences'} longer than {t['max_len']}"
    )
    if t.get("rows_windowed"):  # a kind of one label per word: long sentences read in windows, no word lost
        line += (
            f" · {t['rows_windowed']:,} sentence(s) longer than {t['max_len']} read in overlapping windows "
            f"(stride {t['stride']}; the longest in {t['windows_max']}), no word lost"
            + (
                f" (--truncate would cut {t['words_cut']:,} of {t['words']:,} words, in {t['rows_cut']:,} rows)"
                if t["words_cut"]
                else ""
            )
        )
    return line


def format_profiles(profiles: Sequence[dict], header: str, limit: int | None = None, stride: int | None = None) -> str:
    """The readable report: one block per task, then the suggested length (at most ``limit`` tokens; ``stride``: the
    user's ``--stride``, for the windows a tagging task's longest sentence takes at it)."""
    lines = [header]
    for p in profiles:
        lines += [
            "",
            f"{p['name']}  ({p['kind']}) · train {p['train_rows']:,} rows · dev {p['dev_rows']:,} rows "
            f"from {p['dev_source']}",
        ]
        lines += _labels_lines(p)
        lines += [_majority_line(p), _tokens_line(p)]
    lines += ["", suggestion(profiles, limit, stride)]
    return "\n".join(lines)


def suggested_len(profiles: Sequence[dict], limit: int | None = None) -> int | None:
    """The largest per-task p95 — the one length of a run that keeps 95 % of every task's rows whole — capped
    at the model's longest input ``limit``; None when no tokens were counted."""
    p95 = [p["tokens"]["p95"] for p in profiles if p["tokens"] is not None]
    if not p95:
        return None
    return min(max(p95), limit) if limit else max(p95)


def suggestion(profiles: Sequence[dict], limit: int | None = None, stride: int | None = None) -> str:
    """The suggested length and why; for each tagging task, the windows its longest sentence is read in at that
    length (``stride``: the user's ``--stride``, else the default a run at that length takes)."""
    n = suggested_len(profiles, limit)
    if n is None:
        return "suggested length: none (no tokens counted)"
    from ..data.profile import longest_windows  # late: loads numpy

    worst = max((p for p in profiles if p["tokens"]), key=lambda p: p["tokens"]["p95"])
    why = (
        f"the largest task p95 ({worst['name']}), so at most about 5 % of any task's rows are longer"
        if n == worst["tokens"]["p95"]
        else f"the model's longest input; {worst['name']}'s p95 is {worst['tokens']['p95']}, so more of its rows are longer"
    )
    windows = [w for p in profiles if (w := longest_windows(p, n, stride)) is not None]
    tail = f"; {'; '.join(windows)}: no word lost" if windows else ""
    return f"suggested: --max-len {n} (pals-train) / --seq-len {n} (pals-budget, pals-study): {why}{tail}"


# ------------------------------------------------------------------------------------------ main


def run(argv: Sequence[str] | None = None) -> str:
    args = build_parser().parse_args(argv)
    from ..data.profile import check_max_len, profile_rows, read_tasks_rows, tokenizer_of  # late: loads numpy

    check_max_len(args.max_len)
    stride = given_values(args, TrainConfig, skip=ONLY_STRIDE).get("stride")
    records = list(read_tasks_file(args.tasks_file).values())
    rows = read_tasks_rows(records, glue_dir=args.glue_dir, seed=args.seed)  # all data checked before the model loads
    if args.model is None:  # the model pals-train would train on this file (its model:, else the embedded one)
        from ..train.config import tasks_file_train_model  # late: the trainer's settings, only to read the file's

        args.model = tasks_file_train_model(args.tasks_file)[1]
    tokenizer = tokenizer_of(args.model)
    profiles = [profile_rows(r, tokenizer=tokenizer, max_len=args.max_len, progress=True, stride=stride) for r in rows]
    limit = getattr(tokenizer, "model_max_length", None)
    limit = limit if isinstance(limit, int) and limit < 1_000_000 else None  # HF's "no limit" is a huge number
    model = args.model or EMBEDDED_MODEL
    if args.json:
        return dumps(  # strict JSON: never a bare NaN or Infinity
            {
                "tasks_file": args.tasks_file,
                "model": model,
                "max_len": args.max_len,
                "seed": args.seed,
                "tasks": profiles,
                "suggested_max_len": suggested_len(profiles, limit),
            }
        )
    header = (
        f"pals-tasks: {len(profiles)} task{'s' * (len(profiles) != 1)} from {args.tasks_file} · tokenizer: {model}"
        f" · max-len {args.max_len} · dev rows of tasks without a dev file drawn by seed {args.seed}"
    )
    return format_profiles(profiles, header, limit, stride)


def _one_line(e: BaseException) -> str:
    return next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        print(run(argv))
    except (UsageError, ValueError, OSError) as e:
        if isinstance(e, BrokenPipeError):
            return 0
        print(f"pals-tasks: error: {_one_line(e)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
