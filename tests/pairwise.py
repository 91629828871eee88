"""Pairwise covering sets for the test grids (the project's rule: "cover grids pairwise, not as full products").

A grid is the list of every *valid* case of a full product (family × method × location × …, with the combinations
a family refuses or a method cannot take already left out). ``pairwise(cases)`` keeps a subset in which every pair of
factor levels that occurs together in some valid case still occurs together in at least one kept case, and so every
single level of every factor too. Bugs that need one factor or the interplay of two are caught with a small fraction
of the cases.

``grid(cases, ...)`` is what a test module parametrises with: the covering set by default, the whole grid when the
environment sets ``PALS_FULL_GRID=1`` (``PALS_FULL_GRID=1 make test`` runs every full product; nothing is lost, it
is only not run on every commit).

The choice is deterministic (greedy set cover, ties to the earliest case): the same grid gives the same cases, the
same test ids, on every machine and every run, so a failure is reproducible and ``pytest --lf`` finds it again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from itertools import combinations
from typing import TypeVar

Case = TypeVar("Case", bound=tuple)
FULL_GRID_ENV = "PALS_FULL_GRID"


def full_grid() -> bool:
    """True when the environment asks for the full products (``PALS_FULL_GRID`` set to anything but "", "0")."""
    return os.environ.get(FULL_GRID_ENV, "") not in ("", "0")


def pairs_of(case: tuple, skip: Collection[tuple[int, int]] = ()) -> set[tuple[int, Hashable, int, Hashable]]:
    """The pairs of factor levels one case holds: (position i, level at i, position j, level at j) for i < j, except
    the position pairs in ``skip``."""
    return {(i, case[i], j, case[j]) for i, j in combinations(range(len(case)), 2) if (i, j) not in skip}


def all_pairs(
    cases: Iterable[tuple], skip: Collection[tuple[int, int]] = ()
) -> set[tuple[int, Hashable, int, Hashable]]:
    """Every pair of levels that occurs together in at least one of ``cases`` (the pairs a covering set must keep)."""
    out: set[tuple[int, Hashable, int, Hashable]] = set()
    for case in cases:
        out |= pairs_of(case, skip)
    return out


def levels_of(cases: Iterable[tuple]) -> set[tuple[int, Hashable]]:
    """Every (position, level) that occurs in ``cases``."""
    return {(i, level) for case in cases for i, level in enumerate(case)}


Also = Callable[[tuple], Iterable[Hashable]]


def _features(case: tuple, skip: Collection[tuple[int, int]], also: Also | None) -> set:
    out: set = pairs_of(case, skip) | {(i, level) for i, level in enumerate(case)}
    if also is not None:
        out |= {("also", f) for f in also(case)}
    return out


def pairwise(
    cases: Sequence[Case],
    *,
    keep: Iterable[Case] = (),
    skip: Collection[tuple[int, int]] = (),
    also: Also | None = None,
) -> list[Case]:
    """A subset of ``cases`` (all of the same length, hashable levels) covering every pair ``all_pairs(cases, skip)``
    holds and every single level.

    ``keep``: cases of the grid kept whatever they cover (the explicit cases a test names, e.g. every location ×
    freeze on one base); the rest is chosen around them. ``skip``: position pairs (i, j), i < j, whose level pairs need
    not all occur together — for a factor nested in another (a base configuration within its family: family × method
    is covered, base × method only as far as it falls out), where the full pair block would be most of the product.
    ``also``: more that must be covered, as the features one case holds (``also(case)``, hashables); e.g. every
    family × method *at one location*: ``lambda c: [(c[0], c[2])] if c[3] == "all" else []``.

    Greedy: repeatedly keep the case that covers the most features not yet covered (the earliest one on a tie), until
    none is left; the kept cases come back in the order of ``cases``. A one-factor grid is returned whole (once each).
    """
    cases = list(dict.fromkeys(cases))
    if not cases:
        return []
    if len({len(c) for c in cases}) != 1:
        raise ValueError("pairwise: every case needs the same number of factors")
    index = {c: k for k, c in enumerate(cases)}
    kept = set()
    for case in keep:
        if case not in index:
            raise ValueError(f"pairwise: kept case {case!r} is not a case of the grid")
        kept.add(index[case])
    case_features = [_features(c, skip, also) for c in cases]
    holders: dict[Hashable, list[int]] = {}  # feature -> the cases holding it
    for k, fs in enumerate(case_features):
        for f in fs:
            holders.setdefault(f, []).append(k)
    uncovered = set(holders)
    new = [len(fs) for fs in case_features]  # features each case would newly cover

    def take(k: int) -> None:
        kept.add(k)
        for f in case_features[k] & uncovered:
            uncovered.discard(f)
            for other in holders[f]:
                new[other] -= 1

    for k in sorted(kept):
        take(k)
    while uncovered:
        take(max(range(len(cases)), key=lambda k: (new[k], -k)))
    return [cases[k] for k in sorted(kept)]


def grid(
    cases: Sequence[Case],
    *,
    keep: Iterable[Case] = (),
    skip: Collection[tuple[int, int]] = (),
    also: Also | None = None,
) -> list[Case]:
    """The cases a test runs: ``pairwise(cases, keep=, skip=, also=)``, or every case when ``PALS_FULL_GRID=1``."""
    return list(dict.fromkeys(cases)) if full_grid() else pairwise(cases, keep=keep, skip=skip, also=also)
