"""``pals-train``: multi-task training of one BERT with task-specific adapters on GLUE (paper Section 4).

    pals-train --method pals --d-s 204 --tasks rte,mrpc,stsb,cola,sst2 --sampling annealed --steps 2000 --out runs/pals
    pals-train --method pals --budget 1.13 --tasks rte,mrpc --out runs/b113     # d_s from the calculator
    pals-train --resume --out runs/pals                                           # continue a stopped/killed run
    accelerate launch --num_processes 4 -m pals_core.cli.train …                  # several GPUs
    pals-train --seeds 0,1,2 --jobs 3 … --out runs/x      # one run per seed + mean/std/95 % interval (orchestrate.py)
    pals-train --method separate --tasks … --out runs/sep  # one fully fine-tuned model per task (separate.py)

Defaults: the embedded MiniLM on the best device present (CPU here), the paper's optimiser settings.
Exit status: 0 finished · 1 training failed (see progress.json) · 2 bad arguments or data (one line on
stderr) · 130 interrupted · 143 stopped by SIGTERM (checkpoint written; --resume continues).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ..data.metrics import main_score
from ..data.windows import pair_stride, window_stride
from ..deps import DependencyError, check_transformers
from ..flags import UsageError
from ..kinds import DEFAULT_KIND, PACKAGES, get_kind
from ..tasks import records_of_config
from ..train import orchestrate
from ..train.args import build_parser, config_from_args, one_line
from ..train.rundir import RunDir

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_STOPPED = 1, 2, 130, 143


def main(argv: Sequence[str] | None = None) -> int:
    try:
        check_transformers()
    except DependencyError as e:
        print(f"pals-train: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    try:
        orch, argv = orchestrate.split_flags(sys.argv[1:] if argv is None else argv)
        args = vars(parser.parse_args(argv))
        progress = not args.get("no_progress", False)
        if orchestrate.handles(orch, args):
            return orchestrate.run(orch, args, progress)
        cfg, resume = config_from_args(args)
        from ..train.params import resolve  # late: loads torch

        cfg = resolve(cfg, rows=True)  # the rows read once, handed on to train()
        if resume and RunDir(cfg.out).kind() == "new":  # kind(): ValueError for a folder that is not a run
            print(f"pals-train: nothing to resume in {cfg.out}; starting a new run", file=sys.stderr)
    except (UsageError, ValueError, TypeError) as e:
        print(f"pals-train: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    from ..train.trainer import TrainingDiverged, TrainingStopped, train  # late: loads torch

    try:
        summary = train(cfg, resume=resume, progress=progress)
    except TrainingStopped as e:
        print(f"pals-train: {e}", file=sys.stderr)
        return EXIT_STOPPED
    except TrainingDiverged as e:
        print(f"pals-train: {one_line(e)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"pals-train: interrupted; continue with --resume --out {cfg.out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ValueError as e:  # bad data (missing / malformed GLUE files), an existing run, …
        print(f"pals-train: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    if int(os.environ.get("RANK", "0")) == 0:  # one table, also under accelerate launch
        print(format_summary(summary))
    return 0


def format_summary(summary: dict) -> str:
    """The best checkpoint's dev scores (×100) and the parameter cost, as a small table."""
    records = records_of_config(summary.get("config") or {})

    def pct(v) -> str:  # a score ×100; "—" where it is not a number (NaN is stored as null)
        return f"{100 * v:6.2f}" if isinstance(v, (int, float)) and v == v else "     —"

    lines = [
        f"best step {summary.get('best_step')} of {summary.get('steps')}  ·  dev average "
        f"{pct(summary.get('average')).strip()}  ·  {summary.get('wall_time_s') or 0:.0f} s"
    ]
    for task, scores in (summary.get("scores") or {}).items():
        kind = get_kind(records.get(task) or DEFAULT_KIND)
        metrics = "  ".join(f"{k} {kind.metric_text(k, v)}" for k, v in scores.items())
        try:
            main = main_score(records.get(task, task), scores)
        except (KeyError, TypeError, ValueError):
            main = None
        lines.append(f"  {task:6s} {pct(main)}   ({metrics})")
    untrained = summary.get("untrained") or []
    if untrained:
        lines.append(
            f"untrained: {', '.join(untrained)} received no training step (its scores are an untrained "
            "head's; more --steps, or another --sampling)"
        )
    config = summary.get("config") or {}
    for task, cut in (summary.get("cut_words") or {}).items():
        if any(cut.values()):  # only a run that asked for cutting (--truncate) cuts words
            lines.append(
                f"{task}: words cut by --max-len {config.get('max_len')}: "
                + ", ".join(f"{n:,} in {split}" for split, n in cut.items())
                + " (a cut word counts as tagged with the baseline's tag)"
            )
    for task, splits in (summary.get("windows") or {}).items():
        if any(w.get("rows") for w in splits.values()):
            record = ((config.get("data") or {}).get(task) or {}).get("record") or {}
            span = record.get("kind") in PACKAGES and get_kind(record["kind"]).span_head  # a question's context
            stride = pair_stride(window_stride(config), config["max_len"]) if span else window_stride(config)
            lines.append(
                f"{task}: {'contexts' if span else 'sentences'} longer than --max-len {config.get('max_len')}, read in "
                f"overlapping windows (stride {stride}): "
                + ", ".join(f"{w['rows']:,} in {split} ({w['windows']:,} windows)" for split, w in splits.items())
            )
    added = summary.get("added") or {}
    if added:
        kept = [t for t in summary.get("scores") or {} if t not in added.get("tasks", [])]
        base = added.get("base_scores")
        same = base is None or all(base.get(t) == summary["scores"][t] for t in kept)
        lines.append(
            f"added: {', '.join(added.get('tasks', []))} trained on {added.get('from_run')}; "
            f"{', '.join(kept)}: weights unchanged, scores measured again "
            f"({'equal to the base run' if same else 'not as the base run'}'s summary.json: added.base_scores)"
        )
    p = summary["params"]
    lines.append(
        f"parameters: {p['total']:,} total ({p['ratio']:.4f}× base), {p['task_specific']:,} task-specific, "
        f"{p['trained']:,} trained"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
