"""Polynomials in the adapter size d_s, of degree at most 2.

Every parameter and FLOP count in this project is an exact quadratic in d_s once the base model, the tasks, the method
and its location are fixed (docs/design.md "Adapter methods (per task)", "FLOPs"). Representing the counts as
``Poly(a, b, c) = a·d_s² + b·d_s + c`` lets the solver invert them in closed form and lets the sweep evaluate millions
of configurations per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

Number = Union[int, "Poly"]


@dataclass(frozen=True, slots=True)
class Poly:
    """``a·s² + b·s + c`` with integer coefficients (s = d_s)."""

    a: int = 0
    b: int = 0
    c: int = 0

    @staticmethod
    def of(x: Number) -> Poly:
        return x if isinstance(x, Poly) else Poly(0, 0, int(x))

    def __add__(self, other: Number) -> Poly:
        o = Poly.of(other)
        return Poly(self.a + o.a, self.b + o.b, self.c + o.c)

    __radd__ = __add__

    def __mul__(self, other: Number) -> Poly:
        if type(other) is int:  # the common case (a count times a width), without building a Poly
            return Poly(self.a * other, self.b * other, self.c * other)
        o = Poly.of(other)
        if (self.a and (o.a or o.b)) or (o.a and self.b):
            raise ValueError("product has degree > 2")
        return Poly(self.a * o.c + self.b * o.b + self.c * o.a, self.b * o.c + self.c * o.b, self.c * o.c)

    __rmul__ = __mul__

    def __call__(self, s: int) -> int:
        return (self.a * s + self.b) * s + self.c

    @property
    def is_zero(self) -> bool:
        return self.a == 0 and self.b == 0 and self.c == 0

    def largest_root_below(self, limit: float) -> float:
        """The largest real s ≥ 0 with ``self(s) <= limit`` for an increasing poly (s ≥ 0).

        Returns ``math.inf`` when the poly does not depend on s and fits, ``-math.inf`` when it
        does not fit even at s = 0.
        """
        a, b, c = self.a, self.b, self.c - limit
        if c > 0:
            return -math.inf
        if a == 0 and b == 0:
            return math.inf
        if a == 0:
            return -c / b
        # a·s² + b·s + c = 0, numerically stable form of the positive root
        disc = b * b - 4 * a * c
        root = math.sqrt(disc)
        return (2 * -c) / (b + root) if b + root > 0 else (-b + root) / (2 * a)

    def __str__(self) -> str:
        terms = []
        if self.a:
            terms.append(f"{self.a}·d_s²")
        if self.b:
            terms.append(f"{self.b}·d_s")
        if self.c or not terms:
            terms.append(str(self.c))
        return " + ".join(terms)


S = Poly(0, 1, 0)
"""The adapter size d_s as a polynomial."""


class FloatPoly:
    """``a·s² + b·s + c`` with float coefficients: the step-time model's seconds as a polynomial in d_s.

    ``footprint.timing.work_seconds`` prices every op by formulas at most quadratic in d_s; run on ``S_FLOAT``
    instead of a number, the very same formulas give the coefficients (rounding apart: the trace's sum at an integer
    s stays the reference), so a design's step time is derived once and then evaluated at any size."""

    __slots__ = ("a", "b", "c")

    def __init__(self, a: float = 0.0, b: float = 0.0, c: float = 0.0) -> None:
        self.a, self.b, self.c = a, b, c

    def __add__(self, other: float | FloatPoly) -> FloatPoly:
        if type(other) is FloatPoly:
            return FloatPoly(self.a + other.a, self.b + other.b, self.c + other.c)
        return FloatPoly(self.a, self.b, self.c + other)

    __radd__ = __add__

    def __sub__(self, other: float | FloatPoly) -> FloatPoly:
        if type(other) is FloatPoly:
            return FloatPoly(self.a - other.a, self.b - other.b, self.c - other.c)
        return FloatPoly(self.a, self.b, self.c - other)

    def __rsub__(self, other: float) -> FloatPoly:
        return FloatPoly(-self.a, -self.b, other - self.c)

    def __mul__(self, other: float | FloatPoly) -> FloatPoly:
        if type(other) is not FloatPoly:
            return FloatPoly(self.a * other, self.b * other, self.c * other)
        if (self.a and (other.a or other.b)) or (other.a and self.b):
            raise ValueError("product has degree > 2")
        return FloatPoly(
            self.a * other.c + self.b * other.b + self.c * other.a,
            self.b * other.c + self.c * other.b,
            self.c * other.c,
        )

    __rmul__ = __mul__

    def __truediv__(self, other: float) -> FloatPoly:
        return FloatPoly(self.a / other, self.b / other, self.c / other)

    def __call__(self, s: float) -> float:
        return (self.a * s + self.b) * s + self.c

    @property
    def coefficients(self) -> tuple[float, float, float]:
        return self.a, self.b, self.c

    def __repr__(self) -> str:
        return f"FloatPoly({self.a!r}, {self.b!r}, {self.c!r})"


S_FLOAT = FloatPoly(0.0, 1.0, 0.0)
"""d_s as a float polynomial: what ``work_seconds`` is run on to derive a step time's coefficients."""
