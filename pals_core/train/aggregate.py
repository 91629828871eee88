"""Statistics over seeds: the aggregate ``summary.json`` of a multi-seed run (SPEC section 11).

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
parameter block every seed shares (the calculator's; seeds change no count — checked). Pure Python +
scipy (for the t quantile); no torch.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

CONFIDENCE = 0.95


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """t_{(1+confidence)/2, df}: the two-sided Student-t critical value (scipy.stats.t.ppf)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2.0, df))


def seed_stats(values: Sequence[float]) -> dict[str, Optional[float]]:
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
    runs = [{"seed": int(k), "dir": d, "average": s["average"], "scores": s["scores"], "best_step": s.get("best_step"),
             "wall_time_s": s.get("wall_time_s")} for k, s, d in zip(seeds, summaries, dirs)]
    config = dict(summaries[0].get("config") or {})
    config.pop("seed", None)
    config.pop("out", None)
    method = (config.get("adapter") or {}).get("method") if isinstance(config.get("adapter"), dict) else None
    n = len(summaries)
    return {
        "seeds": [int(k) for k in seeds], "n": n, "method": method,
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
