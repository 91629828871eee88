"""``pals-study``: Optuna studies over adapter design, task-sampling schedule and optimiser, on one machine or many.

    pals-study run design --trials 10                       # SQLite file pals_studies.db, embedded MiniLM
    pals-study create design --storage postgresql://u:p@db/studies --budget 1.1   # once, then on every machine:
    pals-study run design --storage postgresql://u:p@db/studies --trials 40
    pals-study report design --storage postgresql://u:p@db/studies --out studies_out/design-report
    pals-study list --storage sqlite:///pals_studies.db
    pals-study run design --tasks-file my_tasks.yaml --trials 20   # your own tasks (YAML/JSON tasks file)

``--trials N`` is the study's total: a worker runs trials until the study holds N finished (complete or pruned)
trials, counting every worker's, and no retry of a dead worker's trial is waiting; while the last places are held by
running trials it waits for them (a dead worker's trial goes stale after the study's grace, and is trained again
here). A trial a worker starts when another worker has just taken the last place is given up untrained: stored PRUNED
(never FAIL) with the reason in its ``surplus`` user attribute, and counted apart ("1 surplus"), as no result and no
place of the N. ``run`` makes a study only in a storage that holds none, or with ``--create``: a mistyped
``--study-name`` is refused, naming the closest studies there. Bad input, an
unusable storage or an unknown study exits with status 2 and one line on stderr; ``report`` reads a study another
program wrote (plain Optuna's, or trial attributes of the wrong type, which it names and leaves out).

With ``--tasks-file`` the study stores the file's tasks (``studies.tasks``): their records, label counts (which price
the heads) and files' sha256. A worker on another machine gives its own copy with ``--tasks-file`` (or none, to read
the stored path) and is refused, naming the file, when that copy is not what the study was created on. Only the GLUE
tasks among a study's tasks need ``--glue-dir``.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import replace

from pals_core.budget.machine import Machine, default_device
from pals_core.budget.methods import label_of, parse_methods
from pals_core.budget.solver import add_budget_flags, budget_from_args
from pals_core.data.glue_rows import GlueDataError, check_files, resolve_glue_dir
from pals_core.data.load import TINY
from pals_core.data.samplers import SAMPLERS
from pals_core.families.registry import get_family
from pals_core.flags import NONE, OneLineParser, add_flags, given_values
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.units import parse_count, parse_positive_float, parse_positive_int
from pals_core.supervise.workers import write_progress
from pals_core.tasks.glue_tasks import parse_task_list
from pals_core.train.config import tasks_file_train_model
from pals_core.train.seeds import parse_seeds

from .definitions import DEFINITIONS, get_definition
from .errors import StudyError
from .naming import RUN_KEY_ATTR, check_study_name, report_folder, trial_root
from .objective import Objective
from .runner import (
    budget_text,
    check_new_study,
    counts,
    counts_text,
    fixed_adapter,
    load_definition,
    load_settings,
    machine_bound,
    machine_text,
    make_context,
    make_pruner,
    make_sampler,
    open_study,
    plural,
    run_worker,
    wait_for_a_place,
)
from .settings import (
    DEFAULT_BUDGET_RATIO,
    DEFAULT_HEARTBEAT_S,
    DEFAULT_MAX_RETRY,
    DEFAULT_TASKS,
    MACHINE_NAMES,
    MACHINE_SKIP,
    SCORE_AT,
    StudySettings,
)
from .space import check_machine, model_shape
from .stale import stale_trials
from .storage import (
    DEFAULT_STORAGE,
    NoStudies,
    heartbeat_ages,
    load,
    masked,
    open_storage,
    study_names,
)
from .tasks import check_rows, check_same_data, describe_tasks, glue_names, read_study_tasks

PROG = "pals-study"
DEFAULT_OUT = "studies_out"


def _storage_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage",
        default=DEFAULT_STORAGE,
        metavar="URL",
        help=f"Optuna RDB storage: sqlite:///file.db, postgresql://user:pw@host/db, mysql+pymysql://… "
        f"(default {DEFAULT_STORAGE})",
    )


def _settings_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("study settings (stored in the study; workers that join it inherit them)")
    g.add_argument(
        "--tasks",
        help=f"GLUE tasks, comma-separated (default {','.join(DEFAULT_TASKS)}); with --tasks-file, "
        "names out of the file (default: all of them)",
    )
    g.add_argument(
        "--tasks-file",
        metavar="FILE",
        help="your own tasks: a YAML/JSON tasks file (docs/tasks.md); the study stores its path, its "
        "tasks' records and their files' sha256, and a worker whose copy differs is refused "
        "(on another machine give that machine's copy)",
    )
    g.add_argument(
        "--model",
        help=f"local HF checkpoint folder of a supported family (BERT, RoBERTa, XLM-R, DistilBERT, ELECTRA, DeBERTa-v2/v3, ModernBERT, MPNet), or '{TINY}' (random tiny BERT, for tests); default: the tasks file's model: where it names one, else the embedded MiniLM ('none': the embedded MiniLM whatever the file names)",
    )
    g.add_argument("--steps", help="training steps per trial (default 60)")
    g.add_argument("--eval-every", help="steps between dev evaluations, each reported to the pruner (default steps/3)")
    g.add_argument("--batch-size", help="default 16")
    g.add_argument("--max-len", help="tokens per sequence (default 64)")
    g.add_argument("--max-train-examples", metavar="N", help="per-task cap on training rows (default 512; 0 = all)")
    g.add_argument("--max-eval-examples", metavar="N", help="per-task cap on dev rows (default 200; 0 = all)")
    g.add_argument(
        "--lr", help="learning rate where not searched (default: each trial's method's own, as pals-train's --lr)"
    )
    g.add_argument(
        "--warmup",
        help="warm-up fraction where not searched (default: each trial's method's own, as pals-train's --warmup)",
    )
    g.add_argument("--sampling", choices=sorted(SAMPLERS), help="task sampling where not searched (default annealed)")
    g.add_argument(
        "--epoch-steps", help="steps per epoch of the annealed schedule where not searched (trainer default 2400)"
    )
    g.add_argument("--seed", help="training seed, the same for every trial (default 0)")
    g.add_argument(
        "--seeds",
        help="repeat every trial over these training seeds, e.g. 0,1,2, and optimise the mean dev "
        "average (the report shows the 95 %% t-interval); pruning looks at the first seed's run",
    )
    g.add_argument(
        "--methods", help="design studies: methods to search, comma-separated (default: every method that fits)"
    )
    g.add_argument("--max-d-s", metavar="N", help="design studies: largest d_s sampled (default: the hidden size d)")
    g.add_argument(
        "--score-at",
        choices=list(SCORE_AT),
        help="which dev evaluation is a trial's score, the same for every trial: "
        + "; ".join(f"{k} = {v}" for k, v in SCORE_AT.items())
        + " (default best)",
    )
    g.add_argument(
        "--heartbeat",
        metavar="S",
        help=f"seconds between a running trial's heartbeats (default {DEFAULT_HEARTBEAT_S})",
    )
    g.add_argument(
        "--grace",
        metavar="S",
        help="a running trial silent this long (its worker died) is stale: the next worker fails it and trains it "
        "again (default 2 × heartbeat)",
    )
    g.add_argument(
        "--max-retry",
        metavar="N",
        help=f"how often a dead worker's trial is trained again (default {DEFAULT_MAX_RETRY})",
    )
    add_budget_flags(p, title="study budget (one of)", defaults_help=f"; default --budget {DEFAULT_BUDGET_RATIO}")
    add_flags(
        p,
        AdapterConfig,
        title="design (AdapterConfig; shared by pals-budget, pals-train and pals-study): design "
        "studies search --method/--location/--d-s and keep the others for every trial; other studies train this design",
    )
    add_flags(
        p,
        Machine,
        skip=MACHINE_SKIP,
        names=MACHINE_NAMES,
        title="machine (Machine; shared with pals-budget, where the profile is --device): each constraint "
        "(footprint.constraints: training memory, step time, serving memory) bounds every trial's d_s like the "
        "parameter budget, priced at --batch-size sequences of --max-len tokens; stored in the study",
    )


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Optuna studies over adapter design, task-sampling schedule and optimiser, "
        "on one machine or many (one shared storage).",
    )
    sub = p.add_subparsers(dest="command", metavar="{run,create,report,list}")
    sub.required = True
    names = ", ".join(DEFINITIONS)

    r = sub.add_parser("run", help="work on a study (creating it if absent) until it holds --trials finished trials")
    r.add_argument("name", metavar="NAME", help=f"study definition: {names}")
    _storage_arg(r)
    r.add_argument("--study-name", help="name of the study in the storage (default NAME)")
    r.add_argument(
        "--trials", default="10", help="finished trials the study should hold, over all workers (default 10)"
    )
    r.add_argument("--timeout", metavar="S", help="start no new trial after S seconds")
    r.add_argument("--glue-dir", help="GLUE TSV folder (default $PALS_GLUE_DIR)")
    r.add_argument(
        "--out", default=DEFAULT_OUT, help=f"run folders go to OUT/<study>/<run key>/trial-NNNN (default {DEFAULT_OUT})"
    )
    r.add_argument("--device", default="auto", help="auto | cpu | cuda (pick GPUs with CUDA_VISIBLE_DEVICES)")
    r.add_argument("--threads", help="torch CPU threads of this worker (default: torch's choice)")
    r.add_argument("--sampler-seed", help="seed of this worker's sampler (default random; give each worker its own)")
    r.add_argument(
        "--create",
        action="store_true",
        help="make the study if the storage does not hold it (without: only when the storage holds no study yet, so "
        "that a mistyped --study-name is refused, naming the closest studies, instead of starting a new one)",
    )
    r.add_argument("--progress", action="store_true", help="show the trainer's progress bars")
    r.add_argument(
        "--first-trial",
        metavar="METHOD[@LOCATION]:D_S",
        help="design studies: train this design first (Optuna enqueue_trial), e.g. houlsby@all:32 (a sizeless "
        "method without :D_S, e.g. lhuc@all) — the explorer's 'next run worth measuring'; queued once per study",
    )
    r.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="delete a finished trial's checkpoints (its config, metrics and summary stay); saves disk",
    )
    _settings_args(r)

    c = sub.add_parser("create", help="create a study once, before starting parallel workers")
    c.add_argument("name", metavar="NAME", help=f"study definition: {names}")
    _storage_arg(c)
    c.add_argument("--study-name", help="name of the study in the storage (default NAME)")
    _settings_args(c)

    rep = sub.add_parser("report", help="leaderboard table, CSV files and plotly HTML figures of a study")
    rep.add_argument("name", metavar="STUDY", help="the study's name in the storage")
    _storage_arg(rep)
    rep.add_argument(
        "--out",
        help=f"folder for the files (default ./{DEFAULT_OUT}/<study>/report in the current folder; <study> is the "
        "study's name, or a safe folder name made of it when it is not a plain file name)",
    )
    rep.add_argument("--top", default="10", help="rows of the printed leaderboard (default 10)")
    rep.add_argument(
        "--inline-js", action="store_true", help="embed plotly.js in each HTML file (offline viewing, ~4.5 MB each)"
    )

    ls = sub.add_parser("list", help="the studies in a storage")
    _storage_arg(ls)
    return p


# --- settings from arguments ----------------------------------------------------------------------


def _int(text: str, flag: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise StudyError(f"{flag} {text!r} is not an integer") from None


def _cap(text: str | None, flag: str) -> int | None:
    if text is None:
        return None
    value = int(parse_count(text, flag))
    return None if value == 0 else value


def requested_settings(definition: str, args) -> tuple[StudySettings, set[str]]:
    """Settings from the command line (defaults where not given) and the names of those given."""
    kw: dict = {}
    if args.tasks_file is not None:
        names = [n.strip() for n in args.tasks.split(",") if n.strip()] if args.tasks is not None else None
        kw["tasks_file"], kw["tasks"], kw["data"] = read_study_tasks(args.tasks_file, names)
    elif args.tasks is not None:
        kw["tasks"] = parse_task_list(args.tasks)
    if args.model == NONE:  # the embedded model, over a tasks file that names another
        kw["model"] = None
    elif args.model is not None:
        kw["model"] = args.model if args.model == TINY else os.path.abspath(args.model)
        if args.model != TINY and not os.path.exists(args.model):
            raise StudyError(f"--model {args.model!r}: no such folder (give a local HF checkpoint folder or '{TINY}')")
    elif args.tasks_file is not None:  # the tasks file's model: (as pals-train trains it), else the embedded one
        try:
            named, value = tasks_file_train_model(args.tasks_file)
        except ValueError as e:
            raise StudyError(str(e)) from None
        if named and value is not None:
            kw["model"] = value
    budget = budget_from_args(args)
    if budget is not None:
        kw["budget"] = budget.as_dict()
    for flag, name in (
        ("steps", "steps"),
        ("eval_every", "eval_every"),
        ("batch_size", "batch_size"),
        ("max_len", "max_len"),
        ("epoch_steps", "epoch_steps"),
        ("max_d_s", "max_d_s"),
    ):
        v = getattr(args, flag)
        if v is not None:
            kw[name] = parse_positive_int(v, "--" + flag.replace("_", "-"))
    for flag in ("max_train_examples", "max_eval_examples"):
        v = getattr(args, flag)
        if v is not None:
            kw[flag] = _cap(v, "--" + flag.replace("_", "-"))
    if args.heartbeat is not None:
        kw["heartbeat"] = parse_positive_int(args.heartbeat, "--heartbeat")
    if args.grace is not None:
        kw["grace"] = parse_positive_int(args.grace, "--grace")
        if kw["grace"] <= kw.get("heartbeat", DEFAULT_HEARTBEAT_S):
            raise StudyError(
                f"--grace {kw['grace']} must exceed the heartbeat interval ({kw.get('heartbeat', DEFAULT_HEARTBEAT_S)} "
                "s): a live trial would look dead between two heartbeats"
            )
    if args.max_retry is not None:
        kw["max_retry"] = int(parse_count(args.max_retry, "--max-retry"))
    if args.score_at is not None:
        kw["score_at"] = args.score_at
    if args.lr is not None:
        kw["lr"] = parse_positive_float(args.lr, "--lr")
    if args.warmup is not None:
        try:
            kw["warmup"] = float(args.warmup)
        except ValueError:
            raise StudyError(f"--warmup {args.warmup!r} is not a number") from None
    if args.sampling is not None:
        kw["sampling"] = args.sampling
    if args.seed is not None:
        kw["seed"] = _int(args.seed, "--seed")
    if args.seeds is not None:
        try:
            kw["seeds"] = parse_seeds(args.seeds)
        except ValueError as e:
            raise StudyError(str(e)) from None
        if args.seed is not None:
            raise StudyError("give --seed (one run per trial) or --seeds (one run per seed), not both")
    d = get_definition(definition)
    if args.methods is not None:
        if not d.searches_design:
            raise StudyError(f"--methods is for design studies; {definition!r} trains one fixed design (use --method)")
        try:
            kw["methods"] = parse_methods(args.methods)  # the explorer's address reads methods with it too
        except ValueError as e:
            raise StudyError(f"--methods: {e}") from None
    machine_given = given_values(args, Machine, skip=MACHINE_SKIP, names=MACHINE_NAMES)
    if machine_given:
        kw["machine"] = _machine(machine_given)
    design_given = given_values(args, AdapterConfig)
    fixed = sorted(k for k in ("method", "location", "d_s") if k in design_given)
    if fixed and d.searches_design:
        raise StudyError(
            f"{'/'.join('--' + k.replace('_', '-') for k in fixed)} fix the design; {definition!r} searches it "
            "(use --methods)"
        )
    template = AdapterConfig(**design_given)
    settings = StudySettings(definition=definition, **{**d.defaults, **kw})
    given = set(kw) | ({"adapter"} if design_given else set())
    if args.tasks is None:  # --tasks-file alone names this machine's copy of the file, not which of its tasks
        given.discard("tasks")
    if args.model is None:  # the file's model: where this machine's copy puts it, not an option a worker gave
        given.discard("model")

    shape = model_shape(settings.model)
    try:  # every trial trains sequences of max_len tokens: one the model cannot take is refused here, not per trial
        get_family(shape.family).check_seq_len(shape, settings.max_len)
    except ValueError as e:
        raise StudyError(f"--max-len: {e}") from None
    if settings.machine is not None:
        check_machine(shape, settings.calc_tasks(), machine_bound(settings))
    if d.searches_design:
        settings.adapter = template.as_dict()
    else:
        settings.adapter = fixed_adapter(settings, shape, template)
    return settings, given


def _machine(given: dict) -> dict:
    """The stored machine settings: the profile resolved now (``local`` when this machine is calibrated, else
    ``h100``; a profile file by its absolute path) and checked, so every worker prices on the same one."""
    device = given.get("device") or default_device()
    if device.endswith(".json") or os.sep in device:
        device = os.path.abspath(device)
    values = {**given, "device": device}
    Machine(**values).profile()  # an unknown device or a malformed profile: one line
    return values


# --- commands ---------------------------------------------------------------------------------------


def _open(args, study_name: str, *, worker: bool):
    definition = get_definition(args.name)
    requested, given = requested_settings(args.name, args)
    storage = open_storage(args.storage)
    names = study_names(storage)
    new = study_name not in names
    if worker:
        check_new_study(names, study_name, args.create)  # a mistyped --study-name makes no study
    if new:  # a new study: refuse settings nothing can be trained under, and rows no trial could read, first
        make_context(definition, requested, model_shape(requested.model))
        check_rows(requested.records(), requested.seed)
    study, settings = open_study(storage, study_name, definition, requested, given)
    if worker:  # the study's own heartbeat, grace and retries (stored: every worker judges a dead trial alike)
        target = parse_positive_int(args.trials, "--trials")
        seed = _int(args.sampler_seed, "--sampler-seed") if args.sampler_seed is not None else None
        beating = open_storage(
            args.storage, heartbeat=settings.heartbeat, grace=settings.grace_s, max_retry=settings.max_retry
        )
        study = load(
            beating, study_name, sampler=make_sampler(definition, target, seed), pruner=make_pruner(definition)
        )
    if not new and settings.tasks_file is not None and (worker or args.tasks_file is not None):
        local = requested.tasks_file if args.tasks_file is not None else settings.tasks_file
        check_same_data(settings, local, study_name)  # this machine's copy is what the study was created on
        settings = replace(settings, tasks_file=local)  # this worker's trials read its own copy
    return definition, study, settings, storage


def _describe(definition, settings, ctx) -> str:
    lines = [
        f"study definition {definition.name!r}: {definition.title}",
        f"tasks {describe_tasks(settings)} · model {settings.model or 'embedded MiniLM'} · budget "
        f"{budget_text(settings)} · {settings.steps} steps, dev evaluation every {settings.eval_every}",
    ]
    if settings.machine is not None:
        lines.append(f"machine: {machine_text(settings)}")
    if ctx.designs:
        within = "the budget" + (" and the machine" if settings.machine is not None else "")
        lines.append(
            f"feasible designs (d_s range within {within}): "
            + ", ".join(c.key + (f" {c.step}..{c.d_max}" if c.sized else "") for c in ctx.designs)
        )
    elif ctx.fixed_adapter is not None:
        a = ctx.fixed_adapter
        lines.append(f"fixed design: {label_of(a)}" + (f" d_s={a.d_s}" if a.d_s else ""))
    return "\n".join(lines)


def cmd_create(args) -> int:
    name = check_study_name(args.name if args.study_name is None else args.study_name)
    definition, study, settings, _ = _open(args, name, worker=False)
    ctx = make_context(definition, settings, model_shape(settings.model))
    print(f"study {name!r} ready in {args.storage} ({plural(len(study.trials), 'trial')} so far)")
    print(_describe(definition, settings, ctx))
    return 0


def cmd_run(args) -> int:
    name = check_study_name(args.name if args.study_name is None else args.study_name)
    timeout = parse_positive_float(args.timeout, "--timeout") if args.timeout is not None else None
    threads = parse_positive_int(args.threads, "--threads") if args.threads is not None else None
    first = parse_first_trial(args.first_trial) if args.first_trial is not None else None  # before any storage opens
    definition, study, settings, storage = _open(args, name, worker=True)
    glue = resolve_glue_dir(args.glue_dir)
    glue_tasks = glue_names(settings.records())  # a tasks file of one's own tasks needs no GLUE folder
    if glue_tasks:
        if glue is None:
            raise StudyError(f"no GLUE folder for {','.join(glue_tasks)}: give --glue-dir or set PALS_GLUE_DIR")
        try:
            check_files(glue, glue_tasks, train=True)
        except GlueDataError as e:
            raise StudyError(str(e)) from None
    target = parse_positive_int(args.trials, "--trials")
    ctx = None
    if first is not None:  # a design this study cannot sample is refused, whether or not trials are left to run
        ctx = make_context(definition, settings, model_shape(settings.model))
        first_params = first_trial_params(definition, ctx, first)
    started = time.monotonic()
    waiting = dict(
        log=lambda s: print(f"{PROG}: {s}", file=sys.stderr, flush=True),
        poll_s=min(5.0, float(settings.heartbeat)),
        grace_s=settings.grace_s,
        heartbeats=lambda: heartbeat_ages(storage, study),
    )
    folder = trial_root(args.out, name, study.user_attrs.get(RUN_KEY_ATTR))

    def progress(c: dict) -> None:  # the study's finished trials, as pals-runs list and the page show this worker's
        write_progress(folder, name, c["COMPLETE"] + c["PRUNED"], target)

    # every place held by running trials: wait for one (a dead worker's trial goes stale) before loading torch
    if first is not None:  # a design to queue: a place for it unless the study is done (then nothing is queued)
        c = counts(study)
        step = "done" if c["COMPLETE"] + c["PRUNED"] >= target and c["WAITING"] == 0 else "trial"
    else:
        step = wait_for_a_place(study, target, deadline=None if timeout is None else started + timeout, **waiting)
    if step != "trial":
        c = counts(study)
        progress(c)
        if step == "done":
            print(
                f"study {name!r} already holds {plural(c['COMPLETE'] + c['PRUNED'], 'finished trial')} "
                f"(--trials {target}); this worker ran 0"
            )
        else:
            print(f"study {name!r}: {counts_text(c, every=True)} · this worker ran 0")
        if step == "stopped":
            print(f"{PROG}: stopped by a signal while waiting for the study's last trials", file=sys.stderr)
            return 130
        return 0
    shape = model_shape(settings.model)
    ctx = ctx or make_context(definition, settings, shape)
    if first is not None:  # queued once: a second worker with the same flag adds nothing
        study.enqueue_trial(first_params, skip_if_exists=True)
    print(_describe(definition, settings, ctx), flush=True)
    objective = Objective(
        definition,
        ctx,
        shape,
        folder,
        str(glue) if glue is not None else None,
        device=args.device,
        threads=threads,
        progress=args.progress,
        keep_checkpoints=not args.no_checkpoints,
        target=target,
    )
    progress(counts(study))
    result = run_worker(study, objective, target, timeout=timeout, start=started, on_trial=progress, **waiting)
    progress(result.counts)
    print(f"study {name!r}: {counts_text(result.counts, every=True)} · this worker ran {result.ran}")
    from .report import (  # late: loads pandas and plotly (the report only)
        FIRST,
        PARAMS,
        format_table,
        leaderboard,
        scoring_text,
        undecided_tasks,
    )

    print(scoring_text(study))
    searched = ["lr", "warmup", "alpha_start", "alpha_end", "alpha_shape", "epoch_steps"]
    print(format_table(leaderboard(study, top=5), [*FIRST, PARAMS, *searched, "pareto"]))
    for line in undecided_tasks(study):
        print(line)
    print(f"report: {PROG} report {name} --storage {args.storage}")
    if result.stopped:
        print(
            f"{PROG}: stopped by a signal while waiting for the study's last trials (none of this worker's was "
            "interrupted)"
            if result.stopped_waiting
            else f"{PROG}: stopped by a signal; the interrupted trial is queued again and resumes from its checkpoint",
            file=sys.stderr,
        )
        return 130
    if result.gave_up:
        print(
            f"{PROG}: stopped after {result.failed_here} failed trials in a row; last: {result.last_error}",
            file=sys.stderr,
        )
        return 1
    return 0


FIRST_TRIAL = "METHOD[@LOCATION]:D_S (a sizeless method: METHOD[@LOCATION]), e.g. houlsby@all:32 or lhuc@all"


def parse_first_trial(text: str) -> tuple[str, str | None, int | None]:
    """``--first-trial``'s (method, location or None, d_s or None), read before anything is opened; ``StudyError``
    naming the flag for a value of another shape (a size in anything but ASCII digits included)."""
    design, sep, size = str(text).strip().rpartition(":")
    if not sep:
        design, size = size, ""
    method, at, location = design.partition("@")
    method, location, size = method.strip(), location.strip(), size.strip()
    if not method or (at and not location) or (sep and not re.fullmatch(r"[0-9]{1,9}", size)):
        raise StudyError(f"--first-trial takes {FIRST_TRIAL}; got {text!r}")
    return method, location or None, int(size) if sep else None


def first_trial_params(definition, ctx, first: tuple[str, str | None, int | None]) -> dict:
    """``parse_first_trial``'s design → the Optuna parameters a design study's trial of that design samples
    (``definitions.suggest_design`` and its d_s); ``StudyError`` naming the flag, in one line, for a design the
    study cannot sample."""
    if not definition.searches_design:
        raise StudyError(f"--first-trial: study {definition.name!r} does not search the design")
    method, location, d_s = first
    here = [c for c in ctx.designs if c.method == method]
    if not here:
        raise StudyError(
            f"--first-trial: {method!r} is not among this study's methods ({', '.join(dict.fromkeys(c.method for c in ctx.designs))})"
        )
    loc = location or (None if here[0].location is None else "all")
    choice = next((c for c in here if c.location == loc), None)
    if choice is None:
        raise StudyError(f"--first-trial: {method} has no location {loc!r} in this study")
    where = f"{choice.method}@{choice.location}" if choice.location else choice.method
    if not choice.sized and d_s is not None:
        raise StudyError(f"--first-trial: {choice.method} has no adapter size: give {where} without :D_S")
    if choice.sized and d_s is None:
        raise StudyError(
            f"--first-trial: {choice.method} takes a size: {where}:D_S ({choice.step}–{choice.d_max} in steps of "
            f"{choice.step}: the budget's range)"
        )
    if choice.sized and (d_s < choice.step or d_s > choice.d_max or d_s % choice.step):
        raise StudyError(
            f"--first-trial: d_s {d_s} is not one this study samples for {choice.method} @ {choice.location or '—'} "
            f"({choice.step}–{choice.d_max} in steps of {choice.step}: the budget's range)"
        )
    params = {"method": choice.method}
    if choice.sized:
        params[choice.d_s_param] = d_s
    if choice.location is not None:
        params[f"location_{choice.method}"] = choice.location
    return params


def cmd_report(args) -> int:
    from .report import (
        format_table,
        leaderboard,
        scoring_text,
        summary,
        trials_frame,
        undecided_tasks,
        unread_text,
        write_report,
    )  # late: loads pandas and plotly (the report only)

    storage = open_storage(args.storage, create=False)
    study = load(storage, args.name)
    top = parse_positive_int(args.top, "--top")
    out = os.path.abspath(args.out or report_folder(DEFAULT_OUT, args.name))
    stale = stale_trials(study, storage)
    s = summary(study, stale)
    try:
        d, st = load_definition(study), load_settings(study)
        print(
            f"{d.name}: {d.title} · tasks {describe_tasks(st)} · model {st.model or 'embedded MiniLM'} · "
            f"budget {budget_text(st)} · {st.steps} steps per trial"
            + (f" · machine: {machine_text(st)}" if st.machine is not None else "")
        )
    except (StudyError, ValueError, TypeError, KeyError, AttributeError) as e:  # plain Optuna's, or edited settings
        print(f"study settings not shown: {' '.join(str(e).split())}; its trials are reported as Optuna holds them")
    print(f"study {args.name!r}: {counts_text(s['counts'], every=True)}")
    for trial in stale.values():
        print(trial.line())
    print(scoring_text(study))
    board = leaderboard(study, top=top)
    print(format_table(board, [col for col in board.columns if col not in ("run_dir", "retry of", "wall time s")]))
    for line in undecided_tasks(study):
        print(line)
    unread = unread_text(trials_frame(study))
    if unread:
        print(unread)
    written = write_report(study, out, plotlyjs="inline" if args.inline_js else "cdn", stale=stale)
    print(f"report written to {out}")
    for k, v in written.items():
        print(f"  {k}: {v}")
    return 0


def cmd_list(args) -> int:
    try:
        storage = open_storage(args.storage, create=False)
    except NoStudies as e:
        print(f"no studies: {e}")
        return 0
    names = study_names(storage)
    if not names:
        print(f"no studies in {masked(args.storage)}")
    for n in names:
        study = load(storage, n)
        stale = stale_trials(study, storage)
        print(f"{n}\t{study.user_attrs.get('pals_definition', '?')}\t{counts_text(counts(study, stale))}")
        for trial in stale.values():
            print(f"  {trial.line()}")
    return 0


COMMANDS = {"run": cmd_run, "create": cmd_create, "report": cmd_report, "list": cmd_list}


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    import optuna

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    logging.getLogger("optuna").setLevel(logging.WARNING)
    try:
        args = build_parser().parse_args(argv)
        if args.command in ("run", "create"):
            optuna.logging.set_verbosity(optuna.logging.INFO)  # one line per finished trial
        return COMMANDS[args.command](args)
    except (StudyError, ValueError) as e:  # ValueError: the parser's UsageError too
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (``| head``): nothing to say (an OSError: caught first)
        return 0
    except OSError as e:  # a report folder that cannot be written, …
        print(f"{PROG}: error: {e.strerror or e}" + (f": {e.filename}" if e.filename else ""), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
