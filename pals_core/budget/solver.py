"""The budget solver: the largest valid d_s within a budget, in closed form (docs/design.md "Budgets and the solver").

For a fixed method and location the task-specific parameters are a quadratic
``extra(S) = T·(a·S² + b·S + c) + Σ_t head_t``. Its positive root under the budget is the real
optimum S*; the answer is ⌊S*⌋ rounded down to a multiple of the step (h_s for attention methods),
then confirmed in exact integer arithmetic (one step up must not fit, guarding against rounding).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

from ..pricing.limits import MAX_COUNT, MAX_D_S, MAX_RATIO, check_at_most
from ..pricing.units import human, parse_count, parse_positive_float
from .costs import Cost, Design, evaluate


@dataclass(frozen=True)
class Budget:
    """Exactly one of: a ratio B (N_total ≤ B·N_base), an absolute extra E, a per-task cap p.

    ``of`` says what a ratio is taken against: ``base`` (N_base) or ``non-embedding`` (N_base minus the
    embeddings, docs/design.md "Base models, exact": N_total − N_emb ≤ B·(N_base − N_emb), i.e. extra ≤ (B − 1)·(N_base
    − N_emb)) — in XLM-R the embeddings are 69 % of the model, so a ratio of the whole says little about the encoder."""

    ratio: float | None = None
    extra: float | None = None
    per_task: float | None = None
    of: str = "base"

    OF = ("base", "non-embedding")  # also the choices of --budget-of

    def __post_init__(self) -> None:
        if self.of not in self.OF:
            raise ValueError(f"budget of {self.of!r}: choose {' or '.join(self.OF)}")
        if self.of != "base" and self.ratio is None:
            raise ValueError("--budget-of non-embedding applies to a ratio budget (--budget RATIO)")
        given = [k for k in ("ratio", "extra", "per_task") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one budget: a ratio, an absolute extra or a per-task cap"
                + (f" (got {', '.join(given)})" if given else "")
            )
        value = getattr(self, given[0])
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"budget {given[0]} must be a finite number, got {value!r}")
        if self.ratio is not None and self.ratio < 1.0:
            raise ValueError(f"budget ratio {self.ratio} is below 1.0: the base model alone exceeds it")
        if self.extra is not None and self.extra < 0:
            raise ValueError(f"extra-parameter budget must not be negative, got {self.extra}")
        if self.per_task is not None and self.per_task <= 0:
            raise ValueError(f"per-task budget must be positive, got {self.per_task}")
        if self.ratio is not None:
            check_at_most("budget ratio", self.ratio, MAX_RATIO)
        else:
            check_at_most(f"{given[0].replace('_', '-')} budget", value, MAX_COUNT)

    KINDS = ("ratio", "extra", "per_task")  # also the flags --budget, --extra, --per-task

    def as_dict(self) -> dict:
        out = {"ratio": self.ratio, "extra": self.extra, "per_task": self.per_task}
        if self.of != "base":
            out["of"] = self.of
        return out

    @classmethod
    def from_dict(cls, d: dict | None) -> Budget | None:
        """The inverse of ``as_dict``; None or all-null → None; a bare number is a ratio (older run configs)."""
        if d is None:
            return None
        if isinstance(d, Budget):
            return d
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            return cls(ratio=float(d))
        if not isinstance(d, dict) or set(d) - {*cls.KINDS, "of"}:
            raise ValueError(f"budget {d!r} is not {{ratio, extra, per_task[, of]}}")
        if all(d.get(k) is None for k in cls.KINDS):
            return None
        return cls(**{k: d.get(k) for k in cls.KINDS}, of=d.get("of") or "base")

    @classmethod
    def parse(cls, kind: str, text: str) -> Budget:
        """``ratio`` "1.13" (or "1.13x"), ``extra`` "15M", ``per_task`` "250k": the one reader of a written budget
        (CLI flags, the explorer's field, links)."""
        kind = kind.replace("-", "_")
        text = str(text if text is not None else "").strip()
        if not text:
            raise ValueError(f"enter a {kind.replace('_', '-')} budget")
        if kind == "ratio":
            return cls(ratio=parse_positive_float(text.rstrip("x×X ").strip(), "budget ratio"))
        if kind == "extra":
            return cls(extra=parse_count(text, "extra-parameter budget"))
        if kind == "per_task":
            return cls(per_task=parse_count(text, "per-task budget"))
        raise ValueError(f"unknown budget kind {kind!r} (ratio, extra or per-task)")

    @property
    def kind(self) -> str:
        return next(k for k in self.KINDS if getattr(self, k) is not None)

    def to_argv(self) -> list[str]:
        """The flags that give this budget: ``--budget 1.13`` | ``--extra 15000000`` | ``--per-task 250000``."""
        value = getattr(self, self.kind)
        flag = {"ratio": "--budget", "extra": "--extra", "per_task": "--per-task"}[self.kind]
        argv = [
            flag,
            repr(float(value))
            if self.kind == "ratio"
            else f"{value:.0f}"
            if float(value).is_integer()
            else repr(float(value)),
        ]
        return argv + (["--budget-of", self.of] if self.of != "base" else [])

    def describe(self, n_base: int | None = None, base: str = "the base model", n_embedding: int = 0) -> str:
        """One line: '≤ 1.13× the base model (extra ≤ 14.2M)', '≤ 1.13× the base model's non-embedding parameters
        (…)', 'extra ≤ 15M', '≤ 1.9M per task'."""
        if self.ratio is not None:
            extra = f" (extra ≤ {human(self.extra_limit(n_base, n_embedding))})" if n_base is not None else ""
            of = "'s non-embedding parameters" if self.of == "non-embedding" else ""
            return f"≤ {self.ratio:g}× {base}{of}{extra}"
        if self.extra is not None:
            return f"extra ≤ {human(self.extra)}"
        return f"≤ {human(self.per_task)} per task"

    def extra_limit(self, n_base: int, n_embedding: int = 0) -> float | None:
        """The cap on N_total − N_base over all tasks, if this budget is global: (B − 1)·N_base, or
        (B − 1)·(N_base − N_emb) for a ratio of the non-embedding parameters."""
        if self.ratio is not None:
            reference = n_base - n_embedding if self.of == "non-embedding" else n_base
            return self.ratio * reference - reference
        return self.extra


def add_budget_flags(parser: Any, *, title: str = "budget (one of)", defaults_help: str = "") -> None:
    """``--budget RATIO`` | ``--extra N`` | ``--per-task N`` — the same three flags on every CLI (absent when not
    given: read them with ``budget_from_args``)."""
    b = parser.add_argument_group(title + defaults_help)
    b.add_argument("--budget", metavar="RATIO", default=argparse.SUPPRESS, help="N_total ≤ RATIO × N_base, e.g. 1.13")
    b.add_argument(
        "--extra", metavar="N", default=argparse.SUPPRESS, help="N_total − N_base ≤ N over all tasks, e.g. 15M"
    )
    b.add_argument(
        "--per-task", metavar="N", default=argparse.SUPPRESS, help="head + adapter ≤ N for every task, e.g. 1.9M"
    )
    b.add_argument(
        "--budget-of",
        choices=Budget.OF,
        default=argparse.SUPPRESS,
        help="what a --budget ratio is taken against: base (N_base, default) or non-embedding "
        "(N_base minus the embeddings)",
    )


def budget_from_args(args: Any) -> Budget | None:
    """The budget of parsed ``add_budget_flags`` flags (None when none is given)."""
    ns = args if isinstance(args, dict) else vars(args)
    return budget_from_flags(ns.get("budget"), ns.get("extra"), ns.get("per_task"), of=ns.get("budget_of"))


def budget_from_flags(
    ratio: str | None = None, extra: str | None = None, per_task: str | None = None, of: str | None = None
) -> Budget | None:
    """The budget of the command-line flags ``--budget RATIO`` / ``--extra N`` / ``--per-task N`` (N as ``15M``,
    ``250k``…); None when none is given. Raises ValueError naming the flag."""
    given = [(k, v) for k, v in (("--budget", ratio), ("--extra", extra), ("--per-task", per_task)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"conflicting budgets: {' and '.join(k for k, _ in given)} (give one)")
    if not given:
        if of not in (None, "base"):
            raise ValueError("--budget-of non-embedding applies to a ratio budget (--budget RATIO)")
        return None
    flag, value = given[0]
    kind = {"--budget": "ratio", "--extra": "extra", "--per-task": "per_task"}[flag]
    try:
        budget = Budget.parse(kind, value)
    except ValueError as e:
        raise ValueError(f"{flag}: {e}") from None
    if of not in (None, "base"):
        from dataclasses import replace

        budget = replace(budget, of=of)
    return budget


def limits(ds: Design, budget: Budget | None) -> tuple[float | None, float | None]:
    if budget is None:
        return None, None
    return budget.extra_limit(ds.n_base, ds.n_embedding), budget.per_task


def real_optimum(ds: Design, budget: Budget) -> float:
    """S* ≥ 0, the largest real size within the budget (−inf if even S = 0 does not fit)."""
    limit, per_task = limits(ds, budget)
    if limit is not None:
        return ds.extra.largest_root_below(limit)
    if ds.shared.is_zero:
        return (ds.adapter + max(ds.heads)).largest_root_below(per_task)
    # shared modules (CA-MTL) are amortised over the T tasks: adapter + head + shared / T ≤ p
    t = len(ds.tasks)
    return (ds.adapter * t + ds.shared + max(ds.heads) * t).largest_root_below(per_task * t)


def solve(ds: Design, budget: Budget) -> Cost:
    """The largest valid d_s of ``ds`` within ``budget``, with its cost.

    Sizeless methods are evaluated as they are. An infeasible budget gives ``feasible=False`` at the
    smallest valid size (1, or h_s for attention methods), not an error."""
    limit, per_task = limits(ds, budget)
    if not ds.method.sized:
        return evaluate(ds, None, limit=limit, per_task_limit=per_task)
    step = ds.step
    star = real_optimum(ds, budget)
    if star == math.inf:  # the polynomial is constant in S (e.g. no layer adapted): a real "does not grow"
        raise ValueError(f"method {ds.method.name!r} does not grow with d_s here; nothing to solve")
    if star > MAX_D_S:
        raise ValueError(
            f"this budget allows d_s ≈ {star:,.4g} for {ds.method.name!r}, above the largest adapter size "
            f"the calculator prices ({MAX_D_S:,}); give a smaller budget"
        )

    def fits(s: int) -> bool:
        return evaluate(ds, s, limit=limit, per_task_limit=per_task).feasible

    s = max(step, int(star // step) * step) if star >= 0 else step
    while fits(s + step):  # at most once or twice: float rounding only
        s += step
    while s > step and not fits(s):
        s -= step
    return evaluate(
        ds, s, limit=limit, per_task_limit=per_task, unconstrained=max(star, 0.0) if star > -math.inf else None
    )


def at_size(ds: Design, s: int | None, budget: Budget | None = None) -> Cost:
    """The cost of ``ds`` at a given size, checked against ``budget`` if one is given."""
    limit, per_task = limits(ds, budget)
    star = real_optimum(ds, budget) if (budget is not None and ds.method.sized) else None
    if star is not None and not math.isfinite(star):
        star = None
    return evaluate(ds, s, limit=limit, per_task_limit=per_task, unconstrained=star)


BUDGET_KINDS = ("ratio", "extra", "per_task")


def smallest_budget(ds: Design, kind: str) -> Budget:
    """The smallest budget of ``kind`` ('ratio', 'extra' or 'per_task') within which ``ds`` fits: its cost at
    the smallest valid size (one step: 1, or h_s for attention methods; sizeless methods as they are), since
    every count grows with d_s (docs/design.md "Budgets and the solver"). A ratio is N_total / N_base, nudged up by
    float ulps until the solver's own check (N_total − N_base ≤ (B − 1)·N_base) accepts it; an extra is N_total −
    N_base; a per-task cap is the largest task's head + adapter (+ its 1/T share of modules shared by all tasks)."""
    if kind not in BUDGET_KINDS:
        raise ValueError(f"unknown budget kind {kind!r} ({', '.join(BUDGET_KINDS)})")
    cost = evaluate(ds, ds.step if ds.method.sized else None)
    if kind == "extra":
        return Budget(extra=cost.params_task_specific)
    if kind == "per_task":
        return Budget(per_task=cost.largest_task_share)
    ratio = max(1.0, cost.params_total / ds.n_base)
    while not at_size(ds, cost.d_s, Budget(ratio=ratio)).feasible:
        ratio = math.nextafter(ratio, math.inf)
    return Budget(ratio=ratio)
