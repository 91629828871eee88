"""Which curve predicts a held-out size best: the line the tools fit today against one pooled form that can bend, on the
pre-registered fourth study (benchmarks/accuracy_study_4.sh, whose header fixes the forms and the protocol).

The forms, x = ln d_s, one point per run (every seed), least squares:

    line    y = a_m + b_m·x            per method: pals_core.score_model.fit, exactly what pals-budget fits
    pooled  y = a_m + b·x + c·x²       all methods at once: a level a_m per method, one slope b and one curvature c

each with the 80 % prediction interval of the mean of k new runs at x₀ (row x₀ of the design matrix X, p columns):

    mean ± t_{0.90, dof} · s · sqrt(1/k + x₀ᵀ (XᵀX)⁻¹ x₀)

s² the larger of the residual variance (n − p dof) and the pooled variance between the seeds of one design
(``score_model.noise``: pals-budget's rule). The protocol: each measured size d held out in turn (a fold: every
method's runs at d leave the fit together; a method needs three other sizes to be predicted, as in the tools); each
form predicts each method at d. A held-out point is a method's dev average at d (the mean over its seeds) against the
interval of the mean of that many runs (each run against the interval of one new run: ``per_run``). Inside the range
(d between the method's smallest and largest fitted size) and outside it (extrapolation) are reported apart. Figures,
inside: ``mae`` (points of dev average, goal ≤ 1.0), ``coverage80`` (share inside the 80 % interval, goal ≥ 0.75),
``regret`` (goal ≤ 0.5): in each inside fold with two methods or more, the best measured dev average among the held-out
designs (the methods at d) minus the measured dev average of the one the form predicts highest, averaged over the
folds (``regret_max``: the largest fold's; ``regret_all``: the same among every inside held-out design at once). A
form meets the goals when all three are met; the tools use the pooled form only if it does, the line otherwise
(``use``). Writes ``benchmarks/results/accuracy_study_4.json``.

    .venv/bin/python benchmarks/accuracy_study_4_analysis.py --markdown   # study 3's runs + study 4's (when there)
    .venv/bin/python benchmarks/accuracy_study_4_analysis.py --results benchmarks/results/accuracy_study_3 \
        --out /tmp/study3.json                                            # the third study alone (four sizes)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pals_core.atomic import atomic_write_json  # noqa: E402
from pals_core.score_model import (  # noqa: E402
    LEVEL,
    MIN_SIZES,
    Interval,
    Observation,
    fit,
    noise,
    observations,
    t_quantile,
)

GOAL_MAE, GOAL_COVERAGE, GOAL_REGRET = 1.0, 0.75, 0.5
STUDIES = ("accuracy_study_3", "accuracy_study_4")  # the third study's runs are the fourth's at their sizes

Points = dict[str, list[tuple[int, float]]]  # method → (d_s, dev average) of each run


@dataclass(frozen=True)
class Pooled:
    """y = a_m + b·x + c·x², x = ln d_s, fitted by least squares over every method's runs at once."""

    methods: tuple[str, ...]
    beta: np.ndarray  # a_m for each method, then b, c
    xtx_inv: np.ndarray
    s: float
    t: float

    def row(self, method: str, d_s: float) -> np.ndarray:
        x = math.log(d_s)
        return np.array([float(m == method) for m in self.methods] + [x, x * x])

    def at(self, method: str, d_s: float, k: int = 1) -> Interval:
        """The 80 % interval of one new run of ``method`` at ``d_s`` (``k`` runs: of their mean)."""
        x0 = self.row(method, d_s)
        mean = float(x0 @ self.beta)
        half = self.t * self.s * math.sqrt(1 / k + float(x0 @ self.xtx_inv @ x0))
        return Interval(mean, mean - half, mean + half)


def fit_pooled(points: Points) -> Pooled | None:
    """The pooled form over ``points``; None unless every method has ``MIN_SIZES`` distinct sizes (the tools' rule:
    no prediction under three sizes) and the runs leave a degree of freedom for the noise."""
    methods = tuple(sorted(points))
    if not methods or any(len({d for d, _ in points[m]}) < MIN_SIZES for m in methods):
        return None
    rows = [(m, d, y) for m in methods for d, y in points[m]]
    p = len(methods) + 2
    if len(rows) <= p:
        return None
    shell = Pooled(methods, np.zeros(p), np.zeros((p, p)), 0.0, 0.0)
    X = np.array([shell.row(m, d) for m, d, _ in rows])
    y = np.array([v for _, _, v in rows])
    xtx_inv = np.linalg.inv(X.T @ X)
    beta = xtx_inv @ X.T @ y
    var, dof = noise(float(((y - X @ beta) ** 2).sum()), len(rows) - p, [((m, d), v) for m, d, v in rows])
    return Pooled(methods, beta, xtx_inv, math.sqrt(var), t_quantile((1 + LEVEL) / 2, dof))


Predictor = Callable[[str, int, int], Interval | None]  # (method, d_s, k) → the interval of the mean of k runs


def line_form(obs: Sequence[Observation]) -> Predictor:
    """The line per method, fitted by pals-budget's own code (``score_model.fit``)."""
    by_method: dict[str, list[Observation]] = {}
    for o in obs:
        by_method.setdefault(o.family.method, []).append(o)
    curves = {m: fit(os_) for m, os_ in by_method.items()}
    return lambda m, d, k: curves[m].line.at(d, k) if curves.get(m) else None


def pooled_form(obs: Sequence[Observation]) -> Predictor:
    pts: Points = {}
    for o in obs:
        pts.setdefault(o.family.method, []).extend((o.d_s, y) for y in o.runs)
    f = fit_pooled(pts)
    return lambda m, d, k: f.at(m, d, k) if f is not None and m in f.methods else None


FORMS: dict[str, tuple[str, Callable[[Sequence[Observation]], Predictor]]] = {
    "line": ("y = a_m + b_m·ln d_s, per method (what pals-budget fits today)", line_form),
    "pooled": (
        "y = a_m + b·ln d_s + c·(ln d_s)², all methods at once (a level per method, slope and curvature shared)",
        pooled_form,
    ),
}


def held_out(obs: Sequence[Observation], form: Callable[[Sequence[Observation]], Predictor]) -> list[dict]:
    """Each measured size held out in turn, every method's runs at it together: one dict per (method, size) the
    form predicts from the other sizes — the size's dev average (mean of its runs) against the interval of the mean of
    that many runs, and each run (``runs``) against the interval of one new run."""
    out = []
    for d in sorted({o.d_s for o in obs}):
        rest = [o for o in obs if o.d_s != d]
        predict = form(rest)
        for method in sorted({o.family.method for o in obs if o.d_s == d}):
            ys = [y for o in obs if o.d_s == d and o.family.method == method for y in o.runs]
            fitted = sorted({o.d_s for o in rest if o.family.method == method})
            i, one = predict(method, d, len(ys)), predict(method, d, 1)
            if i is None or len(fitted) < MIN_SIZES:
                continue
            y = sum(ys) / len(ys)
            out.append(
                {
                    "method": method,
                    "d_s": d,
                    "runs": len(ys),
                    "measured": round(y, 4),
                    "mean": round(i.mean, 4),
                    "lo": round(i.lo, 4),
                    "hi": round(i.hi, 4),
                    "inside": i.lo <= y <= i.hi,
                    "extrapolated": not fitted[0] <= d <= fitted[-1],
                    "per_run": [
                        {
                            "measured": round(v, 4),
                            "lo": round(one.lo, 4),
                            "hi": round(one.hi, 4),
                            "inside": one.lo <= v <= one.hi,
                        }
                        for v in ys
                    ],
                }
            )
    return out


def regret(points: Sequence[dict]) -> float | None:
    """Among ``points`` (held-out designs), the best measured dev average minus the measured dev average of the one
    predicted highest; None under two designs."""
    if len(points) < 2:
        return None
    first = max(points, key=lambda q: q["mean"])
    return max(q["measured"] for q in points) - first["measured"]


def summary(points: Sequence[dict], with_regret: bool) -> dict:
    """``mae``, ``coverage80`` and ``points`` over held-out sizes (with ``with_regret``: ``regret``, ``regret_max``,
    ``regret_all`` and each fold's ``folds``); each run against one new run's interval under ``per_run``."""
    n = len(points)
    runs = [r for q in points for r in q["per_run"]]
    errs = [abs(r["measured"] - q["mean"]) for q in points for r in q["per_run"]]
    out = {
        "mae": round(sum(abs(q["measured"] - q["mean"]) for q in points) / n, 4) if n else None,
        "coverage80": round(sum(q["inside"] for q in points) / n, 4) if n else None,
        "points": n,
        "per_run": {
            "mae": round(sum(errs) / len(errs), 4) if errs else None,
            "coverage80": round(sum(r["inside"] for r in runs) / len(runs), 4) if runs else None,
            "points": len(runs),
        },
    }
    if with_regret:
        folds = []
        for d in sorted({q["d_s"] for q in points}):
            fold = [q for q in points if q["d_s"] == d]
            r = regret(fold)
            if r is not None:
                first = max(fold, key=lambda q: q["mean"])
                best = max(fold, key=lambda q: q["measured"])
                folds.append({"d_s": d, "ranked_first": first["method"], "best": best["method"], "regret": round(r, 4)})
        out["regret"] = round(sum(f["regret"] for f in folds) / len(folds), 4) if folds else None
        out["regret_max"] = max(f["regret"] for f in folds) if folds else None
        ra = regret(points)
        out["regret_all"] = round(ra, 4) if ra is not None else None
        out["folds"] = folds
    return out


def met(inside: dict) -> bool:
    return (
        inside["mae"] is not None
        and inside["regret"] is not None
        and inside["mae"] <= GOAL_MAE
        and inside["coverage80"] >= GOAL_COVERAGE
        and inside["regret"] <= GOAL_REGRET
    )


def analyse(obs: Sequence[Observation]) -> dict:
    """Every form's held-out figures over ``obs`` (one recipe, trunk setting and location)."""
    settings = {(o.family.location, o.family.freeze_trunk, o.family.recipe) for o in obs}
    if len(settings) > 1:
        raise ValueError("runs of more than one recipe, trunk setting or location: the forms compare one")
    forms = {}
    for name, (formula, form) in FORMS.items():
        points = held_out(obs, form)
        inside = summary([q for q in points if not q["extrapolated"]], with_regret=True)
        forms[name] = {
            "formula": formula,
            "inside": inside,
            "outside": summary([q for q in points if q["extrapolated"]], with_regret=False),
            "met": met(inside),
            "held_out": points,
        }
    return {
        "goal": {"mae": GOAL_MAE, "coverage80": GOAL_COVERAGE, "regret": GOAL_REGRET},
        "runs": sum(len(o.runs) for o in obs),
        "methods": {
            m: sorted({o.d_s for o in obs if o.family.method == m}) for m in sorted({o.family.method for o in obs})
        },
        "forms": forms,
        "use": "pooled" if forms["pooled"]["met"] else "line",
    }


def markdown(report: dict) -> str:
    out = [
        "| form | inside: MAE | inside: 80 % coverage | regret (max; all at once) | outside: MAE | outside: coverage | goals |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, f in report["forms"].items():
        i, o = f["inside"], f["outside"]

        def num(v, pct=False):
            return "—" if v is None else (f"{v:.0%}" if pct else f"{v:.2f}")

        out.append(
            f"| {name} | {num(i['mae'])} ({i['points']} sizes) | {num(i['coverage80'], True)} | {num(i['regret'])} "
            f"({num(i['regret_max'])}; {num(i['regret_all'])}) | {num(o['mae'])} ({o['points']}) | "
            f"{num(o['coverage80'], True)} | {'met' if f['met'] else 'not met'} |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", action="append", help="folders of finished runs (default: studies 3 and 4's)")
    p.add_argument("--tasks", default="sst2,stsb,mrpc", help="the tasks, by name or fingerprint")
    p.add_argument("--model", default=None, help="the runs' pals-train --model (default: the embedded MiniLM)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "accuracy_study_4.json"))
    p.add_argument("--markdown", action="store_true", help="also print the figures as a Markdown table")
    a = p.parse_args(argv)
    study = ROOT / "benchmarks" / "results"
    roots = [Path(r) for r in a.results] if a.results else [study / s for s in STUDIES if (study / s).is_dir()]
    for r in roots:
        if not r.is_dir():
            p.error(f"--results: no folder {str(r)!r}")
    obs = observations(roots, a.model, [t for t in a.tasks.split(",") if t])
    if not obs:
        p.error("no finished sized runs of these tasks under --results")
    try:
        report = analyse(obs)
    except ValueError as e:
        p.error(str(e))
    report["results"] = [os.path.relpath(r, ROOT) if str(r).startswith(str(ROOT)) else str(r) for r in roots]
    atomic_write_json(a.out, report)
    sizes = "; ".join(f"{m} d_s {', '.join(map(str, ds))}" for m, ds in report["methods"].items())
    print(f"{report['runs']} runs: {sizes}")
    for name, f in report["forms"].items():
        i = f["inside"]
        if i["points"]:
            print(
                f"{name:7s} inside: MAE {i['mae']:.2f} points, {i['coverage80']:.0%} inside the 80 % interval, regret "
                f"{'—' if i['regret'] is None else format(i['regret'], '.2f')} ({i['points']} held out; goals "
                f"MAE ≤ {GOAL_MAE}, ≥ {GOAL_COVERAGE:.0%}, regret ≤ {GOAL_REGRET}: {'met' if f['met'] else 'NOT met'})"
            )
        else:
            print(f"{name:7s} inside: none held out (a method needs a size between three others)")
    print(f"the tools' form by the pre-registered rule: {report['use']}")
    print(f"→ {a.out}")
    if a.markdown:
        print()
        print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
