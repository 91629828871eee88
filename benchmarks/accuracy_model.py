"""How good are the predicted scores? The score model (pals_core/score_model.py, issue 37) checked on measured runs.

Each measured size of each family (method × location × trunk × recipe) is held out in turn; the curve fitted on the
family's other sizes (three or more) predicts every held-out run. Reports the mean absolute error of the predicted dev
average (points, 0–100) and the share of held-out runs inside their 80 % interval — over every held-out run, and
apart for the sizes inside the fitted range (interpolated: what the explorer ranks) and outside it (extrapolated:
shown, never ranked). Writes ``benchmarks/results/accuracy_model.json`` (``mae``, ``coverage80``, ``points``, the
two subsets, every point) and beside it ``accuracy_model.csv`` (every run read: family, d_s, dev average, each task).

    .venv/bin/python benchmarks/accuracy_model.py                       # the committed study (accuracy_study.sh)
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
from pals_core.score_model import holdout, holdout_summary, observations  # noqa: E402

GOAL_MAE, GOAL_COVERAGE = 1.0, 0.75


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", action="append", help="folders of finished runs (default: the committed study)")
    p.add_argument("--storage", help="an Optuna storage whose trials count as runs too")
    p.add_argument("--tasks", default="rte,mrpc,stsb", help="the tasks, by name or fingerprint (default rte,mrpc,stsb)")
    p.add_argument("--model", default=None, help="the runs' pals-train --model (default: the embedded MiniLM)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "accuracy_model.json"))
    a = p.parse_args(argv)
    roots = [Path(r) for r in (a.results or [ROOT / "benchmarks" / "results" / "accuracy_study"])]
    for r in roots:
        if not r.is_dir():
            p.error(f"--results: no folder {str(r)!r}")
    obs = observations(roots, a.model, [t for t in a.tasks.split(",") if t], a.storage)
    points = holdout(obs)
    inner = [q for q in points if not q["extrapolated"]]
    outer = [q for q in points if q["extrapolated"]]
    report = {
        **holdout_summary(points),
        "interpolated": holdout_summary(inner),
        "extrapolated": holdout_summary(outer),
        "goal": {"mae": GOAL_MAE, "coverage80": GOAL_COVERAGE},
        "runs": sum(len(o.runs) for o in obs),
        "families": sorted({o.family.label() for o in obs}),
        "results": [os.path.relpath(r, ROOT) if str(r).startswith(str(ROOT)) else str(r) for r in roots],
        "held_out": points,
    }
    atomic_write_json(a.out, report)
    tasks = sorted({t for o in obs for t in o.tasks})
    lines = [",".join(["family", "d_s", "run", "dev_average", *tasks])]
    for o in sorted(obs, key=lambda o: (o.family.label(), o.d_s)):
        for i, y in enumerate(o.runs):
            vals = [f"{o.tasks[t][i]:.4f}" if t in o.tasks else "" for t in tasks]
            lines.append(",".join([o.family.label(), str(o.d_s), str(i), f"{y:.4f}", *vals]))
    atomic_write_text(Path(a.out).with_suffix(".csv"), "\n".join(lines) + "\n")  # every run the fit read
    print(f"{report['runs']} runs in {len(report['families'])} families; {len(points)} held-out runs")
    for name, s in (
        ("all", report),
        ("interpolated", report["interpolated"]),
        ("extrapolated", report["extrapolated"]),
    ):
        if s["points"]:
            ok = "met" if s["mae"] <= GOAL_MAE and s["coverage80"] >= GOAL_COVERAGE else "NOT met"
            print(
                f"{name:13s}: MAE {s['mae']:.2f} points, 80 % coverage {s['coverage80']:.0%} over {s['points']} runs  (goal MAE ≤ {GOAL_MAE}, coverage ≥ {GOAL_COVERAGE:.0%}: {ok})"
            )
        else:
            print(f"{name:13s}: no held-out run (a family needs four measured sizes: three to fit, one to hold out)")
    print(f"→ {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
