"""Statistics over seeds: the aggregate ``summary.json`` of a multi-seed run (docs/design.md "Baselines and repeated
runs").

For the n values x_1 … x_n of one quantity (one per seed):

    mean  x̄ = (1/n) Σ x_k
    std   s = sqrt( Σ (x_k − x̄)² / (n − 1) )                 (sample standard deviation, ddof = 1)
    ci95  t_{0.975, n−1} · s / √n                            (half-width of the 95 % Student-t interval
                                                              for the mean: x̄ ± ci95)

With a single seed (n = 1) the spread is unknown: ``std`` and ``ci95`` are ``None`` (null in JSON),
never 0. The aggregate summary is

    {"seeds": [k, …], "runs": [{"seed", "dir", "average", "scores", "best_step", "wall_time_s"}, …],
     "average": {"mean", "std", "ci95"},                      over the seeds' dev averages
     "scores": {task: {metric: {"mean", "std", "ci95"}}},     over the seeds' best-checkpoint scores
     "params": {…}, "method", "config", "n", "wall_time_s"}

``average`` is the statistic of the per-seed dev averages (paper Table 3's average of each run), not
an average of the per-metric means (the two agree for the mean, not for std / ci95). ``params`` is the
parameter block every seed shares (the calculator's; seeds change no count — checked).

Two designs' seeds x (n_x values) and y (n_y values) are compared by Welch's unequal-variance t-test
(``compare``): the difference d = x̄ − ȳ, its standard error se = sqrt(s_x²/n_x + s_y²/n_y), the
Welch–Satterthwaite degrees of freedom ν = se⁴ / ((s_x²/n_x)²/(n_x − 1) + (s_y²/n_y)²/(n_y − 1)),
the 95 % interval d ± t_{0.975, ν} · se and the two-sided p-value (scipy.stats.ttest_ind, equal_var
False). Many such tests at once are corrected with Holm's step-down method (``holm``; Holm 1979): the
k-th smallest of m p-values becomes max_{j ≤ k} min(1, (m − j + 1) · p_(j)), which holds the chance of
any false "supported" difference in the family at 5 %. Pure Python + scipy (t quantile, t-test); no torch.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

CONFIDENCE = 0.95


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """t_{(1+confidence)/2, df}: the two-sided Student-t critical value (scipy.stats.t.ppf)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2.0, df))


def seed_stats(values: Sequence[float]) -> dict[str, float | None]:
    """{"mean", "std", "ci95"} of ``values`` (one per seed); std and ci95 are None for one value.
    ``ValueError`` for no values or a missing / non-finite one."""
    xs = [float(v) if v is not None else math.nan for v in values]
    if not xs:
        raise ValueError("no values to aggregate")
    if not all(math.isfinite(x) for x in xs):
        raise ValueError(f"cannot aggregate non-finite or missing values: {list(values)}")
    n = len(xs)
    mean = math.fsum(xs) / n
    if n == 1:
        return {"mean": mean, "std": None, "ci95": None}
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    return {"mean": mean, "std": std, "ci95": t_quantile(n - 1) * std / math.sqrt(n)}


def _same_params(params: Sequence[dict]) -> dict:
    first = params[0]
    for p in params[1:]:
        if p != first:
            raise ValueError("the seeds' parameter counts differ: the runs are not the same design")
    return first


def aggregate(seeds: Sequence[int], summaries: Sequence[dict], dirs: Sequence[str]) -> dict:
    """The aggregate summary of the per-seed ``summaries`` (each a trainer or ``separate`` summary.json,
    in the order of ``seeds``; ``dirs`` their folders relative to the aggregate's)."""
    if not summaries or len(seeds) != len(summaries) or len(dirs) != len(summaries):
        raise ValueError("one summary per seed is needed")
    tasks = list(summaries[0]["scores"])
    scores: dict[str, dict[str, dict]] = {}
    for task in tasks:
        metrics = list(summaries[0]["scores"][task])
        for s in summaries[1:]:
            if list(s["scores"].get(task, {})) != metrics:
                raise ValueError(f"the seeds report different metrics for {task!r}")
        scores[task] = {m: seed_stats([s["scores"][task][m] for s in summaries]) for m in metrics}
    runs = [
        {
            "seed": int(k),
            "dir": d,
            "average": s["average"],
            "scores": s["scores"],
            "best_step": s.get("best_step"),
            "wall_time_s": s.get("wall_time_s"),
        }
        for k, s, d in zip(seeds, summaries, dirs)
    ]
    config = dict(summaries[0].get("config") or {})
    config.pop("seed", None)
    config.pop("out", None)
    method = (config.get("adapter") or {}).get("method") if isinstance(config.get("adapter"), dict) else None
    n = len(summaries)
    return {
        "seeds": [int(k) for k in seeds],
        "n": n,
        "method": method,
        "runs": runs,
        "average": seed_stats([s["average"] for s in summaries]),
        "scores": scores,
        "params": _same_params([s["params"] for s in summaries]),
        "config": config,
        "confidence": CONFIDENCE,
        "interval": "mean ± ci95: ci95 = t_{0.975, n-1} · std / sqrt(n), std the sample standard deviation (ddof = 1); "
        "null for one seed",
        "wall_time_s": round(math.fsum(float(s.get("wall_time_s") or 0.0) for s in summaries), 3),
    }


def compare(x: Sequence[float], y: Sequence[float], confidence: float = CONFIDENCE) -> dict[str, float]:
    """Welch's t-test of mean(x) − mean(y) (module docstring): {"diff", "low", "high", "df", "p"}, the
    interval [low, high] at ``confidence``. Needs two values on each side. Neither side spread (every seed
    equal): the difference is taken as exact, [diff, diff], p = 0 if it is non-zero else 1, df = inf."""
    from scipy.stats import ttest_ind

    sx, sy = seed_stats(x), seed_stats(y)
    if len(x) < 2 or len(y) < 2:
        raise ValueError("a comparison needs at least two seeds on each side")
    diff = sx["mean"] - sy["mean"]
    if sx["std"] == 0 and sy["std"] == 0:
        return {"diff": diff, "low": diff, "high": diff, "df": math.inf, "p": 0.0 if diff != 0 else 1.0}
    with warnings.catch_warnings():  # nearly equal seeds: scipy warns of precision loss; the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        res = ttest_ind([float(v) for v in x], [float(v) for v in y], equal_var=False)
        ci = res.confidence_interval(confidence)
    return {"diff": diff, "low": float(ci.low), "high": float(ci.high), "df": float(res.df), "p": float(res.pvalue)}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given (module docstring): reject at level α where adjusted < α."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))
        adjusted[i] = running
    return adjusted
