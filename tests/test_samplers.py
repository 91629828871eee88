"""Task samplers (paper Section 4): probabilities, the annealed schedule, round-robin, the registry."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from pals_core.data.samplers import SAMPLERS, AlphaSampler, alpha_at, make_sampler, register_sampler
from pals_core.data.task_sampler import TaskSampler, num_epochs

# real GLUE training-set sizes of the five tasks with training data here
SIZES = {"rte": 2490, "mrpc": 3668, "stsb": 5749, "cola": 8551, "sst2": 67349}
N = np.array(list(SIZES.values()), dtype=float)


@pytest.mark.parametrize("kind,alpha", [("proportional", 1.0), ("sqrt", 0.5), ("uniform", 0.0)])
def test_fixed_alpha_probabilities(kind, alpha):
    s = make_sampler(kind, SIZES, total_steps=60000)
    want = N**alpha / (N**alpha).sum()
    for step in (0, 30000, 59999):
        assert np.allclose(s.probabilities(step), want, rtol=1e-12)
    if kind == "proportional":  # SST-2 dominates: 67349 / 87807
        assert s.probabilities(0)[4] == pytest.approx(0.76701, abs=1e-5)


def test_annealed_follows_the_paper():
    """α_e = 1 − 0.8·(e − 1)/(E − 1), E = 60000 / 2400 = 25 epochs."""
    s = make_sampler("annealed", SIZES, total_steps=60000)
    assert s.epochs == 25
    for e in (1, 2, 13, 25):
        want = 1 - 0.8 * (e - 1) / 24
        for step in ((e - 1) * 2400, e * 2400 - 1):
            assert s.alpha(step) == pytest.approx(want)
            assert np.allclose(s.probabilities(step), N**want / (N**want).sum())
    assert s.alpha(0) == 1.0 and s.alpha(59999) == pytest.approx(0.2)
    assert s.probabilities(59999)[0] > s.probabilities(0)[0]  # small tasks gain as α falls


def test_one_epoch_does_not_divide_by_zero():
    s = make_sampler("annealed", SIZES, total_steps=100, epoch_steps=2400)
    assert s.epochs == 1 and s.alpha(0) == s.alpha(99) == 1.0
    assert num_epochs(2401, 2400) == 2 and num_epochs(1, 2400) == 1
    g = make_sampler("alpha_schedule", SIZES, 100, alpha_start=0.3, alpha_end=0.9, alpha_shape="cosine")
    assert g.alpha(50) == pytest.approx(0.3)


def test_round_robin_cycles_through_every_task():
    s = make_sampler("round_robin", SIZES, total_steps=1000)
    rng = np.random.default_rng(0)
    drawn = [s.sample(step, rng) for step in range(20)]
    assert drawn[:5] == list(SIZES) and drawn[5:10] == list(SIZES)
    assert Counter(drawn) == {t: 4 for t in SIZES}
    assert s.probabilities(7).tolist() == [0, 0, 1, 0, 0]


@pytest.mark.parametrize("shape", ["linear", "cosine", "exponential", "step"])
def test_alpha_schedule_shapes(shape):
    s = make_sampler(
        "alpha_schedule",
        SIZES,
        total_steps=11 * 100,
        epoch_steps=100,
        alpha_start=0.9,
        alpha_end=0.1,
        alpha_shape=shape,
    )
    alphas = [s.alpha(e * 100) for e in range(11)]
    assert alphas[0] == pytest.approx(0.9) and alphas[-1] == pytest.approx(0.1)
    assert all(a >= b - 1e-12 for a, b in zip(alphas, alphas[1:]))  # monotone from start to end
    mid = alphas[5]
    assert mid == pytest.approx({"linear": 0.5, "cosine": 0.5, "step": 0.1}.get(shape, mid))
    if shape == "exponential":  # most of the change early: 64 % after a fifth
        assert alphas[2] == pytest.approx(0.9 - 0.8 * (1 - (np.exp(-1) - np.exp(-5)) / (1 - np.exp(-5))))
    assert s.alpha(150) == s.alpha(100)  # α moves once per epoch


def test_alpha_schedule_with_zero_and_rising():
    s = make_sampler("alpha_schedule", SIZES, 1000, 100, alpha_start=0.0, alpha_end=1.0, alpha_shape="exponential")
    assert s.alpha(0) == pytest.approx(0.0) and s.alpha(999) == pytest.approx(1.0)
    assert np.allclose(s.probabilities(0), 0.2)
    assert alpha_at(0.5, 1.0, 0.2, "linear") == pytest.approx(0.6)


def test_sampling_frequencies_match_probabilities():
    s = make_sampler("sqrt", SIZES, total_steps=20000)
    rng = np.random.default_rng(1)
    counts = Counter(s.sample(i, rng) for i in range(20000))
    freq = np.array([counts[t] for t in SIZES]) / 20000
    assert np.allclose(freq, s.probabilities(0), atol=0.012)


def test_same_rng_state_same_sequence():
    s = make_sampler("annealed", SIZES, total_steps=5000, epoch_steps=500)
    a, b = np.random.default_rng([7, 1]), np.random.default_rng([7, 1])
    first = [s.sample(i, a) for i in range(300)]
    state = a.bit_generator.state
    rest = [s.sample(i, a) for i in range(300, 600)]
    c = np.random.default_rng(0)
    c.bit_generator.state = state
    assert [s.sample(i, c) for i in range(300, 600)] == rest
    assert [s.sample(i, b) for i in range(300)] == first


def test_bad_input():
    with pytest.raises(ValueError, match="unknown sampling 'zigzag'"):
        make_sampler("zigzag", SIZES, 10)
    with pytest.raises(ValueError, match="unknown alpha shape"):
        make_sampler("alpha_schedule", SIZES, 10, alpha_shape="wavy")
    with pytest.raises(ValueError, match="positive integer"):
        make_sampler("sqrt", {"rte": 0}, 10)
    with pytest.raises(ValueError, match="epoch_steps"):
        make_sampler("annealed", SIZES, 10, epoch_steps=0)


def test_registry_takes_a_model_aware_sampler():
    """The hook CA-MTL's MT-Uncertainty sampler needs: candidates, then a choice made with the model."""

    class Widest(TaskSampler):
        name = "widest_batch_test"
        needs_model = True

        def probabilities(self, step):
            return np.full(len(self.tasks), 1 / len(self.tasks))

        def select(self, model, batches, step=0):
            return [batches[int(np.argmax([b["input_ids"].shape[1] for _, b in batches]))]]

    try:
        register_sampler(Widest.name)(Widest)
        s = make_sampler(Widest.name, SIZES, 10)
        assert s.needs_model and s.candidates(0, np.random.default_rng(0)) == list(SIZES)
    finally:
        SAMPLERS.pop(Widest.name, None)
    assert {"round_robin", "uniform", "proportional", "sqrt", "annealed", "alpha_schedule"} <= set(SAMPLERS)
    assert isinstance(make_sampler("annealed", SIZES, 10), AlphaSampler)
