"""``pals-train`` runs made of several runs: ``--seeds``, ``--method separate``, ``--jobs`` (docs/design.md "Baselines
and repeated runs").

These are orchestration flags, not ``TrainConfig`` fields: ``split_flags`` takes them off the command
line before the trainer's own parser sees it (``--method separate`` becomes ``--method shared``, the
template every per-task model is built from), and ``run`` trains the plan:

    pals-train --seeds 0,1,2 --jobs 3 --method pals --budget 1.13 --tasks rte,mrpc --out runs/pals-3s
    pals-train --method separate --tasks rte,mrpc,stsb --steps 3000 --out runs/sep
    pals-train --method separate --seeds 0,1,2 --jobs 2 --tasks … --out runs/sep-3s
    pals-train --resume --out runs/pals-3s [--jobs 3] [--threads 1]

Resuming: ``--resume --out OUT`` on a folder holding ``seeds.json`` or ``separate.json`` continues that
plan; either give only ``--out`` (and machine-local flags: ``--threads --device --glue-dir
--cache-dir``, and ``--jobs``) or the original command again — other settings are refused.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..data.metrics import main_score
from ..flags import OneLineParser, given_values
from ..kinds import DEFAULT_KIND, get_kind
from ..tasks import records_of_config
from . import seeds as sd
from . import separate as sep
from .args import add_repeat_flags, config_from_args, one_line
from .config import RESUME_FREE, TrainConfig, data_differences
from .jobs import RunsFailed
from .rundir import RunDir

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_STOPPED = 1, 2, 130, 143
LOCAL_FLAGS = {"out", "num_threads", "device", "glue_dir", "cache_dir", "glue_source"}


@dataclass
class Orchestration:
    seeds: list[int] | None = None
    jobs: int | None = None
    separate: bool = False

    @property
    def asked(self) -> bool:
        return self.seeds is not None or self.separate


def split_flags(argv: Sequence[str]) -> tuple[Orchestration, list[str]]:
    """(--seeds, --jobs, --method separate) and the rest of ``argv`` for the trainer's parser
    (``--method separate`` replaced by ``--method shared``). ``ValueError`` for bad values."""
    p = OneLineParser(add_help=False, allow_abbrev=False)
    add_repeat_flags(p)
    known, rest = p.parse_known_args(list(argv))
    o = Orchestration()
    if known.seeds is not None:
        o.seeds = sd.parse_seeds(known.seeds)
    if known.jobs is not None:
        if not known.jobs.isdigit() or int(known.jobs) < 1:
            raise ValueError(f"--jobs takes a positive integer, got {known.jobs!r}")
        o.jobs = int(known.jobs)
    out = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--method" and i + 1 < len(rest) and rest[i + 1] == sep.METHOD:
            o.separate = True
            out += ["--method", "shared"]
            i += 2
            continue
        if a == f"--method={sep.METHOD}":
            o.separate = True
            out.append("--method=shared")
        else:
            out.append(a)
        i += 1
    return o, out


def handles(o: Orchestration, args: dict) -> bool:
    """True when this module runs the command: orchestration flags, or --resume of a plan folder."""
    out = args.get("out")
    if o.asked:
        return True
    if args.get("resume") and out and (sd.SeedsPlan.held_in(out) or sep.SeparatePlan.held_in(out)):
        return True
    if o.jobs is not None:
        raise ValueError("--jobs runs several runs at once: it needs --seeds or --method separate")
    return False


def _template_from_args(given: dict) -> TrainConfig:
    from .params import resolve  # late: loads torch

    cfg, _ = config_from_args({**given, "resume": False})
    return resolve(cfg)


def _check_resume(stored: TrainConfig, given: dict, separate: bool) -> TrainConfig:
    """The stored template with the machine-local flags given; other flags must repeat the original."""
    if "tasks" in given or "tasks_file" in given:  # the original command again: it must describe the same runs
        new = _template_from_args(given)
        if separate:
            new = sep.check_template(new)
        a, b = stored.resumable_view(), new.resumable_view()
        a.pop("seed"), b.pop("seed")
        diff = data_differences(stored.data, new.data)
        diff += [
            f"{k}: run has {a.get(k)!r}, given {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)
        ]
        if diff:
            raise ValueError(f"cannot resume {given['out']} with other settings: {'; '.join(diff)}")
    else:
        other = sorted(
            k for k, v in given.items() if k not in LOCAL_FLAGS and v is not None
        )  # (budget flags default to None)
        if other:
            raise ValueError(
                f"to resume {given['out']} give --out (and --threads, --device, --glue-dir, --cache-dir, --jobs) "
                f"or the original command; not --{other[0].replace('_', '-')} alone"
            )
    typed = given_values(given, TrainConfig)  # the flags' values, typed and checked by their declaration
    free = {k: typed[k] for k in RESUME_FREE if k in typed and k != "out"}
    return replace(stored, **free)


def prepare(o: Orchestration, args: dict) -> tuple[str, object]:
    """("seeds", SeedsPlan) or ("separate", SeparatePlan), written to OUT (new) or read back (--resume)."""
    given = {k: v for k, v in args.items() if v is not None}  # (the budget flags are present as None when absent)
    resume = bool(given.pop("resume", False))
    given.pop("no_progress", None)
    if not given.get("out"):
        raise ValueError("--out is required (the run directory)")
    out = given["out"]
    if o.seeds is not None and "seed" in given:
        raise ValueError("give --seed (one run) or --seeds (one run per seed), not both")
    stored_seeds, stored_sep = sd.SeedsPlan.held_in(out), sep.SeparatePlan.held_in(out)
    single = RunDir(out).has_run()
    if (stored_seeds or stored_sep or single) and not resume:
        raise ValueError(f"{out} already holds a run: resume it (--resume) or choose another --out")
    if resume and single:
        raise ValueError(f"{out} holds a single run: resume it without --seeds / --method separate")
    if resume and stored_seeds:
        plan = sd.SeedsPlan.read(out)
        if o.seeds is not None and o.seeds != plan.seeds:
            raise ValueError(
                f"{out} was started with --seeds {','.join(map(str, plan.seeds))}, not {','.join(map(str, o.seeds))}"
            )
        if ("tasks" in given or "tasks_file" in given) and o.separate != plan.separate:
            raise ValueError(f"{out} was started {'with' if plan.separate else 'without'} --method separate")
        plan.template = _check_resume(plan.template, given, plan.separate)
        return "seeds", plan
    if resume and stored_sep:
        if o.seeds is not None:
            raise ValueError(f"{out} holds a separate-models run of one seed, not a multi-seed run")
        plan = sep.SeparatePlan.read(out)
        plan.template = _check_resume(plan.template, given, True)
        return "separate", plan
    RunDir(
        out
    ).kind()  # a non-empty folder that holds no run is refused, as for one run: nothing of the user's is overwritten
    template = _template_from_args(given)
    if o.separate:
        template = sep.check_template(template)
    if o.seeds is not None:
        plan = sd.SeedsPlan(replace(template, seed=o.seeds[0]), o.seeds, o.separate)
        if o.separate:
            sep.make_plan(plan.seed_config(o.seeds[0]))  # refuse a bad plan before writing anything
        plan.write()
        return "seeds", plan
    plan = sep.make_plan(template)
    plan.write()
    return "separate", plan


def run(o: Orchestration, args: dict, progress: bool = True) -> int:
    """Run the plan; the exit status of ``pals-train`` (the summary table on stdout)."""
    from .trainer import TrainingStopped  # late: loads torch

    try:
        kind, plan = prepare(o, args)
    except ValueError as e:
        print(f"pals-train: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    jobs = o.jobs or 1
    try:
        summary = sd.run_seeds(plan, jobs, progress) if kind == "seeds" else sd.run_separate(plan, jobs, progress)
    except TrainingStopped:
        print(f"pals-train: stopped; continue with --resume --out {plan.out}", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt:
        print(f"pals-train: interrupted; continue with --resume --out {plan.out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RunsFailed as e:
        print(f"pals-train: {one_line(e)}", file=sys.stderr)
        return EXIT_FAILED
    except ValueError as e:
        print(f"pals-train: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    print(format_aggregate(summary) if kind == "seeds" else format_separate(summary))
    return 0


def _params_line(p: dict) -> str:
    return f"parameters: {p['total']:,} total ({p['ratio']:.4f}× base), {p['task_specific']:,} task-specific, {p['trained']:,} trained"


def format_separate(summary: dict) -> str:
    records = records_of_config(summary.get("config") or {})

    lines = [
        f"separate models · {len(summary['scores'])} tasks · dev average {100 * summary['average']:.2f} · "
        f"{summary['wall_time_s']:.0f} s"
    ]
    for task, scores in summary["scores"].items():
        kind = get_kind(records.get(task) or DEFAULT_KIND)
        metrics = "  ".join(f"{k} {kind.metric_text(k, v)}" for k, v in scores.items())
        lines.append(
            f"  {task:6s} {100 * main_score(records.get(task, task), scores):6.2f}   ({metrics})  · {summary['task_steps'][task]} steps, "
            f"best step {summary['best_step'][task]}"
        )
    lines.append(_params_line(summary["params"]))
    return "\n".join(lines)


def _pm(stat: dict) -> str:
    if stat["ci95"] is None:
        return f"{100 * stat['mean']:.2f} (one seed: no interval)"
    return f"{100 * stat['mean']:.2f} ± {100 * stat['ci95']:.2f}"


def format_aggregate(summary: dict) -> str:
    records = records_of_config(summary.get("config") or {})
    lines = [
        f"{summary['method']} · seeds {','.join(map(str, summary['seeds']))} · dev average {_pm(summary['average'])} "
        f"(mean ± 95 % t-interval half-width) · {summary['wall_time_s']:.0f} s of training in all"
    ]
    for task, metrics in summary["scores"].items():
        kind = get_kind(records.get(task) or DEFAULT_KIND)
        shown = [f"{m} {kind.metric_text(m, s['mean'], s['ci95'])}" for m, s in metrics.items()]
        lines.append(f"  {task:6s} " + "  ".join(shown))
    lines.append(_params_line(summary["params"]))
    return "\n".join(lines)
