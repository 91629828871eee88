"""Every sampler trains every task it was given (regression tasks included), and MT-Uncertainty's
mixed batch is one optimiser step on the mean of the per-task mean losses (docs/design.md "Multi-task training"). Real
GLUE rows, the trainer's own step."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from pals_core.data.samplers import SAMPLERS
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig

GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
pytestmark = pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")
TASKS = ["rte", "stsb", "mrpc"]  # a regression task between two classification tasks


def config(out, cache, sampling, **kw) -> TrainConfig:
    base = dict(
        tasks=TASKS,
        adapter=AdapterConfig(method="ca_mtl", d_s=8),
        model="tiny",
        glue_dir=str(GLUE),
        out=str(out),
        steps=30,
        batch_size=8,
        max_len=48,
        eval_every=30,
        lr=1e-3,
        max_train_examples=96,
        max_eval_examples=16,
        seed=3,
        num_threads=1,
        cache_dir=str(cache),
        sampling=sampling,
    )
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.slow  # a training per sampler; the mixed batch below and tests/test_samplers.py run in every run
@pytest.mark.parametrize("sampling", sorted(SAMPLERS))
def test_every_sampler_trains_every_task(tmp_path, token_cache, sampling):
    from pals_core.train.trainer import train

    summary = train(config(tmp_path / "run", token_cache, sampling), progress=False)
    assert summary["steps"] == 30
    assert all(summary["task_steps"][t] > 0 for t in TASKS), summary["task_steps"]


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_mixed_batch_is_one_step_on_the_mean_of_per_task_mean_losses(tmp_path, token_cache):
    from pals_core.train.params import resolve
    from pals_core.train.rundir import RunDir
    from pals_core.train.trainer import _Run, check_data

    cfg = resolve(config(tmp_path / "run", token_cache, "mt_uncertainty", grad_clip=None, tasks=["rte", "stsb"]))
    r = _Run(cfg, RunDir(cfg.out), False, None, check_data(cfg))
    r.setup(resume=False)
    r.model.train()
    parts = [("rte", r.data["rte"].train.batch(list(range(5)))), ("stsb", r.data["stsb"].train.batch(list(range(3))))]
    torch.manual_seed(0)  # the same dropout masks in both computations
    rte = F.cross_entropy(
        r.net(task="rte", **{k: v for k, v in parts[0][1].items() if k != "labels"}), parts[0][1]["labels"]
    )
    stsb = F.mse_loss(
        r.net(task="stsb", **{k: v for k, v in parts[1][1].items() if k != "labels"}).squeeze(-1),
        (parts[1][1]["labels"].float() - r.scales["stsb"]["mean"]) / r.scales["stsb"]["std"],  # standardised targets
    )
    expected = (rte + stsb) / 2  # not the mean over the 8 rows: each task weighs the same
    expected.backward()
    grads = {n: p.grad.clone() for n, p in r.net.named_parameters() if p.grad is not None}
    r.optimizer.zero_grad(set_to_none=True)
    seen = {}
    hooks = [
        p.register_hook(lambda g, n=n: seen.__setitem__(n, g.clone()))
        for n, p in r.net.named_parameters()
        if p.requires_grad
    ]
    torch.manual_seed(0)
    loss = r.train_step(parts)
    for h in hooks:
        h.remove()
    torch.testing.assert_close(loss, expected.detach())
    assert seen.keys() == grads.keys()
    for n in grads:
        torch.testing.assert_close(seen[n], grads[n])
    steps = {int(s["step"]) for s in r.optimizer.optimizer.state.values()}
    assert steps == {1}  # one optimiser step for the whole mixed batch
    for head in ("heads.rte.weight", "heads.stsb.weight"):  # both tasks' heads got their gradient in that one step
        assert seen[head].abs().sum() > 0
