"""``pals-budget``: the largest adapter that fits a parameter budget, for every method and location.

Pure Python (no torch): answers in a blink. See ``pals-budget --help`` and docs/design.md "Public interface".
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from dataclasses import replace

from ..budget import recommend
from ..budget.costs import (
    CONVENTIONS,
    DEFAULT_SEQ_LEN,
    base_params,
    default_seq_len,
    design,
    embedding_params,
    flops_ratio,
)
from ..budget.display import count_text, gib_text, params_per_task, ratio_text, step_ratio_text, trained_of_total
from ..budget.machine import Machine
from ..budget.solver import add_budget_flags, budget_from_args
from ..budget.table import rows, sort_rows
from ..budget.tasks import parse_tasks, tasks_of_records
from ..families.registry import get_family
from ..families.shapes import (
    ALIASES,
    DEFAULT_MODEL,
    PRESETS,
    TRAINER_DEFAULT,
    conditions_for_model,
    load_model,
    trainer_model,
)
from ..flags import OneLineParser, UsageError, add_flags, given_values
from ..footprint.constraints import CONSTRAINTS
from ..footprint.here import elsewhere
from ..kinds import get_kind
from ..methods.registry import METHODS, get_method
from ..pricing.config import AdapterConfig
from ..pricing.units import parse_positive_int
from ..tasks import resolve_records
from ..tasks.glue_tasks import PRICED_NOT_TRAINED
from ..tasks.taskfile import tasks_file_model


class _Help(argparse.HelpFormatter):
    """argparse's help at the width argparse gives it (the terminal's columns less 2, 80 columns off a terminal), read
    by ``terminal_width``: argparse's own reading imports shutil and its compression modules at every start-up."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, terminal_width(80) - 2 if width is None else width)


# what pals-budget does without these design flags (the dataclass defaults are a single run's)
BUDGET_DEFAULTS = {
    "method": "every method, one row each",
    "location": "all, top and bottom for each within-network method; all with --method",
    "d_s": "the largest that fits the budget",
}


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="pals-budget",
        description=__doc__.splitlines()[0] + " Without --method: every method the calculator "
        "knows, each within-network one at all, top and bottom — one row each; design flags other than "
        "--method/--location/--d-s apply to every row. Above the table, the explorer's recommendation (the same "
        "ranking in the same words, measured runs of this model and these tasks included), and the table sorted "
        "as it ranks (without a budget: by whether it fits, then FLOPs).",
        epilog="Examples: pals-budget --tasks 8 --budget 1.13 | pals-budget --tasks rte,mrpc --extra 15M --method pals --json | "
        "pals-budget --method lhuc | pals-budget --paper",
        formatter_class=_Help,
    )
    p.add_argument(
        "--tasks",
        help="N (8 = the paper's GLUE tasks, else N binary tasks) or GLUE names: cola,sst2,…; "
        "with --tasks-file, names out of the file (default: 8; with --tasks-file, all of its tasks)",
    )
    p.add_argument(
        "--tasks-file",
        metavar="FILE",
        help="your own tasks (YAML/JSON): each head priced from its task's "
        "label count (declared labels, else the train file's label column)",
    )
    add_budget_flags(p)
    add_flags(
        p,
        AdapterConfig,
        title="design (AdapterConfig; shared by pals-budget, pals-train and pals-study)",
        defaults=BUDGET_DEFAULTS,
    )
    add_flags(
        p,
        Machine,
        title="machine (docs/design.md 'Memory (bytes)' and 'Time'; each bound a record of footprint.constraints, "
        "docs/design.md 'Recipe: add a constraint')",
    )
    p.add_argument(
        "--model",
        help=f"preset ({', '.join(PRESETS)}) or a HF config.json path (default: the tasks file's model: if it names "
        f"one, else {DEFAULT_MODEL}, the paper's; pals-train's default is {TRAINER_DEFAULT})",
    )
    p.add_argument(
        "--seq-len",
        metavar="n",
        help=f"tokens per sequence for FLOPs, memory and time (default {DEFAULT_SEQ_LEN}, "
        "or the model's longest when that is shorter)",
    )
    p.add_argument(
        "--convention",
        default="exact",
        choices=CONVENTIONS,
        help="exact (every torch parameter) or paper (no biases/LayerNorms)",
    )
    p.add_argument(
        "--results",
        metavar="DIR",
        action="append",
        help="a folder of finished runs (pals-train's summary.json, three levels deep) whose dev scores rank the "
        "designs, as the explorer's do; repeat for several (default: the explorer's: $PALS_RUNS_DIR or ./runs, and "
        "this checkout's benchmarks/results). Runs count for a model the trainer builds (the embedded model or a "
        "checkpoint folder) on exactly these tasks; where a method has runs at three sizes or more, a predicted column "
        "gives the dev average each row's size is predicted to reach, with its 80 %% interval "
        "(docs/design.md 'Predicted scores')",
    )
    p.add_argument("--paper", action="store_true", help="print the reproduction of the paper's configurations")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--storage", metavar="URL", help="an Optuna storage whose studies' trials count as runs too")
    p.add_argument(
        "--wide",
        action="store_true",
        help="every column, whatever the terminal's width (the table "
        "otherwise leaves out the least needed columns to fit it)",
    )
    return p


def _gib(n) -> str:
    return "—" if n is None else gib_text(n)


COLUMNS = [
    "method",
    "location",
    "d_s",
    "params/task",
    "extra total",
    "trained",
    "trunk",
    "× base",
    "FLOPs × base",
    "all tasks GFLOPs",
    "train GiB",
    "act. GiB",
    "serve GiB",
    "step s",
    "step × base",
    "binds",
    "fits",
]
PREDICTED = "predicted"  # with --results/--storage: the predicted dev average [80 % interval]
NUMERIC = (set(COLUMNS[2:15]) - {"trunk"}) | {PREDICTED}
DROP_ORDER = [
    "all tasks GFLOPs",
    "act. GiB",
    "serve GiB",
    "step s",
    "extra total",
    "FLOPs × base",
    "params/task",
    "step × base",
    "binds",
    "train GiB",
]
"""Columns left out, in this order, until the table fits the terminal (``--wide``: none)."""
NOT_A_TERMINAL_WIDTH = 100


def terminal_width(fallback: int = NOT_A_TERMINAL_WIDTH) -> int:
    """The terminal's columns ($COLUMNS first); ``fallback`` (100) when standard output is not a terminal — the
    columns ``shutil.get_terminal_size`` gives, read without importing shutil (and bz2, lzma, zlib) at start-up."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else fallback


def _fit(lines: list[list[str]], width: int, columns: Sequence[str] = COLUMNS) -> tuple[list[str], list[str]]:
    """The columns shown (the table's order) and those left out so that the rows fit ``width``."""
    widths = {c: max(len(c), *(len(r[j]) for r in lines)) for j, c in enumerate(columns)}

    def total(cols: list[str]) -> int:
        return sum(widths[c] for c in cols) + 2 * (len(cols) - 1)

    shown = list(columns)
    for c in DROP_ORDER:
        if total(shown) <= width:
            break
        shown.remove(c)
    return shown, [c for c in columns if c not in shown]


def _task_row(t) -> dict:
    """A task in ``--json``: its name and C_t, and how many sequences a row is read as where not one."""
    k = get_kind(t.kind).sequences(t)
    return t.as_dict() | ({"sequences_per_row": k} if k != 1 else {})


def _table(
    costs,
    header: str,
    width: int | None = None,
    answer: str | None = None,
    predicted: dict | None = None,
    device_note: str | None = None,
) -> str:
    """The rows as a table of every column (``width`` None: ``--wide``), or of those that fit ``width`` with a
    last line naming the columns left out; the header wrapped to the same width, then the recommendation
    (``answer``), as the page says it under its question. ``predicted`` (``--results``/``--storage``): each
    row's ``score_model.Prediction`` (or None) by ``id`` of its cost, shown after ``× base``."""
    import textwrap

    at = COLUMNS.index("× base") + 1  # the predicted score beside the size it buys
    cols = COLUMNS if predicted is None else [*COLUMNS[:at], PREDICTED, *COLUMNS[at:]]
    lines = []
    for c in costs:
        mem = c.memory_train or {}
        lines.append(
            [  # every number through pals_core.budget.display: the explorer writes the same digits
                c.method,
                c.location or "—",
                "—" if c.d_s is None else str(c.d_s),
                count_text(params_per_task(c)),
                count_text(c.params_task_specific),
                trained_of_total(c),
                c.trunk,
                ratio_text(c.ratio),
                ratio_text(flops_ratio(c)),
                f"{c.flops_all_tasks_per_seq / 1e9:.1f}",
                _gib(mem.get("total")),
                _gib(mem.get("activations")),
                _gib(c.memory_infer),
                "—" if c.time_step_s is None else f"{c.time_step_s:.4g}",
                "—" if c.time_ratio is None else step_ratio_text(c.time_ratio),
                c.binding or "—",
                "yes" if c.feasible else "NO",
            ]
        )
        if predicted is not None:
            p = predicted.get(id(c))
            lines[-1].insert(at, "—" if p is None else p.cell())
    shown, hidden = (cols, []) if width is None or not lines else _fit(lines, width, cols)
    keep = [cols.index(c) for c in shown]
    lines = [[r[i] for i in keep] for r in lines]
    widths = [max(len(h), *(len(r[j]) for r in lines)) for j, h in enumerate(shown)]
    fmt = lambda r: "  ".join(
        (v.rjust(w) if h in NUMERIC else v.ljust(w)).rstrip()
        if j == len(r) - 1
        else (v.rjust(w) if h in NUMERIC else v.ljust(w))
        for j, (v, w, h) in enumerate(zip(r, widths, shown))
    )
    head = textwrap.wrap(header, width) if width else [header]
    if device_note:  # the header's machine is not this one: said under it
        head += textwrap.wrap(device_note, width) if width else [device_note]
    if answer:
        head += ["", *(textwrap.wrap(answer, width) if width else [answer])]
    note = (
        textwrap.wrap(
            f"(not shown to fit {width} columns: {', '.join(hidden)}; --wide or --json for every column)", width
        )
        if hidden
        else []
    )
    return "\n".join([*head, "", fmt(shown), fmt(["-" * w for w in widths]), *map(fmt, lines), *note])


def _paper_text() -> str:
    from ..budget.paper import paper_reproduction  # the reproduction of the paper: loaded for --paper only

    out = ["Reproduction of Stickland & Murray (2019): BERT-base, 8 GLUE tasks, paper convention, h_s = 12", ""]
    rows_ = paper_reproduction()
    w = max(len(r.label) for r in rows_)
    out.append(f"{'configuration'.ljust(w)}  {'budget':<10}  {'paper':>6}  {'ours':>7}  {'× BERT':>7}  reproduces")
    for r in rows_:
        paper = f"{r.paper:.2f}×" if r.quantity == "ratio" else f"{r.paper:.0f}"
        ours = f"{r.ours:.2f}×" if r.quantity == "ratio" else f"{r.ours:.0f}"
        verdict = "yes" if r.reproduces else f"NO: {r.difference}"
        out.append(f"{r.label.ljust(w)}  {r.budget:<10}  {paper:>6}  {ours:>7}  {r.ratio:>6.3f}×  {verdict}")
    return "\n".join(out)


def run(argv: Sequence[str] | None = None) -> str:
    args = build_parser().parse_args(argv)
    if args.paper:
        if args.json:
            from ..atomic import dumps  # strict JSON: never a bare NaN or Infinity
            from ..budget.paper import paper_reproduction  # loaded for --paper only

            return dumps({"paper": [r.as_dict() for r in paper_reproduction()]})
        return _paper_text()
    file_model = tasks_file_model(args.tasks_file) if args.tasks_file else None
    from_file = args.model is None and file_model is not None
    args.model, model_note = question_model(args.model, file_model)
    model = load_model(args.model)
    records: list = []  # the tasks' records (GLUE's or the file's): what measured runs are matched by
    not_trained = None  # why no run is looked up for tasks the calculator prices but the trainer does not train
    if args.tasks_file:
        records = resolve_records(args.tasks, args.tasks_file)
        tasks = tasks_of_records(records)
    else:
        tasks = parse_tasks(args.tasks if args.tasks is not None else "8")
        untrained = [t.name for t in tasks if t.name in PRICED_NOT_TRAINED]
        if untrained:  # priced as asked; no run trains it, so none is looked up
            not_trained = f"{', '.join(untrained)} is priced, not trained (the paper leaves it out): no run has it"
        elif args.tasks is not None and not args.tasks.strip().isdigit():
            records = resolve_records(args.tasks)
    budget = budget_from_args(args)
    family = get_family(model.family)
    if args.seq_len is None:
        seq_len = default_seq_len(family.max_tokens(model))
    else:
        seq_len = parse_positive_int(args.seq_len, "--seq-len")
        try:
            family.check_seq_len(model, seq_len)
        except ValueError as e:
            raise UsageError(f"--seq-len: {e}") from None
    given = given_values(args, AdapterConfig)
    d_s, location, method_name = given.pop("d_s", None), given.pop("location", None), given.pop("method", None)
    template = AdapterConfig(**given)
    methods = None
    if method_name is not None:
        method = get_method(method_name)
        methods = [method.name]
        if d_s is not None and not method.sized:
            raise UsageError(f"method {method.name!r} has no adapter size; drop --d-s")
        if location is not None and not method.within:
            raise UsageError(f"method {method.name!r} takes no --location")
        if location is None and method.within:
            location = "all"
    elif location is not None:
        methods = [name for name, m in METHODS.items() if m.within]
    if budget is None and d_s is None and (methods is None or any(get_method(m).sized for m in methods)):
        raise UsageError("give a budget (--budget RATIO, --extra N or --per-task N) or an adapter size --d-s N")
    machine = Machine(**given_values(args, Machine))
    profile = machine.profile()  # an unknown device or a malformed profile is bad input, whatever the rows
    device_note = elsewhere(profile)  # the step times and memory are another machine's: said first
    costs = rows(
        model,
        tasks,
        budget=budget,
        methods=methods,
        location=location,
        d_s=d_s,
        adapter=template,
        seq_len=seq_len,
        convention=args.convention,
        machine=machine,
        model_conditions=conditions_for_model(args.model),
    )
    if not costs and costs.refused:  # every design refused: say why (one line, exit 2)
        raise UsageError("; ".join(f"{label}: {reason}" for label, reason in costs.refused[:3]))
    n_base = base_params(model, args.convention)
    picks, scores, roots, unread = [], {}, (), None
    keys = _task_keys(args, records)
    found = _Runs(args, template)
    curves = _curves(args, records, keys, found) if not_trained is None else None
    predicted = None
    if curves is not None:
        from .. import score_model as sm  # late: loads scipy, only with --results/--storage

        predicted = {id(c): sm.row_prediction(curves, c) for c in costs}
    if budget is not None:  # the page's answer (the page always has a budget)
        scores, roots, unread = measured_scores(args, records, keys, found)
        unread = unread or not_trained
        picks = recommend.candidates(
            costs,
            budget,
            scores,
            slowdowns=recommend.step_slowdowns(
                lambda key: design(
                    model,
                    tasks,
                    replace(template, method=key[0], location=key[1], d_s=None),
                    convention=args.convention,
                    seq_len=seq_len,
                    check_size=False,
                ),
                machine,
                conditions_for_model(args.model),
            ),
            hidden=model.hidden,
            predicted=sm.ranked(costs, curves) if curves else {},
        )
    ranked = recommend.ranked_rows(costs, budget, picks) if budget is not None else sort_rows(costs)
    answer = recommend.answer(picks, bold="") if picks else None
    passed_over = list({p.folder: p for p in found.passed_over}.values())  # each once: a trial's folder may be a root's
    for p in passed_over:
        print(f"pals-budget: passed over {p.folder}: {p.reason}", file=sys.stderr)
    if args.json:
        from ..atomic import dumps  # strict JSON: never a bare NaN or Infinity

        return dumps(
            {
                "model": {
                    "name": model.name,
                    "family": model.family,
                    "hidden": model.hidden,
                    "layers": model.layers,
                    "heads": model.heads,
                    "intermediate": model.intermediate,
                    "params": n_base,
                },
                "model_note": model_note,  # whose model is priced, where that is not plain (the text's first line)
                "tasks": [_task_row(t) for t in tasks],
                "convention": args.convention,
                "budget": budget.as_dict() if budget else {"ratio": None, "extra": None, "per_task": None},
                "seq_len": seq_len,
                "machine": {
                    "batch": machine.batch,
                    "device": profile.name,
                    "device_here": device_note is None,  # whether this machine holds the profiled device
                    "device_note": device_note,
                    "precision": machine.precision,
                    **{c.field: c.json(getattr(machine, c.field)) for c in CONSTRAINTS},
                },
                "recommendation": {
                    "text": answer,
                    "ranking": recommend.ranking(picks),
                    "results": [str(r) for r in roots],
                    "measured": len(scores),
                    "not_looked_up": unread,
                    "passed_over": [{"folder": p.folder, "reason": p.reason} for p in passed_over],
                },
                "rows": [
                    c.as_row()
                    if predicted is None
                    else {**c.as_row(), "predicted_score": _json_of(predicted.get(id(c)))}
                    for c in ranked
                ],
                "refused": [{"design": label, "reason": reason} for label, reason in costs.refused],
            },
        )
    names = ", ".join(t.name for t in tasks[:8]) + (", …" if len(tasks) > 8 else "")
    several = [f"{t.name} {k} sequences a row" for t in tasks if (k := get_kind(t.kind).sequences(t)) != 1]
    if several:  # a row read as several sequences (a choice row's candidates): what a row and a batch of rows cost
        names += f"; {', '.join(several)}: FLOPs per row, the batch in rows"
    header = (
        f"{model.name}{FROM_FILE if from_file else ''} ({n_base:,} params, {args.convention}) · {len(tasks)} tasks ({names}) · "
        f"budget {budget.describe(n_base, n_embedding=embedding_params(model, args.convention)) if budget else 'none (sizeless designs as they are)'} · n = {seq_len} · sorted: {'as recommended' if budget is not None else 'fits, then FLOPs'}"
        f" · machine: {profile.name} · batch {machine.batch} · {machine.precision}"
        + "".join(f" · {c.text(getattr(machine, c.field))}" for c in CONSTRAINTS if getattr(machine, c.field))
    )
    width = None if args.wide else terminal_width()
    return (
        (_wrapped(model_note, width) + "\n\n" if model_note else "")
        + _table(ranked, header, width, answer, predicted, device_note)
        + "".join(f"\nnot priced: {label}: {reason}" for label, reason in costs.refused)
        + (f"\nmeasured results are not looked up: {unread}" if unread else "")
        + ("" if predicted is None else _predicted_notes(ranked, predicted))
    )


FROM_FILE = " (the tasks file's model)"


def question_model(given: str | None, file_model: str | None) -> tuple[str, str | None]:
    """(the model to price, the line that says whose it is where that is not plain): ``--model`` as given (it
    overrides a tasks file's ``model:``, and says so); else the tasks file's; else the calculator's default,
    BERT-base (the paper's), with the ``--model`` that prices what ``pals-train`` would train with the same flags."""
    if given is not None:
        if file_model is not None and ALIASES.get(given, given) != ALIASES.get(file_model, file_model):
            return given, f"Priced for --model {given}, not the tasks file's model: {file_model}."
        return given, None
    if file_model is not None:
        return file_model, None
    return DEFAULT_MODEL, (
        f"Priced for {DEFAULT_MODEL}, the calculator's default (the paper's); pals-train with these flags trains "
        f"the embedded {TRAINER_DEFAULT}: add --model {TRAINER_DEFAULT} to price what it trains."
    )


def _wrapped(text: str, width: int | None) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) if width else text


def _task_keys(args, records) -> tuple[list[str] | None, str | None]:
    """The question's task fingerprints (``results.question_keys``: a tasks file's files hashed, once for the
    measured scores and the curves alike) and, where they cannot be read, why in one line; (None, None) where no
    run can match (a model the trainer does not build, or N anonymous tasks)."""
    trainable, _ = trainer_model(args.model)
    if not trainable or not records:
        return None, None
    from ..results import question_keys  # late: reads the tasks' files (and numpy), only when runs can match

    try:
        return question_keys(records), None
    except (OSError, ValueError) as e:
        return None, " ".join(str(e).split())


class _Runs:
    """The finished runs under ``--results`` (default: the page's folders, ``measured.default_roots``), read by the
    one reader of results (``results.runs``) at the first call and kept for the rest of the answer: the measured
    scores and the score curves place the same runs, each ``summary.json`` read once. ``passed_over``: the runs (and
    ``--storage`` trials) whose numbers cannot be true, each once. ``design``: the question's design settings
    (``results.design_settings`` of the template every row shares): what a measured score and a curve must match."""

    def __init__(self, args, template: AdapterConfig) -> None:
        self.given = tuple(args.results or ())
        self._found: list | None = None
        self.passed_over: list = []
        self.template = template

    @property
    def design(self) -> str:
        from ..results import design_settings  # late: with the runs

        return design_settings(self.template.as_dict())

    def check(self) -> None:
        """``UsageError`` in one line for a ``--results`` that is no folder."""
        for root in self.given:
            if not os.path.isdir(root):
                raise UsageError(f"--results {root}: no such folder")

    def roots(self) -> tuple:
        """``--results`` (checked), or the page's folders."""
        self.check()
        if self.given:
            return self.given
        from ..measured import default_roots  # late: the explorer's folders, only when runs are looked up

        return default_roots()

    def __call__(self) -> list:
        if self._found is None:
            from ..results import runs  # late: reads run folders, only when there are runs to match

            self._found = runs(self.roots(), self.passed_over)
        return self._found


def _curves(args, records, task_keys: tuple[list[str] | None, str | None], found: _Runs) -> dict | None:
    """The score curves (``score_model``) of this model's runs on exactly these tasks under ``--results`` (default:
    the page's folders, ``measured.default_roots``) and ``--storage``, as the page fits them; None where there is
    nothing to show (not asked, and no curve under the default folders)."""
    asked = bool(args.results or args.storage)
    trainable, train_model = trainer_model(args.model)
    if not asked and (not records or not trainable):
        return None  # nothing to look up, and not asked to
    if asked and not records:
        raise UsageError(
            "--results needs the tasks by name (--tasks rte,mrpc,… or --tasks-file): runs are matched by task"
        )
    from .. import score_model as sm  # late: loads scipy

    keys, _ = task_keys
    if keys is None and trainable:
        return {} if asked else None  # measured_scores says why the runs are not looked up (``unread``)
    model = train_model if trainable else args.model  # a model the trainer does not build: no run matches it
    curves = sm.question_curves(found(), args.storage, model, keys or [], found.design, found.passed_over)
    return curves if asked or curves else None  # the page's default roots add a column only where they predict


def _json_of(p) -> dict | None:
    return None if p is None else p.as_json()


def _predicted_notes(costs, predicted: dict) -> str:
    """Below the table: what each prediction rests on, and where there is none."""
    from ..score_model import LEVEL  # late: loads scipy's quantile code path only with --results

    got = [(c, predicted.get(id(c))) for c in costs]
    lines = [f"{c.method} @ {c.location or '—'}, d_s {c.d_s}: {p.basis()}" for c, p in got if p is not None]
    if not lines:
        return (
            "\npredicted: — (no method here has finished runs at three sizes or more of this model, these tasks and "
            "this trunk setting under --results/--storage)"
        )
    return (
        f"\npredicted: dev average (0–100) of one new run [{round(LEVEL * 100)} % interval], from a curve over the measured "
        "sizes of each method (docs/design.md 'Predicted scores'; its hold-out check: BENCHMARKS.md)\n"
        + "\n".join(lines)
    )


def measured_scores(
    args, records, task_keys: tuple[list[str] | None, str | None], found: _Runs
) -> tuple[dict, tuple, str | None]:
    """The measured dev scores of each design (``measured.best_by_design``) of finished runs under ``--results``
    (default: ``measured.default_roots``, the explorer's) on this model and exactly these tasks, the folders
    read, and why none were looked up when the tasks' files cannot be read (the page says the same in a caption);
    nothing is read for a model the trainer does not build or for N anonymous tasks."""
    found.check()
    trainable, train_model = trainer_model(args.model)
    if not trainable or not records:
        return {}, (), None
    from .. import measured  # late: reads run folders (and numpy), only when there are runs to match

    roots = found.roots()
    keys, unread = task_keys  # a tasks file's tasks are what their files hold: hashed (``_task_keys``)
    if keys is None:
        return {}, (), unread
    same = measured.same_question([measured.parse(run) for run in found()], train_model, trainable, keys)
    return measured.best_by_design(same, found.design), roots, None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        print(run(argv))
    except (UsageError, ValueError) as e:
        print(f"pals-budget: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


def console() -> int:
    """``pals-budget`` as a process of its own (the console script's entry): ``main`` on ``sys.argv``, with the cyclic
    garbage collector off — a process that lives for one answer frees nothing by it — and what is left frozen before
    exit, so the interpreter's final collection does not walk every object the calculator built (about 9 ms on this
    machine, a ninth of the command; BENCHMARKS.md). Not for use inside a longer-lived process: call ``main``."""
    gc.disable()
    try:
        return main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    sys.exit(console())
