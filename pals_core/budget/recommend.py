"""The answer to "which design should I use?": the largest design per method that fits, ranked. Pure Python.

One function serves the page and the command line: the explorer's answer and ``pals-budget`` (which prints it above
its table, sorts the table by ``ranked_rows`` and carries it in ``--json``) both call ``candidates`` and ``reason``,
so the same question gets the same ranking in the same words.

For each method, its candidate is its fitting design (location) with the best measured dev score when one of them
is measured, else the one that spends the most of the budget (ties: fewer FLOPs) — a method whose run at one location
is measured is not hidden behind a larger, unmeasured location of it. Candidates are ranked by what a person trades, in this order:
1. a measured dev score of this very design — method, location and d_s — on this model and these tasks (finished
   runs on disk), best mean first (a score of another size is shown, labelled, and ranks nothing);
1b. a predicted dev score of the design (``predicted``: given by the caller, e.g. a model fitted to measured runs),
   best mean first, after every measured design;
2. the share of the budget spent — the largest adapter that fits is what was asked for — compared in
   steps of ``SAME_SHARE`` (half a percent), so that designs spending the same share are ranked
3. by the smallest predicted training-step slowdown (``time_ratio``, the calculator's time model), then the smallest
   forward-FLOP overhead.
Every number is the calculator's (``budget_used``, ``flops_ratio``, ``time_ratio``) or a run's summary.
When nothing fits, ``smallest_fit`` says the smallest budget of the same kind at which the first design fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..pricing.config import design_label
from ..pricing.recipe import rate_text
from . import display
from .costs import Cost, flops_ratio
from .methods import recipe_setting
from .series import budget_used, wider_than_model
from .solver import Budget, smallest_budget

Key = tuple[str, str | None]  # (method, location); location None for methods that take none


def key_of(cost: Cost) -> Key:
    return cost.method, cost.location


def label(key: Key) -> str:
    return design_label(*key)


SAME_SHARE = 0.005  # shares of the budget closer than this count as equal


@dataclass(frozen=True)
class Score:
    """A measured dev average (0–100) of a design on this model and these tasks: the mean over ``n``
    runs (seeds), ± the 95 % t-interval half-width when there are several."""

    mean: float
    ci95: float | None
    n: int
    d_s: int | None = None  # the size that was measured (a score belongs to the design measured, size included)
    steps: int | None = None  # set for a smoke run (``measured.SMOKE_STEPS``): its steps; it ranks nothing

    @property
    def smoke(self) -> bool:
        return self.steps is not None

    def value(self) -> str:
        """'63.0 ± 1.2' (the mean alone for one run)."""
        return f"{self.mean:.1f}" + (f" ± {self.ci95:.1f}" if self.ci95 is not None else "")

    def runs(self) -> str:
        return f"{self.n} run{'s' * (self.n != 1)}"

    def text(self) -> str:
        return f"{self.value()} ({self.runs()})"

    def overlaps(self, other: Score) -> bool:
        """Whether the two 95 % intervals share a point (the ranked plot's reading: no clear winner). A single run
        has no interval, so it is never clear of anything."""
        if self.ci95 is None or other.ci95 is None:
            return True
        return abs(self.mean - other.mean) <= self.ci95 + other.ci95


@dataclass(frozen=True)
class Pick:
    cost: Cost
    used: float  # share of the budget
    flops: float  # forward FLOPs × base
    measured: Score | None  # this design's own measured score (the same method, location and d_s)

    time: float | None = None  # predicted training-step time × the base model's (None: no time model here)
    oversized: bool = False  # d_s wider than the model (``series.wider_than_model``): ranked after every sensible size
    other_size: Score | None = None  # a score at another d_s, or a smoke run's: shown, never ranked
    predicted: Score | None = None  # a predicted dev score of this design (``candidates(predicted=…)``)

    @property
    def slowdown(self) -> float:
        """The predicted step-time ratio, or the FLOP ratio where the time model has none."""
        return self.time if self.time is not None else self.flops

    @property
    def key(self) -> Key:
        return key_of(self.cost)


def candidates(
    costs: Sequence[Cost],
    budget: Budget,
    measured: Mapping[Key, Score] = {},
    slowdowns: Callable[[Sequence[Cost]], Mapping[Key, float]] | None = None,
    hidden: int | None = None,
    predicted: Mapping[Key, Score] = {},
) -> list[Pick]:
    """The largest fitting design of each method, ranked (see the module docstring). ``slowdowns`` gives the
    predicted step-time ratios of the candidates (``step_slowdowns``); asked only for the one candidate per method.
    ``hidden`` (the model's d): a design whose d_s is wider is ranked after every design of sensible size, and its
    method's candidate is its largest design that is not wider, where it has one. ``predicted``: a predicted dev
    score per design (method, location; its ``d_s`` None or the design's), ranked after the measured ones."""
    best: dict[str, Pick] = {}
    for c in costs:
        if not c.feasible:
            continue
        score = measured.get(key_of(c))
        own = score if score is not None and score.d_s == c.d_s and not score.smoke else None
        guess = predicted.get(key_of(c))
        p = Pick(
            c,
            budget_used(c, budget),
            flops_ratio(c),
            own,
            oversized=hidden is not None and wider_than_model(c, hidden),
            other_size=score if own is None else None,
            predicted=guess if guess is not None and guess.d_s in (None, c.d_s) else None,
        )
        old = best.get(c.method)
        if old is None or _within_method(p) > _within_method(old):
            best[c.method] = p
    picks = sorted(best.values(), key=rank_key)
    if slowdowns is None or not picks:
        return picks
    # Step time only decides between designs of the same rank otherwise (and is quoted for the first two): ask the
    # time model for those alone, so a new question stays instant.
    group = lambda p: rank_key(p)[:3]  # (size sensible?, measured?, share or mean)
    sizes = {g: sum(group(q) == g for q in picks) for g in map(group, picks)}
    wanted = [p for i, p in enumerate(picks) if i < 2 or sizes[group(p)] > 1]
    times = slowdowns([p.cost for p in wanted])
    return sorted((replace(p, time=times.get(p.key)) for p in picks), key=rank_key)


def _within_method(p: Pick) -> tuple:
    """Which of a method's fitting designs is its candidate: measured first (best mean), then predicted (best mean),
    then the largest share."""
    return (
        not p.oversized,
        p.measured is not None,
        p.measured.mean if p.measured is not None else 0.0,
        p.predicted is not None,  # then a location whose size a fitted curve predicts, best first
        p.predicted.mean if p.predicted is not None else 0.0,
        p.used,
        -p.flops,
        -_LOCATIONS.get(p.cost.location, len(_LOCATIONS)),  # a tie (top and bottom alike): all, then top, bottom
    )


_LOCATIONS = {"all": 0, "top": 1, "bottom": 2}


def share(used: float) -> str:
    """A share of the budget as the whole page writes it (``display.share_text``: rounded down, one decimal)."""
    return display.share_text(used)


def rank_key(p: Pick) -> tuple:
    """Sensible sizes first; then measured (best mean first), then the budget's share, the step time, the FLOPs; an
    exact tie by the design's name, so that the order never depends on the order the rows came in."""
    if p.measured is not None:
        return (p.oversized, 0, -p.measured.mean, p.slowdown, p.flops, label(p.key))
    if p.predicted is not None:
        return (p.oversized, 1, -p.predicted.mean, p.slowdown, p.flops, label(p.key))
    return (p.oversized, 2, -math.floor(p.used / SAME_SHARE + 1e-9), p.slowdown, p.flops, label(p.key))


def answer(picks: Sequence[Pick], bold: str = "**") -> str:
    """The recommendation as the page and ``pals-budget`` write it: 'Recommended: ' and ``reason`` of the first pick
    (``bold``: the page's Markdown; ``pals-budget`` writes plain text)."""
    return f"{bold}Recommended:{bold} " + reason(picks[0], picks, bold)


def reason(p: Pick, picks: Sequence[Pick], bold: str = "**") -> str:
    """One sentence: why this design is first (``bold`` around its name: Markdown on the page, '' in a terminal)."""
    head = (
        f"{bold}{label(p.key)}{bold}"
        + (f" with d_s = {p.cost.d_s}" if p.cost.d_s is not None else "")
        + f" spends {share(p.used)} of the budget for {display.overhead_text(p.flops)} forward FLOPs per task"
        + (f" and a predicted {display.step_ratio_text(p.time)}× training step" if p.time is not None else "")
        + f" ({display.trained_text(p.cost)}, at the method's own learning rate "
        f"{rate_text(recipe_setting(p.cost.method, 'lr')[0])})"
    )
    if p.measured is not None:
        return (
            head
            + f", and has the best measured dev average here: {p.measured.text()}"
            + _clear_of(p, picks)
            + "."
            + _oversized(p)
        )
    if p.predicted is not None:
        return head + f", and has the best predicted dev average here: {p.predicted.text()}." + _oversized(p)
    others = [q for q in picks if q is not p]
    tied = [q for q in others if rank_key(q)[:3] == rank_key(p)[:3]]
    if tied:
        nxt = others[0]
        why = (
            f": it spends as much of the budget as any method (to within {SAME_SHARE:.1%}) and slows a training step "
            f"the least of those (next: {label(nxt.key)}, {share(nxt.used)} for {display.overhead_text(nxt.flops)} "
            "FLOPs" + (f", {display.step_ratio_text(nxt.time)}× step" if nxt.time is not None else "") + ")"
        )
    else:
        why = ": the largest share of the budget of any method" + (
            "" if not others else f" (next: {label(others[0].key)}, {share(others[0].used)})"
        )
    warning = _oversized(p) + _other_size(p)
    if any(q.measured is not None for q in picks):
        return head + why + "." + warning
    return (
        head + why + ". No run of this model and these tasks is measured yet, so accuracy does not enter the "
        "ranking." + warning
    )


def ranked_rows(costs: Sequence[Cost], budget: Budget, picks: Sequence[Pick]) -> list[Cost]:
    """Every row in the recommendation's order: the ranked designs first (``picks``); then the rest that fit,
    fullest first; then those over budget, closest to fitting first (the page's designs table and ``pals-budget``)."""
    rank = {p.key: i for i, p in enumerate(picks)}
    return sorted(
        costs,
        key=lambda c: (
            rank.get(key_of(c), len(rank)),
            not c.feasible,
            budget_used(c, budget) * (1 if not c.feasible else -1),
            label(key_of(c)),
        ),
    )


def ranking(picks: Sequence[Pick]) -> list[dict]:
    """The ranked designs as ``pals-budget --json`` carries them: rank, design, d_s, share of the budget, FLOPs and
    step-time ratios, the measured (or predicted) score where there is one."""

    def score(s: Score | None) -> dict | None:
        return None if s is None else {"mean": s.mean, "ci95": s.ci95, "runs": s.n, "d_s": s.d_s}

    return [
        {
            "rank": i + 1,
            "design": label(p.key),
            "method": p.cost.method,
            "location": p.cost.location,
            "d_s": p.cost.d_s,
            "budget_used": p.used,
            "flops_ratio": p.flops,
            "time_ratio": p.time,
            "oversized": p.oversized,
            "params_trained": p.cost.params_trained,
            "params_total": p.cost.params_total,
            "trunk": p.cost.trunk,
            "lr": recipe_setting(p.cost.method, "lr")[0],  # the method's own, as pals-train trains it by default
            "lr_source": recipe_setting(p.cost.method, "lr")[1],
            "measured": score(p.measured),
            "other_size": score(p.other_size),
            "predicted": score(p.predicted),
        }
        for i, p in enumerate(picks)
    ]


def step_slowdowns(make_design, machine=None, model_cond=None) -> Callable[[Sequence[Cost]], dict]:
    """``candidates``' ``slowdowns``: the calculator's predicted training-step time ratio (``machine.time_ratio`` on
    ``machine``; None = the default machine) of each row, where the time model covers the model. ``make_design``:
    (method, location) → the row's design with its d_s left open."""

    def slowdowns(costs: Sequence[Cost]) -> dict[Key, float]:
        from .machine import time_ratio  # late: the time model, read only when a machine prices the step

        out = {}
        for c in costs:
            r = time_ratio(make_design(key_of(c)), c.d_s, machine, model_cond=model_cond)
            if r is not None:
                out[key_of(c)] = r
        return out

    return slowdowns


def measured_label(score: Score | None, cost: Cost) -> str | None:
    """A design's measured cell: its own score ('63.8 ± 4.5 (3 runs)'), or one of the same method and location at
    another size, labelled as such ('63.8 ± 4.5 (3 runs) at d_s 63, not this size'); None when nothing is measured."""
    if score is None:
        return None
    smoke = f", a smoke run ({score.steps} steps): not ranked" if score.smoke else ""
    if score.d_s == cost.d_s:
        return score.text() + smoke
    return f"{score.text()} at d_s {score.d_s}, not this size" + smoke


def _other_size(p: Pick) -> str:
    s = p.other_size
    if s is None:
        return ""
    if s.smoke:
        size = "" if s.d_s == p.cost.d_s else f" at d_s {s.d_s}"
        return (
            f" A smoke run of {label(p.key)}{size} ({s.steps} steps) scored {s.value()}: a check that training "
            "runs, so it does not rank this design."
        )
    return (
        f" A run of {label(p.key)} at d_s {s.d_s} measured {s.value()} "
        f"({s.runs()}): another size, so it does not rank this design."
    )


def _oversized(p: Pick) -> str:
    """The warning a design wider than its model carries wherever it is named."""
    if not p.oversized:
        return ""
    return (
        f" Beware: its d_s = {p.cost.d_s:,} is wider than the model it adapts — no design of a sensible size fits "
        "this budget better; a smaller budget or another method buys the same at a sensible size."
    )


def _clear_of(p: Pick, picks: Sequence[Pick]) -> str:
    """Whether the best mean is a measured lead: the other measured candidates whose 95 % interval overlaps
    the first's are ones the seeds do not separate from it."""
    rivals = [q for q in picks if q is not p and q.measured is not None]
    if not rivals:
        return ""
    close = [q for q in rivals if p.measured.overlaps(q.measured)]
    if not close:
        return (
            f", its 95 % interval clear of every other measured design's (next: {label(rivals[0].key)}, "
            f"{rivals[0].measured.value()})"
        )
    return (
        "; the seeds do not separate it from "
        + ", ".join(f"{label(q.key)} ({q.measured.value()})" for q in close)
        + (
            " (intervals overlap)"
            if all(q.measured.ci95 is not None for q in close) and p.measured.ci95 is not None
            else " (a single run has no interval)"
        )
    )


@dataclass(frozen=True)
class FirstFit:
    """When nothing fits: the smallest budget (same kind as the question's) at which a design first fits."""

    key: Key
    budget: Budget
    d_s: int | None


def first_fits(designs: Mapping[Key, object], budget: Budget) -> list[FirstFit]:
    """For each design (its ``Design``, the d_s left open: the explorer's ``calc.design_of``), the smallest budget
    of the question's kind where it fits; smallest first."""
    kind = "ratio" if budget.ratio is not None else ("extra" if budget.extra is not None else "per_task")
    out = []
    for key, ds in designs.items():
        b = smallest_budget(ds, kind)
        out.append(FirstFit(key, b, ds.step if ds.method.sized else None))
    return sorted(out, key=lambda f: getattr(f.budget, kind))
