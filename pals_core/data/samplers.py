"""Task samplers for multi-task training (Stickland & Murray 2019, Section 4; jiant-style objects).

Every training step trains on one batch of one task (MT-Uncertainty: one mixed batch). A sampler says which task:

    p_i(step) ∝ N_i^α(step)          (N_i = training examples of task i)

* ``proportional``  α = 1
* ``sqrt``          α = 0.5
* ``uniform``       α = 0 (every task equally often)
* ``annealed``      α_e = 1 − 0.8·(e − 1)/(E − 1), e = 1 … E the epoch of the step, an epoch being
                    ``epoch_steps`` (2400) steps and E = ⌈total_steps / epoch_steps⌉. With E = 1
                    α stays 1 (no division by zero). The paper's schedule.
* ``alpha_schedule`` a general α schedule for searches (alias ``alpha``): α goes from a₀ =
                    ``alpha_start`` (epoch 1) to a₁ = ``alpha_end`` (epoch E) with progress
                    π = (e − 1)/(E − 1) (π = 0 when E = 1):
                    ``linear``      α = a₀ + (a₁ − a₀)·π             (annealed = linear 1 → 0.2)
                    ``cosine``      α = a₁ + (a₀ − a₁)·(1 + cos(ππ))/2
                    ``exponential`` α = a₁ + (a₀ − a₁)·(e^(−kπ) − e^(−k))/(1 − e^(−k)), k = 5: an
                                    exponential decay from a₀ to a₁ that makes 64 % of the change in the
                                    first fifth (defined for any a₀, a₁, including 0)
                    ``step``        α = a₀ for π < ½, then a₁
                    Like the paper's, the schedule moves once per epoch, not every step.
* ``round_robin``   task ``step mod T``: every task in turn (deterministic; p is one-hot).

Interface: ``probabilities(step)`` and ``sample(step, rng) -> task name``; the sampler itself holds no
random state (the trainer owns and checkpoints the ``numpy.random.Generator``), so resuming a run
reproduces the same task sequence. Samplers that must look at the model (CA-MTL's MT-Uncertainty
sampler scores candidate batches) set ``needs_model = True`` and implement ``candidates(step, rng)``
(the tasks to draw one batch each from) and ``select(model, batches) -> [(task, rows)]``; the trainer
then draws those batches and trains one step on the selected rows (the interface: ``task_sampler.py``). New kinds register
with ``@register_sampler``; ``mt_uncertainty`` (``mt_uncertainty.py``) is registered here beside the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .mt_uncertainty import MTUncertaintySampler
from .task_sampler import DEFAULT_EPOCH_STEPS, TaskSampler, epoch_of

ALPHA_SHAPES = ("linear", "cosine", "exponential", "step")
EXPONENTIAL_RATE = 5.0  # k of the exponential α shape


def alpha_at(progress: float, start: float, end: float, shape: str) -> float:
    """α at schedule progress π ∈ [0, 1] (see the module docstring for each shape)."""
    if shape == "linear":
        return start + (end - start) * progress
    if shape == "cosine":
        return end + (start - end) * (1.0 + math.cos(math.pi * progress)) / 2.0
    if shape == "exponential":
        k = EXPONENTIAL_RATE
        return end + (start - end) * (math.exp(-k * progress) - math.exp(-k)) / (1.0 - math.exp(-k))
    if shape == "step":
        return start if progress < 0.5 else end
    raise ValueError(f"unknown alpha shape {shape!r} ({', '.join(ALPHA_SHAPES)})")


class AlphaSampler(TaskSampler):
    """p_i ∝ N_i^α with α scheduled over epochs from ``alpha_start`` to ``alpha_end``."""

    name = "alpha_schedule"

    def __init__(
        self,
        task_sizes: dict[str, int],
        total_steps: int,
        epoch_steps: int = DEFAULT_EPOCH_STEPS,
        *,
        alpha_start: float = 1.0,
        alpha_end: float | None = None,
        alpha_shape: str = "linear",
    ) -> None:
        super().__init__(task_sizes, total_steps, epoch_steps)
        alpha_end = alpha_start if alpha_end is None else alpha_end
        for label, v in (("alpha_start", alpha_start), ("alpha_end", alpha_end)):
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{label} must be a finite number, got {v!r}")
        if alpha_shape not in ALPHA_SHAPES:
            raise ValueError(f"unknown alpha shape {alpha_shape!r} ({', '.join(ALPHA_SHAPES)})")
        self.alpha_start, self.alpha_end, self.alpha_shape = float(alpha_start), float(alpha_end), alpha_shape
        self._log_sizes = np.log(self.sizes)

    def alpha(self, step: int) -> float:
        """α at ``step``: constant within an epoch."""
        e = epoch_of(step, self.epoch_steps)
        progress = 0.0 if self.epochs == 1 else min(1.0, (e - 1) / (self.epochs - 1))
        return alpha_at(progress, self.alpha_start, self.alpha_end, self.alpha_shape)

    def probabilities(self, step: int) -> np.ndarray:
        z = self.alpha(step) * self._log_sizes
        w = np.exp(z - z.max())  # N_i^α, scaled to avoid overflow
        return w / w.sum()

    def describe(self) -> dict:
        return {
            **super().describe(),
            "alpha_start": self.alpha_start,
            "alpha_end": self.alpha_end,
            "alpha_shape": self.alpha_shape,
        }


class ProportionalSampler(AlphaSampler):
    name = "proportional"

    def __init__(self, task_sizes, total_steps, epoch_steps=DEFAULT_EPOCH_STEPS, **_: Any) -> None:
        super().__init__(task_sizes, total_steps, epoch_steps, alpha_start=1.0)


class SqrtSampler(AlphaSampler):
    name = "sqrt"

    def __init__(self, task_sizes, total_steps, epoch_steps=DEFAULT_EPOCH_STEPS, **_: Any) -> None:
        super().__init__(task_sizes, total_steps, epoch_steps, alpha_start=0.5)


class UniformSampler(AlphaSampler):
    name = "uniform"

    def __init__(self, task_sizes, total_steps, epoch_steps=DEFAULT_EPOCH_STEPS, **_: Any) -> None:
        super().__init__(task_sizes, total_steps, epoch_steps, alpha_start=0.0)


class AnnealedSampler(AlphaSampler):
    """The paper's annealed sampling: α_e = 1 − 0.8·(e − 1)/(E − 1)."""

    name = "annealed"

    def __init__(self, task_sizes, total_steps, epoch_steps=DEFAULT_EPOCH_STEPS, **_: Any) -> None:
        super().__init__(task_sizes, total_steps, epoch_steps, alpha_start=1.0, alpha_end=0.2, alpha_shape="linear")


class RoundRobinSampler(TaskSampler):
    """Task ``step mod T``: each task in turn, whatever the data sizes."""

    name = "round_robin"

    def __init__(self, task_sizes, total_steps, epoch_steps=DEFAULT_EPOCH_STEPS, **_: Any) -> None:
        super().__init__(task_sizes, total_steps, epoch_steps)

    def probabilities(self, step: int) -> np.ndarray:
        p = np.zeros(len(self.tasks))
        p[step % len(self.tasks)] = 1.0
        return p

    def sample(self, step: int, rng: np.random.Generator) -> str:
        return self.tasks[step % len(self.tasks)]


SamplerFactory = Callable[..., TaskSampler]
SAMPLERS: dict[str, SamplerFactory] = {}


def register_sampler(name: str) -> Callable[[SamplerFactory], SamplerFactory]:
    """Register a sampler class (or factory) under ``name`` for ``make_sampler`` / ``--sampling``."""

    def deco(factory: SamplerFactory) -> SamplerFactory:
        SAMPLERS[name] = factory
        return factory

    return deco


for _cls in (RoundRobinSampler, UniformSampler, ProportionalSampler, SqrtSampler, AnnealedSampler, AlphaSampler):
    register_sampler(_cls.name)(_cls)
register_sampler("alpha")(AlphaSampler)
register_sampler(MTUncertaintySampler.name)(MTUncertaintySampler)


def make_sampler(
    kind: str, task_sizes: dict[str, int], total_steps: int, epoch_steps: int = DEFAULT_EPOCH_STEPS, **options: Any
) -> TaskSampler:
    """A sampler by registered name; ``options`` (alpha_start, alpha_end, alpha_shape) go to ``alpha_schedule``."""
    if kind not in SAMPLERS:
        raise ValueError(f"unknown sampling {kind!r} ({', '.join(SAMPLERS)})")
    return SAMPLERS[kind](task_sizes, total_steps, epoch_steps, **options)
