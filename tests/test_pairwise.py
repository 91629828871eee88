"""The pairwise covering sets the grids use (tests/pairwise.py): every pair of levels a grid holds is kept, with far
fewer cases than the product, the same cases on every run, and only cases of the grid (a refused combination never
comes back)."""

from __future__ import annotations

from itertools import product

from hypothesis import given, settings
from hypothesis import strategies as st
from pairwise import FULL_GRID_ENV, all_pairs, grid, levels_of, pairwise


def test_a_full_product_is_covered_with_far_fewer_cases():
    grid = list(product(range(4), "abc", (False, True), ("x", "y", "z")))  # 72 cases, 4·3 is the largest pair block
    kept = pairwise(grid)
    assert all_pairs(kept) == all_pairs(grid)
    assert 12 <= len(kept) <= 16  # the greedy lands near the 4 × 3 lower bound, not near 72
    assert kept == pairwise(grid) and set(kept) <= set(grid)


def test_a_constrained_grid_keeps_only_valid_cases_and_every_valid_pair():
    """Like the method grids: a location only for methods that take one, a family that refuses a method."""
    grid = [
        (fam, m, loc, frozen)
        for fam in ("bert", "deberta", "mpnet")
        for m in ("pals", "lora", "ca_mtl")
        if not (fam == "deberta" and m == "ca_mtl")
        for loc in (("all", "top") if m != "ca_mtl" else (None,))
        for frozen in (False, True)
    ]
    kept = pairwise(grid)
    assert set(kept) <= set(grid) and ("deberta", "ca_mtl") not in {(f, m) for f, m, *_ in kept}
    assert all_pairs(kept) == all_pairs(grid)
    assert len(kept) < len(grid)


def test_kept_cases_stay_and_the_rest_is_chosen_around_them():
    grid_ = list(product("abc", range(3), (False, True)))
    keep = [("a", 0, False), ("a", 0, True), ("c", 2, True)]
    kept = pairwise(grid_, keep=keep)
    assert set(keep) <= set(kept) and all_pairs(kept) == all_pairs(grid_)
    try:
        pairwise(grid_, keep=[("z", 0, False)])
    except ValueError as e:
        assert "not a case of the grid" in str(e)
    else:
        raise AssertionError("a kept case outside the grid must be refused")


def test_a_nested_factor_skips_its_pair_block_but_keeps_every_level():
    """A base within its family: family × method covered, base × method not required, every base still run."""
    bases = {"bert": ("b1", "b2", "b3"), "mpnet": ("m1", "m2")}
    grid_ = [(fam, base, m) for fam, bs in bases.items() for base in bs for m in range(6)]
    kept = pairwise(grid_, skip={(1, 2)})
    assert all_pairs(kept, skip={(1, 2)}) == all_pairs(grid_, skip={(1, 2)}) and levels_of(kept) == levels_of(grid_)
    assert len(kept) < len(all_pairs(grid_)) and len(kept) == 12  # family × method, each base somewhere among them


def test_also_covers_what_a_test_names_beyond_pairs():
    """Every family × method at one location ("all"), whatever base of the family carries it."""
    grid_ = [
        (fam, base, m, loc)
        for fam, bs in (("bert", "b1 b2"), ("mpnet", "m1 m2"))
        for base in bs.split()
        for m in range(3)
        for loc in ("all", "top", "bottom")
    ]
    at_all = lambda c: [(c[0], c[2])] if c[3] == "all" else []  # noqa: E731
    kept = pairwise(grid_, skip={(1, 2)}, also=at_all)
    assert {(f, m) for f, _, m, loc in kept if loc == "all"} == {(f, m) for f in ("bert", "mpnet") for m in range(3)}
    assert all_pairs(kept, skip={(1, 2)}) == all_pairs(grid_, skip={(1, 2)})


def test_the_full_grid_is_one_environment_variable_away(monkeypatch):
    grid_ = list(product(range(3), range(3), range(3)))
    monkeypatch.delenv(FULL_GRID_ENV, raising=False)
    assert grid(grid_) == pairwise(grid_) and len(grid(grid_)) < 27
    monkeypatch.setenv(FULL_GRID_ENV, "1")
    assert grid(grid_) == grid_
    monkeypatch.setenv(FULL_GRID_ENV, "0")
    assert grid(grid_) == pairwise(grid_)


def test_one_factor_and_empty_grids():
    assert pairwise([]) == []
    assert pairwise([("a",), ("b",), ("a",)]) == [("a",), ("b",)]


@settings(max_examples=50, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=5), st.sets(st.integers(0, 400), max_size=60))
def test_any_grid_with_holes_is_covered_pairwise(levels, holes):
    grid = [c for k, c in enumerate(product(*(range(n) for n in levels))) if k not in holes]
    kept = pairwise(grid)
    assert set(kept) <= set(grid) and all_pairs(kept) == all_pairs(grid)
    assert [grid.index(c) for c in kept] == sorted(grid.index(c) for c in kept)  # in the grid's order
