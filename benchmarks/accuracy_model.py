"""How good are the predicted scores? The score model (pals_core/score_model.py) checked on measured runs.

Each measured size of each family (method × location × trunk × recipe) is held out in turn; the curve fitted on the
family's other sizes (three or more) predicts it. Reports the mean absolute error of the predicted dev average
(points, 0–100) and the share of held-out points inside their 80 % interval, for each held-out size (its dev average:
the mean over its seeds, against the interval of the mean of that many runs — ``mae``, ``coverage80``, ``points``)
and for each held-out run (against the interval of one new run — ``per_run``); each over all held-out points and
apart for the sizes inside the fitted range (interpolated: what the explorer ranks) and outside it (extrapolated:
shown, never ranked). Writes ``benchmarks/results/accuracy_model.json`` (``mae``, ``coverage80``, ``points``, the
two subsets, every point) and beside it ``accuracy_model.csv`` (every run read: family, d_s, dev average, each task).

    .venv/bin/python benchmarks/accuracy_model.py                       # the pre-registered study (accuracy_study_3.sh)
    .venv/bin/python benchmarks/accuracy_model.py --results benchmarks/results/accuracy_study_2 \
        --results benchmarks/results/accuracy_study_2-lr1e-3 --tasks sst2 --out /tmp/second.json  # the second study
    .venv/bin/python benchmarks/accuracy_model.py --results benchmarks/results/accuracy_study --tasks rte,mrpc,stsb \
        --out /tmp/first.json                                            # the first study (accuracy_study.sh)
    .venv/bin/python benchmarks/accuracy_model.py --results runs/x --tasks rte,mrpc --model tiny --out /tmp/a.json
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pals_core.atomic import atomic_write_json, atomic_write_text  # noqa: E402
from pals_core.score_model import holdout, holdout_sizes, holdout_summary, observations, recipe_text  # noqa: E402

GOAL_MAE, GOAL_COVERAGE = 1.0, 0.75


def markdown(report: dict) -> str:
    """The held-out sizes as BENCHMARKS.md shows them."""
    out = [
        "| family | held-out d_s | measured (mean of runs) | predicted [80 % interval] | inside | extrapolated |",
        "|---|---|---|---|---|---|",
    ]
    for q in report["held_out"]:
        out.append(
            f"| {q['family']} | {q['d_s']} | {q['measured']:.2f} ({q['runs']} runs) | {q['mean']:.2f} "
            f"[{q['lo']:.2f}, {q['hi']:.2f}] | {'yes' if q['inside'] else 'no'} | {'yes' if q['extrapolated'] else 'no'} |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--results",
        action="append",
        help="folders of finished runs (default: the pre-registered study, accuracy_study_3)",
    )
    p.add_argument("--storage", help="an Optuna storage whose trials count as runs too")
    p.add_argument(
        "--tasks",
        default="sst2,stsb,mrpc",
        help="the tasks, by name or fingerprint (default: the pre-registered study's)",
    )
    p.add_argument("--model", default=None, help="the runs' pals-train --model (default: the embedded MiniLM)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "accuracy_model.json"))
    p.add_argument("--markdown", action="store_true", help="also print the held-out sizes as a Markdown table")
    a = p.parse_args(argv)
    study = ROOT / "benchmarks" / "results"
    roots = [Path(r) for r in (a.results or [study / "accuracy_study_3"])]
    for r in roots:
        if not r.is_dir():
            p.error(f"--results: no folder {str(r)!r}")
    passed: list = []  # runs whose numbers cannot be true: not fitted, named below
    obs = observations(roots, a.model, [t for t in a.tasks.split(",") if t], a.storage, passed)
    for run in passed:
        print(f"accuracy_model: passed over {run.folder}: {run.reason}", file=sys.stderr)
    sizes = holdout_sizes(obs)  # the primary figures: each held-out size's dev average (mean of its seeds)
    points = holdout(obs)  # each held-out run against the interval of one new run
    report = {
        **holdout_summary(sizes),
        "unit": "a held-out size: its dev average (mean over its seeds) against the predicted mean and the 80 % "
        "interval of the mean of that many runs",
        "interpolated": holdout_summary([q for q in sizes if not q["extrapolated"]]),
        "extrapolated": holdout_summary([q for q in sizes if q["extrapolated"]]),
        "per_run": {
            **holdout_summary(points),
            "unit": "each held-out run against the 80 % interval of one new run",
            "interpolated": holdout_summary([q for q in points if not q["extrapolated"]]),
            "extrapolated": holdout_summary([q for q in points if q["extrapolated"]]),
        },
        "goal": {"mae": GOAL_MAE, "coverage80": GOAL_COVERAGE},
        "runs": sum(len(o.runs) for o in obs),
        "families": sorted(f"{f.label()}: {recipe_text(f)}" for f in dict.fromkeys(o.family for o in obs)),  # each fit
        "results": [os.path.relpath(r, ROOT) if str(r).startswith(str(ROOT)) else str(r) for r in roots],
        "held_out": sizes,
        "held_out_runs": points,
    }
    atomic_write_json(a.out, report)
    tasks = sorted({t for o in obs for t in o.tasks})
    lines = [",".join(["family", "d_s", "run", "dev_average", *tasks])]
    for o in sorted(obs, key=lambda o: (o.family.label(), o.d_s)):
        for i, y in enumerate(o.runs):
            vals = [f"{o.tasks[t][i]:.4f}" if t in o.tasks else "" for t in tasks]
            lines.append(",".join([o.family.label(), str(o.d_s), str(i), f"{y:.4f}", *vals]))
    atomic_write_text(Path(a.out).with_suffix(".csv"), "\n".join(lines) + "\n")  # every run the fit read
    print(
        f"{report['runs']} runs in {len(report['families'])} families; {len(sizes)} held-out sizes ({len(points)} runs)"
    )
    rows = [
        ("sizes, all", report),
        ("sizes, inside", report["interpolated"]),
        ("sizes, outside", report["extrapolated"]),
        ("runs, all", report["per_run"]),
        ("runs, inside", report["per_run"]["interpolated"]),
        ("runs, outside", report["per_run"]["extrapolated"]),
    ]
    for name, s in rows:
        if s["points"]:
            ok = "met" if s["mae"] <= GOAL_MAE and s["coverage80"] >= GOAL_COVERAGE else "NOT met"
            print(
                f"{name:15s}: MAE {s['mae']:.2f} points, {s['coverage80']:.0%} inside the 80 % interval, "
                f"{s['points']} held out  (goal MAE ≤ {GOAL_MAE}, ≥ {GOAL_COVERAGE:.0%} inside: {ok})"
            )
        else:
            print(f"{name:15s}: none held out (a family needs four measured sizes: three to fit, one to hold out)")
    print(f"→ {a.out}")
    if a.markdown:
        print()
        print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
