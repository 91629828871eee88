"""CA-MTL's torch modules (pals_core/methods/ca_mtl/module.py) and MT-Uncertainty sampling (pals_core/data/mt_uncertainty.py).

Counts to the parameter and FLOP are in test_exactness.py (every method × location); here: what the
modules do — the released formulas (gain-only conditional LayerNorm, the adapter layer), what still equals
the base model (identity at initialisation no longer holds: the adapter layer starts from scratch and the
generators are not zero), task conditioning, freezing, the attention bias layout — and MT-Uncertainty.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import BertConfig

from pals_core.budget.costs import design
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.data.mt_uncertainty import (
    MTUncertaintySampler,
    fill_regression,
    most_uncertain,
    shares,
    uncertainty_scores,
)
from pals_core.data.samplers import SAMPLERS, make_sampler
from pals_core.families.shapes import from_hf_config
from pals_core.methods.ca_mtl.module import CaMtlShared, ConditionalAttentionBias
from pals_core.model import MultiTaskBert
from pals_core.pricing.config import AdapterConfig

torch.set_num_threads(1)

HF = BertConfig(
    hidden_size=24,
    num_hidden_layers=4,
    num_attention_heads=4,
    intermediate_size=40,
    vocab_size=60,
    max_position_embeddings=40,
)
TASKS = {"rte": 2, "mnli": 3, "stsb": 1}


def build(**kw) -> MultiTaskBert:
    torch.manual_seed(0)
    cfg = AdapterConfig(method="ca_mtl", d_s=kw.pop("d_s", 8), cond_attn_max_len=16, cond_attn_blocks=4, **kw)
    return MultiTaskBert.from_base_config(HF, cfg, TASKS).eval()


def inputs(batch=3, n=10, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, HF.vocab_size, (batch, n), generator=g)
    mask = torch.ones_like(ids)
    mask[0, n - 3 :] = 0  # one padded sequence
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def plain_logits(model: MultiTaskBert, task: str, x: dict) -> torch.Tensor:
    """The base model's pooled [CLS] through the task's head: what CA-MTL must equal at initialisation."""
    pooled = model.bert(**x).pooler_output
    return model.heads[task](pooled)


def randomise_shared(model: MultiTaskBert, seed=2) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.shared_adapter.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))


def zero_generators(model: MultiTaskBert) -> None:
    """Every FiLM generator to zero: each conditional module reduces to its unconditioned form."""
    with torch.no_grad():
        for name, p in model.shared_adapter.named_parameters():
            if ".film." in name or name.startswith(("alignment.", "norm_attention.", "norm_output.")):
                p.zero_()


def test_below_the_adapter_layer_the_base_model_is_kept():
    """Identity at initialisation does not hold as released (fresh adapter layer, N(0, 0.02) generators). What
    holds: with the generators zeroed, the embeddings and every layer below the adapter layer compute exactly the
    base model's, and the adapter layer's weights are new (not the checkpoint's)."""
    torch.manual_seed(0)
    base = MultiTaskBert.from_base_config(HF, AdapterConfig(method="shared"), TASKS).eval()
    model = build()
    model.bert.load_state_dict({k: v for k, v in base.bert.state_dict().items() if ".layer.3." not in k}, strict=False)
    assert not torch.equal(
        model.bert.encoder.layer[3].output.dense.weight, base.bert.encoder.layer[3].output.dense.weight
    )
    zero_generators(model)
    x = inputs()
    with torch.no_grad():
        for task in TASKS:
            adapter = model.adapters[task]
            h, state = model._embed(x["input_ids"], x["attention_mask"], x["token_type_ids"])
            ours = model.trunk.run(0, 3, adapter.adapt_embeddings(h), state, adapter)
            plain = base.trunk.run(0, 3, h, state, None)
            torch.testing.assert_close(ours, plain, atol=1e-5, rtol=1e-5)


def test_released_formulas_of_the_conditional_layernorm_and_the_adapter_layer():
    """With random generators: LN1/LN2 of the top half are gain-only, LN((1 + γ) ⊙ w₀ + β, b₀); the adapter layer
    returns CLN₃(a + U · D · ((1 + γ') ⊙ y + β')), [γ'; β'] = FiLM(T z), linear, with its own gain modulated."""
    model, x = build(), inputs()
    randomise_shared(model)
    sh, adapter, layer = model.shared_adapter, model.adapters["rte"], model.bert.encoder.layer[3]
    with torch.no_grad():
        z = adapter.task_condition()
        h, state = model._embed(x["input_ids"], x["attention_mask"], x["token_type_ids"])
        mask = state.mask
        h = model.trunk.run(0, 3, adapter.adapt_embeddings(h), state, adapter)

        def cln(gen, norm, v):
            g, b = gen(z).squeeze(0).chunk(2)
            return F.layer_norm(v, norm.normalized_shape, (1 + g) * norm.weight + b, norm.bias, norm.eps)

        probe = torch.randn(2, 5, HF.hidden_size)
        ln1 = layer.attention.output.LayerNorm
        torch.testing.assert_close(
            adapter.attention_norm(2, model.bert.encoder.layer[2].attention.output.LayerNorm, probe),
            cln(sh.norm_attention["2"], model.bert.encoder.layer[2].attention.output.LayerNorm, probe),
        )
        assert sh.norm_attention.keys() == {"2", "3"}  # the top half only
        torch.testing.assert_close(
            adapter.attention_norm(1, model.bert.encoder.layer[1].attention.output.LayerNorm, probe),
            model.bert.encoder.layer[1].attention.output.LayerNorm(probe),
        )
        # the adapter layer, by hand
        from pals_core.families.bert.trunk import self_attention

        sa = layer.attention.self
        ctx = self_attention(sa, h, sa.query(h), sa.key(h), sa.value(h), adapter.adapt_attention_mask(3, mask, h))
        a = cln(sh.norm_attention["3"], ln1, layer.attention.output.dense(ctx) + h)
        y = cln(sh.norm_output["3"], layer.output.LayerNorm, layer.output.dense(layer.intermediate(a)) + a)
        g, b = sh.bottleneck["3"].film(sh.bottleneck["3"].transform(z)).squeeze(0).chunk(2)
        bott = sh.bottleneck["3"].up(sh.bottleneck["3"].down((1 + g) * y + b))
        expected = cln(sh.adapter_norm["3"].film, sh.adapter_norm["3"].LayerNorm, a + bott)
        ours = model.trunk.run(3, 4, h, state, adapter)
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)


def test_tasks_are_conditioned_and_predict_all_runs_each_path():
    model, x = build(location="top"), inputs()
    randomise_shared(model)
    with torch.no_grad():
        model.heads["mnli"].load_state_dict(
            {"weight": torch.cat([model.heads["rte"].weight, model.heads["rte"].weight[:1]]), "bias": torch.zeros(3)}
        )
        model.heads["rte"].bias.zero_()
        a = model(task="rte", **x)
        b = model(task="mnli", **x)[:, :2]  # the same head rows, another task embedding
        assert not torch.allclose(a, b, atol=1e-4)
        assert not torch.allclose(a, plain_logits(model, "rte", x), atol=1e-4)
        everything = model.predict_all(**x)
        for task in TASKS:
            torch.testing.assert_close(everything[task], model(task=task, **x), atol=1e-5, rtol=1e-5)


def test_lower_layers_are_frozen_as_the_calculator_says():
    for frozen in (None, 0, 3):
        model = build(frozen_layers=frozen)
        cost = at_size(design(from_hf_config(HF.to_dict()), parse_tasks(TASKS), model.config), model.config.d_s)
        assert sum(p.numel() for p in model.trainable_parameters()) == cost.params_trained
        f = 1 if frozen is None else frozen  # default ⌊L/2⌋ − 1 (released: 0–4 of 12)
        assert all(not p.requires_grad for p in model.bert.embeddings.parameters()) == (f > 0)
        for i, layer in enumerate(model.bert.encoder.layer):
            assert all(p.requires_grad != (i < f) for p in layer.parameters())
        assert all(p.requires_grad for p in model.shared_adapter.parameters())


def test_one_step_trains_embeddings_and_shared_modules_not_frozen_layers():
    model = build()
    model.train()
    randomise_shared(model)  # non-zero generators: gradients reach the task embedding
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.trainable_parameters(), lr=1e-2)
    x = inputs()
    loss = torch.nn.functional.cross_entropy(model(task="rte", **x), torch.tensor([0, 1, 1]))
    loss.backward()
    opt.step()
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert "adapters.rte.embedding" in changed and "adapters.mnli.embedding" not in changed
    assert any(n.startswith("shared_adapter.attention.") for n in changed)
    assert any(n.startswith("shared_adapter.bottleneck.") for n in changed)
    assert not any(n.startswith(("bert.embeddings.", "bert.encoder.layer.0.")) for n in changed)
    assert any(n.startswith("bert.encoder.layer.1.") for n in changed)
    assert any(n.startswith("bert.encoder.layer.3.") for n in changed)


def test_attention_bias_is_block_diagonal_and_covers_any_length():
    """The released layout: one M × m matrix, M = 10, N_b = 3, m = 4; blocks of 4, 4 and 2 rows (the last uses 2 of
    its 4 columns), so the bias covers exactly M positions."""
    bias = ConditionalAttentionBias(z_dim=5, length=10, size=4, std=0.02)
    with torch.no_grad():
        bias.blocks.normal_()
        bias.film.weight.normal_()
    assert bias.blocks.shape == (10, 4)
    z = torch.randn(1, 5)
    full = bias(z, 10)
    mask = torch.block_diag(torch.ones(4, 4), torch.ones(4, 4), torch.ones(2, 2)).bool()
    assert full.shape == (10, 10) and torch.all(full[~mask] == 0) and torch.all(full[mask] != 0)
    g, b = bias.film(z).squeeze(0).chunk(2)
    torch.testing.assert_close(full[8:, 8:], ((1 + g) * bias.blocks + b)[8:, :2])
    torch.testing.assert_close(bias(z, 7), full[:7, :7])
    longer = bias(z, 15)  # beyond M: no bias there
    torch.testing.assert_close(longer[:10, :10], full)
    assert torch.all(longer[10:] == 0) and torch.all(longer[:, 10:] == 0)
    model, x = build(), inputs(n=30)  # 30 > M = 16 tokens
    randomise_shared(model)
    with torch.no_grad():
        assert torch.isfinite(model(task="rte", **x)).all()


def test_shared_modules_are_registered_once():
    model = build()
    names = [n for n, _ in model.named_parameters()]
    assert sum(n.startswith("shared_adapter.") for n in names) > 0
    assert [n for n in names if n.startswith("adapters.")] == [f"adapters.{t}.embedding" for t in TASKS]
    assert isinstance(model.shared_adapter, CaMtlShared)
    state = model.state_dict()  # saved once too, not under every task
    assert [k for k in state if k.startswith("adapters.")] == [f"adapters.{t}.embedding" for t in TASKS]
    assert {k for k in state if k.startswith("shared_adapter.")} == {
        n for n in names if n.startswith("shared_adapter.")
    }


# --- MT-Uncertainty ----------------------------------------------------------------------------------


def test_scores_normalise_by_task_and_keep_the_most_uncertain():
    h = [np.array([0.1, 0.9]), np.array([0.5, 0.5]), np.array([np.nan, np.nan])]  # the last: regression
    u = uncertainty_scores(h)  # step 0: the regression task copies classification task 0
    np.testing.assert_allclose(u[0], [0.1, 0.9])
    np.testing.assert_allclose(u[2], [0.1, 0.9])
    assert most_uncertain(u, 3) == [(0, 1), (2, 1), (1, 0)]  # 0.9 twice (ties interleave by row), then 0.5
    np.testing.assert_allclose(uncertainty_scores(h, step=1)[2], [0.5, 0.5])  # step 1: task 1, in turn
    two = fill_regression(
        [np.array([0.2, 0.4, 0.6]), np.array([np.nan] * 4), np.array([np.nan] * 2), np.array([0.7, 0.8])], step=3
    )
    np.testing.assert_allclose(two[1], [0.7, 0.8, 0.7, 0.8])  # (3 + 0) mod 2 = 1: the second classification task
    np.testing.assert_allclose(two[2], [0.2, 0.4])  # (3 + 1) mod 2 = 0
    assert uncertainty_scores([np.array([np.nan])])[0].tolist() == [1.0]  # regression only: all alike


def test_mt_uncertainty_prefers_the_task_the_model_is_unsure_about():
    """A real model whose rte head is made confident (a large bias) and whose mnli head is uniform."""
    assert "mt_uncertainty" in SAMPLERS
    model = build()
    with torch.no_grad():
        model.heads["rte"].weight.zero_()
        model.heads["rte"].bias.copy_(torch.tensor([8.0, -8.0]))
        model.heads["mnli"].weight.zero_()
        model.heads["mnli"].bias.zero_()
    model.train()
    sampler = make_sampler("mt_uncertainty", {"rte": 100, "mnli": 50, "stsb": 70}, total_steps=10)
    assert isinstance(sampler, MTUncertaintySampler) and sampler.needs_model
    rng = np.random.default_rng(0)
    tasks = sampler.candidates(0, rng)
    assert tasks == ["rte", "mnli", "stsb"]
    batches = [
        (t, {**inputs(batch=4, seed=i), "labels": torch.zeros(4, dtype=torch.long)}) for i, t in enumerate(tasks)
    ]
    chosen = sampler.select(model, batches)
    assert [t for t, _ in chosen] == ["mnli"] and len(chosen[0][1]["labels"]) == 4
    assert model.training  # scoring ran in eval mode and put the model back
    u = sampler.scores(model, batches)
    assert u[1].min() > 0.999 and u[0].max() < 1e-3 and np.allclose(u[2], u[0])  # step 0: stsb copies rte


def test_mixed_batch_keeps_the_most_uncertain_rows_of_every_task():
    """rte's head uniform (H' = 1) on a candidate batch of 2, mnli's confident (H' ≈ 0) on 4, stsb (regression) on 4:
    b = 4; at step 0 stsb copies rte's H' (cyclically: [1, 1, 1, 1]) and ties with it row for row, so the mixed batch
    is rte's rows 0, 1 and stsb's rows 0, 1, each part trimmed to its own longest sequence."""
    model = build()
    with torch.no_grad():
        model.heads["rte"].weight.zero_()
        model.heads["rte"].bias.zero_()
        model.heads["mnli"].weight.zero_()
        model.heads["mnli"].bias.copy_(torch.tensor([9.0, -9.0, -9.0]))
    sampler = make_sampler("mt_uncertainty", {"rte": 10, "mnli": 10, "stsb": 10}, total_steps=10)
    batches = [
        (t, {**inputs(batch=n, seed=i), "labels": torch.arange(n)})
        for i, (t, n) in enumerate([("rte", 2), ("mnli", 4), ("stsb", 4)])
    ]
    batches[2][1]["attention_mask"][:2, 7:] = 0  # stsb rows 0, 1 end after 7 tokens
    u = sampler.scores(model, batches, step=0)
    np.testing.assert_allclose(u[2], [1, 1, 1, 1], atol=1e-6)
    chosen = sampler.select(model, batches, step=0)
    assert [t for t, _ in chosen] == ["rte", "stsb"]
    assert chosen[0][1]["labels"].tolist() == [0, 1] and chosen[1][1]["labels"].tolist() == [0, 1]
    assert chosen[1][1]["input_ids"].shape == (2, 7)
    np.testing.assert_allclose(sampler.scores(model, batches, step=1)[2], u[1])  # step 1: stsb copies mnli


def test_released_shares_on_the_constructed_four_task_case():
    """Four tasks whose candidates' H' have means 0.55 / 0.50 / 0.45 / 0.30 (drawn N(μ_t, 0.18²),
    clipped to [0, 1], b = 32, 500 steps). The released algorithm (most uncertain b of the T·b candidates as one
    batch) trains them in shares 0.54 / 0.32 / 0.14 / 0.00 (the project's former one-task-per-step choice: 0.88 /
    0.12 / 0.00 / 0.00 of the steps)."""
    rng = np.random.default_rng(0)
    mu, b, total, seen = np.array([0.55, 0.50, 0.45, 0.30]), 32, np.zeros(4), np.zeros(4)
    for _ in range(500):
        h = [np.clip(rng.normal(m, 0.18, b), 0.0, 1.0) for m in mu]
        seen += [x.mean() for x in h]
        total += shares(uncertainty_scores(h), b)
    np.testing.assert_allclose(seen / 500, mu, atol=0.005)
    np.testing.assert_allclose(total / total.sum(), [0.54, 0.32, 0.14, 0.00], atol=0.005)


# --- training ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_trains_with_mt_uncertainty_and_resumes_to_the_same_numbers(tmp_path, glue_dir, token_cache):
    """pals-train's trainer with --method ca_mtl --sampling mt_uncertainty on real GLUE rows: a run stopped
    after its first evaluation and resumed ends exactly where an uninterrupted run ends."""
    from pals_core.train.config import TrainConfig
    from pals_core.train.trainer import train

    def cfg(out):
        return TrainConfig(
            tasks=["rte", "stsb"],
            adapter=AdapterConfig(method="ca_mtl", d_s=8, location="top", frozen_layers=1),
            model="tiny",
            glue_dir=str(glue_dir),
            out=str(out),
            steps=8,
            batch_size=8,
            max_len=48,
            eval_every=4,
            lr=1e-3,
            max_train_examples=64,
            max_eval_examples=32,
            seed=5,
            num_threads=1,
            sampling="mt_uncertainty",
            cache_dir=token_cache,
        )

    class Stop(Exception):
        pass

    def stop(step, scores, average):
        raise Stop

    reference = train(cfg(tmp_path / "ref"), progress=False)
    with pytest.raises(Stop):
        train(cfg(tmp_path / "run"), progress=False, on_eval=stop)
    resumed = train(cfg(tmp_path / "run"), progress=False, resume=True)
    for key in ("scores", "average", "params", "steps", "task_steps", "final"):
        assert resumed[key] == reference[key], key
    assert reference["steps"] == 8 and all(reference["task_steps"][t] > 0 for t in ("rte", "stsb"))
    assert sum(reference["task_steps"].values()) >= 8  # a mixed batch counts for every task it holds
    assert reference["params"]["trained"] < reference["params"]["total"]  # layer 0 and the embeddings are frozen
