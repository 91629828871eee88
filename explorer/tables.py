"""The page's tables as pandas frames: the design table (``table_frame``, its CSV ``table_csv``) and the runs table
(``runs_frame``). Pure functions, no streamlit."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from pals_core.budget import display
from pals_core.budget.costs import Cost, flops_ratio
from pals_core.budget.recommend import Key, key_of, label
from pals_core.budget.series import budget_used, wider_than_model
from pals_core.budget.solver import Budget
from pals_core.measured import score_text, smoke
from pals_core.pricing.units import GIGA

TABLE_FORMATS = {
    "% of budget used": f"%.{display.SHARE_DIGITS}f",
    "total × base": f"%.{display.RATIO_DIGITS}f",
    "FLOPs × base": f"%.{display.RATIO_DIGITS}f",
    "GFLOPs / input, all tasks": "%.2f",
    "train step GFLOPs": "%.2f",
}
"""The design table's number columns and how they are written (the page's column formats and the CSV): each value
is rounded once (``pals_core.budget.display``) and printed with exactly its decimals."""


def table_frame(
    costs: Sequence[Cost],
    budget: Budget | None = None,
    rank: Mapping[Key, int] | None = None,
    measured: Mapping[Key, str] | None = None,
    first_fit: Mapping[Key, str] | None = None,
    hidden: int | None = None,
) -> pd.DataFrame:
    """The design table: one row per design, in the given order. Units: parameters as counts, FLOPs in GFLOPs,
    shares in % (rounded down, as the answer says them), ratios to four decimals, scores 0–100; '—' where a value
    does not apply. Every number is rounded once, by ``pals_core.budget.display`` (pals-budget prints the same
    digits). The columns a person compares come first — what it is, whether it fits, what it spends, what it scored
    and what it computes (its FLOPs) — so they are in view without scrolling sideways; method and location (already
    in the design's name) come last. ``hidden`` (the model's d): a d_s wider than the model is flagged in its cell
    ("10,760 > d = 384"). "add tasks later": whether a new task can be trained onto a run of this design without
    retraining or changing the others (``budget.costs.adding_tasks_refused``: trunk frozen, nothing shared trains)."""
    out = []
    for c in costs:
        k = key_of(c)
        row = {
            "rank": str((rank or {}).get(k, "—")),
            "design": label(k),
            "d_s": "—"
            if c.d_s is None
            else (f"{c.d_s:,} > d = {hidden:,}" if hidden is not None and wider_than_model(c, hidden) else str(c.d_s)),
            "fits": "yes" if c.feasible else "no",
        }
        if first_fit is not None:
            row["fits from"] = first_fit.get(k, "—")
        if budget is not None:
            row["% of budget used"] = display.share(budget_used(c, budget))
        row.update(
            {
                "measured dev avg": (measured or {}).get(k, "—"),
                "total × base": display.ratio(c.ratio),
                "FLOPs × base": display.ratio(flops_ratio(c)),
                "GFLOPs / input, all tasks": round(c.flops_all_tasks_per_seq / GIGA, 2),
                "train step GFLOPs": round(c.flops_train_step_per_seq / GIGA, 2),
                "params / task": display.params_per_task(c),
                "task-specific (all tasks)": c.params_task_specific,
                "trained": c.params_trained,  # what the optimiser updates, of params_total (the trunk as trained)
                "trunk": c.trunk,
                # whether a task can join a trained run later without changing the others (pals-train --from)
                "add tasks later": "yes" if c.adds_tasks_later else "no",
                "method": c.method,
                "location": c.location or "—",
            }
        )
        out.append(row)
    return pd.DataFrame(out)


def table_csv(frame: pd.DataFrame) -> str:
    """The design table as CSV, every number written with the digits the page shows (``TABLE_FORMATS``); counts
    without separators, so that a spreadsheet reads them as numbers."""
    out = frame.copy()
    for column, fmt in TABLE_FORMATS.items():
        if column in out.columns:
            out[column] = [
                fmt % v if isinstance(v, (int, float)) and math.isfinite(v) else ("∞" if v == math.inf else "—")
                for v in out[column]
            ]
    return out.to_csv(index=False)


def step_text(step, total) -> str:
    """A run's progress as 'k/N' (thousands separated), 'k' when N is not known, '—' when nothing is."""
    if not isinstance(step, int):
        return "—"
    return f"{step:,}/{total:,}" if isinstance(total, int) else f"{step:,}"


def runs_frame(runs: Sequence[dict]) -> pd.DataFrame:
    """Runs (dicts from ``pals_core.supervise.runs.Run.row``) as a table: scores 0–100 (``measured.score_text``),
    ``step`` as 'k/N' (a running or stopped run's steps done of its planned), counts with thousands separators
    (the parameters a run trains are known from its set-up on: progress.json's before its summary), '—' where a
    value is missing; ``note`` says what a score is not — a smoke run (fewer than ``measured.SMOKE_STEPS`` steps)
    or one with tasks no step trained (``untrained``)."""
    cols = [
        "run",
        "status",
        "note",
        "method",
        "location",
        "d_s",
        "tasks",
        "step",
        "dev average",
        "task-specific params",
        "trained params",
        "wall time (s)",
    ]
    out = []
    for r in runs:
        row = {k: r.get(k) for k in cols}
        wall = row["wall time (s)"]
        row["step"] = step_text(r.get("step"), r.get("total"))
        row["dev average"] = score_text(row["dev average"])
        for k in ("task-specific params", "trained params"):
            row[k] = f"{int(row[k]):,}" if isinstance(row[k], (int, float)) else "—"
        row["wall time (s)"] = f"{wall:,.0f}" if isinstance(wall, (int, float)) else "—"
        steps = r.get("steps")
        notes = [f"smoke run ({steps} steps)"] if smoke(steps) and r.get("status") == "finished" else []
        notes += [f"untrained: {r['untrained']}"] if r.get("untrained") else []
        row["note"] = "; ".join(notes) or "—"
        for k in ("location", "d_s", "tasks", "method"):
            row[k] = "—" if row[k] in (None, "") else (f"{row[k]:,}" if isinstance(row[k], int) else str(row[k]))
        out.append(row)
    return pd.DataFrame(out, columns=cols).rename(columns={"dev average": "dev average (0–100)"})
