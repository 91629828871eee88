"""The whole design space at once: every method × location × d_s × number of tasks.

Built for speed (the app redraws on every keystroke): the polynomials of a design are resolved once
per (method, location, T), and each d_s then costs two quadratic evaluations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ..families.registry import get_family
from ..methods.registry import get_method
from ..pricing.config import AdapterConfig
from ..pricing.shape import BaseModel
from .costs import design, forward_flops
from .table import designs_for
from .tasks import parse_tasks


class Point(NamedTuple):
    method: str
    location: str | None
    tasks: int
    d_s: int | None
    params_total: int
    flops_per_seq: int


def sweep(
    model: BaseModel,
    *,
    sizes: Iterable[int] = range(1, 1025),
    task_counts: Iterable[int] = range(1, 33),
    methods: Iterable[str] | None = None,
    convention: str = "exact",
    seq_len: int | None = None,
    heads: int = AdapterConfig.default("heads"),
) -> Iterator[Point]:
    """Yield every valid configuration (attention methods: only d_s divisible by ``heads``)."""
    sizes = list(sizes)
    family = get_family(model.family)
    for name, loc in designs_for(methods):
        if family.refusal(name):  # a method the model's family cannot take (e.g. CA-MTL on DeBERTa): not a design
            continue
        method = get_method(name)
        valid = [s for s in sizes if not method.attention or s % heads == 0] if method.sized else [None]
        for t in task_counts:
            cfg = AdapterConfig(method=name, location=loc, heads=heads)
            ds = design(model, parse_tasks(t), cfg, convention=convention, seq_len=seq_len, check_size=False)
            extra, base = ds.extra, ds.n_base
            a, b, c = extra.a, extra.b, extra.c + base
            fa, fb, fc = ds.adapter_flops.a, ds.adapter_flops.b, ds.adapter_flops.c
            plain = forward_flops(ds, 0)[1]
            label = ds.location
            for s in valid:
                if s is None:
                    yield Point(name, label, t, None, c, plain + fc)
                else:
                    yield Point(name, label, t, s, (a * s + b) * s + c, plain + (fa * s + fb) * s + fc)
