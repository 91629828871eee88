"""Configurations nobody wrote a preset for: every option of every family is priced exactly or refused in one line.

For tiny random configs of each supported ``model_type`` with one non-default option (an explicit grid) and with
several at once (hypothesis, derandomised), the calculator EITHER refuses the config — ``ValueError`` in one line
from ``from_hf_config`` and from ``MultiTaskModel.from_base_config`` (what is priced is what is built), and
``pals-budget --model config.json`` exits 2 with one stderr line — OR agrees with torch exactly:

  N_base                       == sum(p.numel()) of ``transformers.AutoModel.from_config(config)``
  params_total, params_trained == the built MultiTaskModel (shared, pals, houlsby at every layer)
  flops_per_seq                == FlopCounterMode on one sequence
  memory_train activations     == the bytes ``saved_tensors_hooks`` sees (families whose forward is replayed)
  (every method on a few other activations: also gradients and AdamW state == what torch holds after a step)

``test_every_method_on_another_activation`` runs a pairwise covering set of configurations × methods (every method
on every activation and in every family, tests/pairwise.py); ``PALS_FULL_GRID=1`` runs the full product.
``test_every_activation_keeps_what_the_table_says`` holds ``pricing.activations.ACTIVATIONS`` to torch for every
activation transformers names (docs/design.md "Memory (bytes)"; docs/calculator.md "What a config may hold").
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from flops import count_forward_flops
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_probe import batch_inputs, optimizer_state_bytes, saved_activation_bytes
from pairwise import grid
from tiny_models import tiny_config_json
from transformers import AutoConfig, AutoModel
from transformers.activations import ACT2CLS, ACT2FN

from pals_core.budget.costs import base_params, design
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.cli.budget import main as pals_budget
from pals_core.families.registry import get_family
from pals_core.families.shapes import conditions_from_config, from_hf_config
from pals_core.footprint.memory import activation_bytes, memory_train
from pals_core.methods.registry import METHODS, get_method
from pals_core.model import MultiTaskModel
from pals_core.pricing.activations import (
    ACTIVATIONS,
    PARAMETRISED_ACTIVATIONS,
    Conditions,
    Sym,
    Trace,
    check_activation,
)
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.poly import Poly

torch.set_num_threads(1)

N, B = 8, 2  # tokens per sequence (a multiple of the chunk sizes below), sequences per batch
TASKS = {"rte": 2, "stsb": 1}
_ROBERTA = dict(
    hidden_size=12,
    num_hidden_layers=2,
    num_attention_heads=3,
    intermediate_size=17,
    vocab_size=23,
    max_position_embeddings=20,
    type_vocab_size=1,
    pad_token_id=1,
)
BASES = {
    "bert": dict(
        hidden_size=12,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=17,
        vocab_size=23,
        max_position_embeddings=16,
        type_vocab_size=2,
    ),
    "roberta": _ROBERTA,
    "xlm-roberta": _ROBERTA,
    "camembert": _ROBERTA,
    "distilbert": dict(dim=12, n_layers=2, n_heads=2, hidden_dim=17, vocab_size=23, max_position_embeddings=16),
    "electra": dict(
        embedding_size=8,
        hidden_size=12,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=17,
        vocab_size=23,
        max_position_embeddings=16,
        type_vocab_size=2,
    ),
    "deberta-v2": dict(
        hidden_size=12,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=17,
        vocab_size=23,
        max_position_embeddings=16,
        relative_attention=True,
        position_buckets=4,
        pos_att_type="p2c|c2p",
        share_att_key=True,
        position_biased_input=False,
        type_vocab_size=0,
        norm_rel_ebd="layer_norm",
    ),
    "modernbert": dict(
        hidden_size=12,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=9,
        vocab_size=23,
        local_attention=4,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        cls_token_id=2,
        sep_token_id=1,
    ),
    "mpnet": dict(
        hidden_size=12,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=17,
        vocab_size=23,
        max_position_embeddings=16,
    ),
    "albert": dict(
        embedding_size=8,
        hidden_size=12,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=17,
        vocab_size=23,
        max_position_embeddings=16,
    ),
}
DROPOUT_OFF = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
# (model_type, options, refused?) — refused: the one line names the option
GRID = [
    ("bert", dict(hidden_act="relu"), False),
    ("bert", dict(hidden_act="silu"), False),
    ("bert", dict(hidden_act="gelu_new"), False),
    ("bert", dict(hidden_act="gelu_pytorch_tanh"), False),
    ("bert", dict(hidden_act="quick_gelu", attn_implementation="eager"), False),
    ("bert", dict(hidden_act="linear"), False),
    ("bert", dict(hidden_act="prelu"), "hidden_act"),
    ("bert", dict(position_embedding_type="relative_key"), False),
    ("bert", dict(is_decoder=True), "is_decoder"),
    ("bert", dict(is_decoder=True, add_cross_attention=True), "is_decoder"),
    ("bert", dict(chunk_size_feed_forward=4), False),
    ("bert", dict(pruned_heads={"0": [0]}), False),
    ("bert", dict(classifier_dropout=0.0, **DROPOUT_OFF), False),
    ("bert", dict(dtype="bfloat16"), False),
    ("bert", dict(attn_implementation="flex_attention"), "attn_implementation"),
    ("bert", dict(type_vocab_size=0), "type_vocab_size"),
    ("bert", dict(tie_word_embeddings=False), False),
    ("bert", dict(layer_norm_eps=1e-5, initializer_range=0.5), False),
    ("roberta", dict(hidden_act="relu", attn_implementation="eager"), False),
    ("xlm-roberta", dict(classifier_dropout=0.3, hidden_act="gelu_fast"), False),
    ("camembert", dict(type_vocab_size=2, hidden_act="tanh"), False),
    ("distilbert", dict(activation="relu"), False),
    ("distilbert", dict(activation="silu"), False),
    ("distilbert", dict(activation="xielu"), "activation"),
    ("distilbert", dict(sinusoidal_pos_embds=True, qa_dropout=0.5), False),
    (
        "distilbert",
        dict(dropout=0.0, attention_dropout=0.0, seq_classif_dropout=0.0, attn_implementation="eager"),
        False,
    ),
    ("electra", dict(embedding_size=12), False),
    ("electra", dict(hidden_act="relu", classifier_dropout=0.0), False),
    ("electra", dict(summary_type="mean", summary_use_proj=False, **DROPOUT_OFF), False),
    ("electra", dict(is_decoder=True), "is_decoder"),
    ("electra", dict(embedding_size=None), "embedding_size"),
    ("deberta-v2", dict(relative_attention=False), False),
    ("deberta-v2", dict(norm_rel_ebd="none"), False),
    ("deberta-v2", dict(share_att_key=False), False),
    ("deberta-v2", dict(share_att_key=False, pos_att_type="c2p"), False),
    ("deberta-v2", dict(share_att_key=False, pos_att_type=["p2c"]), False),
    ("deberta-v2", dict(pos_att_type=None), False),
    ("deberta-v2", dict(position_buckets=-1, max_relative_positions=5), False),
    ("deberta-v2", dict(position_buckets=-1, max_relative_positions=-1), False),
    ("deberta-v2", dict(position_biased_input=True, type_vocab_size=2, embedding_size=8), False),
    ("deberta-v2", dict(conv_kernel_size=3, conv_groups=2, conv_act="gelu"), False),
    ("deberta-v2", dict(hidden_act="relu", pooler_hidden_act="tanh"), False),
    ("deberta-v2", dict(attention_head_size=6, legacy=False), False),
    ("deberta-v2", dict(attention_head_size=4), "attention_head_size"),
    ("deberta-v2", dict(conv_kernel_size=2), "conv_kernel_size"),
    ("deberta-v2", dict(conv_kernel_size=3, conv_groups=5), "conv_groups"),
    ("deberta-v2", dict(embedding_size=None), "embedding_size"),
    ("deberta-v2", dict(hidden_act="prelu"), "hidden_act"),
    ("deberta-v2", dict(attn_implementation="sdpa"), "attn_implementation"),
    ("modernbert", dict(classifier_pooling="mean"), False),
    ("modernbert", dict(hidden_activation="silu"), False),
    ("modernbert", dict(hidden_activation="relu", classifier_activation="relu"), False),
    ("modernbert", dict(mlp_bias=True, attention_bias=True, norm_bias=True, classifier_bias=True), False),
    ("modernbert", dict(global_attn_every_n_layers=1), False),
    ("modernbert", dict(local_attention=64), False),
    ("modernbert", dict(layer_types=["full_attention", "full_attention", "sliding_attention"]), False),
    (
        "modernbert",
        dict(
            attn_implementation="eager",
            mlp_dropout=0.1,
            attention_dropout=0.1,
            embedding_dropout=0.1,
            classifier_dropout=0.1,
        ),
        False,
    ),
    (
        "modernbert",
        dict(
            rope_parameters={
                "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e3},
                "sliding_attention": {"rope_type": "default", "rope_theta": 1e2},
            }
        ),
        False,
    ),
    ("modernbert", dict(head_dim=4), "head_dim"),
    ("modernbert", dict(head_dim=6, decoder_bias=False, sparse_prediction=True), False),
    ("modernbert", dict(hidden_activation="prelu"), "hidden_activation"),
    ("modernbert", dict(classifier_activation="xielu"), "classifier_activation"),
    ("modernbert", dict(layer_types=["full_attention", "chunked_attention", "full_attention"]), "layer_types"),
    ("bert", dict(pad_token_id=30), "pad_token_id"),
    ("deberta-v2", dict(pad_token_id=23), "pad_token_id"),
    ("roberta", dict(vocab_size=1), "pad_token_id"),
    ("mpnet", dict(hidden_act="relu"), False),
    ("mpnet", dict(hidden_act="gelu_new"), False),
    ("mpnet", dict(relative_attention_num_buckets=40), False),
    ("mpnet", dict(pad_token_id=0, **DROPOUT_OFF), False),
    ("mpnet", dict(classifier_dropout=0.3, layer_norm_eps=1e-5), False),
    ("mpnet", dict(is_decoder=True, add_cross_attention=True), False),  # MPNet's modules never read them
    ("mpnet", dict(attn_implementation="eager"), False),
    ("mpnet", dict(relative_attention_num_buckets=16), "relative_attention_num_buckets"),
    ("mpnet", dict(attn_implementation="sdpa"), "attn_implementation"),
    ("mpnet", dict(hidden_act="prelu"), "hidden_act"),
    ("mpnet", dict(pad_token_id=23), False),  # never read: the padding row is 1 whatever it says
    ("mpnet", dict(vocab_size=1), "vocab_size"),  # ... and row 1 must exist
    ("albert", dict(hidden_act="relu"), False),
    ("albert", dict(hidden_act="gelu", attn_implementation="eager"), False),
    ("albert", dict(embedding_size=12), False),  # E = d: the E → d mapping is built all the same
    ("albert", dict(chunk_size_feed_forward=4, layer_norm_eps=1e-5), False),
    ("albert", dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, classifier_dropout_prob=0.0), False),
    ("albert", dict(num_hidden_groups=2), "num_hidden_groups"),
    ("albert", dict(inner_group_num=2), "inner_group_num"),
    ("albert", dict(embedding_size=None), "embedding_size"),
    ("albert", dict(hidden_act="prelu"), "hidden_act"),
    ("albert", dict(type_vocab_size=0), "type_vocab_size"),
    ("albert", dict(pad_token_id=23), "pad_token_id"),
    ("albert", dict(attn_implementation="flex_attention"), "attn_implementation"),
]
IDS = [f"{t}-{'-'.join(f'{k}={v}' for k, v in o.items())}"[:90] for t, o, _ in GRID]


def _fields(model_type: str, options: dict) -> dict:
    return {**BASES[model_type], **options}


def _config_json(model_type: str, fields: dict) -> dict:
    """What a user's config.json holds: transformers' own ``to_dict`` (and the attention implementation asked for);
    the fields as written where transformers refuses them itself."""
    try:
        cfg = AutoConfig.for_model(model_type, **fields)
    except Exception:  # noqa: BLE001 — transformers' own refusal: the calculator must still answer in one line
        return {"model_type": model_type, **fields}
    out = cfg.to_dict()
    if cfg._attn_implementation is not None:
        out["_attn_implementation"] = cfg._attn_implementation
    return out


def _memory_is_modelled(family: str) -> bool:
    """The families whose forward the memory figure replays (``Family.replay``)."""
    return get_family(family).replay is not None


def _gradient_bytes(model) -> int:
    """Bytes of the gradients torch holds after a backward through every task (parameters no forward reaches get none)."""
    inputs = batch_inputs(model, B, N)
    model.train()
    for task in model.tasks:
        model(task=task, **inputs).float().pow(2).mean().backward()
    return 4 * sum(p.numel() for p in model.parameters() if p.grad is not None)


def _cli_refuses(tmp_path, config: dict, capsys) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert pals_budget(["--model", str(path), "--tasks", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pals-budget: error: ") and "Traceback" not in err
    return err


def _check(model_type: str, options: dict, refused, tmp_path, capsys) -> None:
    fields = _fields(model_type, options)
    config = _config_json(model_type, fields)
    if refused:
        with pytest.raises(ValueError) as e:
            from_hf_config(config)
        line = str(e.value)
        assert "\n" not in line and refused in line, line
        assert refused in _cli_refuses(tmp_path, config, capsys)
        try:
            hf = AutoConfig.for_model(model_type, **fields)
        except Exception:  # noqa: BLE001 — transformers refuses it too
            return
        with pytest.raises(ValueError, match=refused):
            MultiTaskModel.from_base_config(hf, AdapterConfig(method="shared"), TASKS)
        return
    hf = AutoConfig.for_model(model_type, **fields)
    shape = from_hf_config(config)
    torch.manual_seed(0)
    assert base_params(shape) == sum(p.numel() for p in AutoModel.from_config(hf).parameters())
    cond = conditions_from_config(config)
    for method in ("shared", "pals", "houlsby"):
        cfg = AdapterConfig(method=method, d_s=None if method == "shared" else 6, location="all", heads=2)
        ds = design(shape, parse_tasks(TASKS), cfg, seq_len=N)
        cost = at_size(ds, cfg.d_s)
        torch.manual_seed(0)
        model = MultiTaskModel.from_base_config(hf, cfg, TASKS)
        assert sum(p.numel() for p in model.parameters()) == cost.params_total, method
        assert sum(p.numel() for p in model.parameters() if p.requires_grad) == cost.params_trained, method
        assert count_forward_flops(model, "rte", N) == cost.flops_per_seq, method
        if _memory_is_modelled(shape.family):
            assert activation_bytes(ds, B, cond)(cfg.d_s or 0) == saved_activation_bytes(model, "rte", B, N), method


@pytest.mark.parametrize("model_type,options,refused", GRID, ids=IDS)
def test_an_unseen_config_is_priced_exactly_or_refused_in_one_line(model_type, options, refused, tmp_path, capsys):
    _check(model_type, options, refused, tmp_path, capsys)


# several options at once, per family (hypothesis, derandomised: the same examples on every run)
PRICED_OPTIONS = {
    "bert": dict(
        hidden_act=["gelu", "relu", "gelu_new", "silu", "linear"],
        attn_implementation=["sdpa", "eager"],
        hidden_dropout_prob=[0.0, 0.1],
        attention_probs_dropout_prob=[0.0, 0.1],
        classifier_dropout=[None, 0.0],
    ),
    "roberta": dict(
        hidden_act=["gelu", "relu", "quick_gelu"], attn_implementation=["sdpa", "eager"], hidden_dropout_prob=[0.0, 0.1]
    ),
    "distilbert": dict(
        activation=["gelu", "relu", "gelu_new"],
        dropout=[0.0, 0.1],
        attention_dropout=[0.0, 0.1],
        sinusoidal_pos_embds=[False, True],
    ),
    "electra": dict(
        embedding_size=[8, 12],
        hidden_act=["gelu", "relu", "gelu_pytorch_tanh"],
        attn_implementation=["sdpa", "eager"],
        hidden_dropout_prob=[0.0, 0.1],
    ),
    "deberta-v2": dict(
        relative_attention=[False, True],
        share_att_key=[False, True],
        pos_att_type=["p2c|c2p", "c2p", "p2c", None],
        position_buckets=[-1, 3],
        max_relative_positions=[-1, 5],
        position_biased_input=[False, True],
        norm_rel_ebd=["none", "layer_norm"],
        conv_kernel_size=[0, 1, 3],
        embedding_size=[8, 12],
        hidden_act=["gelu", "relu"],
    ),
    "modernbert": dict(
        classifier_pooling=["cls", "mean"],
        hidden_activation=["gelu", "silu", "relu"],
        mlp_bias=[False, True],
        attention_bias=[False, True],
        norm_bias=[False, True],
        global_attn_every_n_layers=[1, 2, 3],
        local_attention=[2, 4, 64],
        attn_implementation=["sdpa", "eager"],
    ),
    "mpnet": dict(
        hidden_act=["gelu", "relu", "gelu_new"],
        hidden_dropout_prob=[0.0, 0.1],
        attention_probs_dropout_prob=[0.0, 0.1],
        relative_attention_num_buckets=[32, 40],
        classifier_dropout=[None, 0.0],
    ),
    "albert": dict(
        embedding_size=[8, 12],
        hidden_act=["gelu_new", "gelu", "relu"],
        attn_implementation=["sdpa", "eager"],
        hidden_dropout_prob=[0.0, 0.1],
        attention_probs_dropout_prob=[0.0, 0.1],
        classifier_dropout_prob=[0.0, 0.1],
        num_hidden_layers=[1, 3],
    ),
}


@st.composite
def _combinations(draw):
    model_type = draw(st.sampled_from(sorted(PRICED_OPTIONS)))
    options = {k: draw(st.sampled_from(v)) for k, v in PRICED_OPTIONS[model_type].items() if draw(st.booleans())}
    return model_type, options


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_combinations())
@pytest.mark.slow  # ~1 s (a real run, an export or a study): make test, not make test-fast
def test_options_together_are_priced_exactly(tmp_path_factory, case):
    model_type, options = case
    _check(model_type, options, False, tmp_path_factory.mktemp("c"), None)


# every method (top stacks, CA-MTL, IA³ on the activation, a copy of the last layer …) on a non-default activation
ACTIVATED = {
    "bert-relu": ("bert", dict(hidden_act="relu")),
    "bert-gelu_new-eager": ("bert", dict(hidden_act="gelu_new", attn_implementation="eager")),
    "distilbert-linear": ("distilbert", dict(activation="linear")),
    "electra-quick_gelu": ("electra", dict(hidden_act="quick_gelu")),
    "deberta-relu-conv-sigmoid": (
        "deberta-v2",
        dict(hidden_act="relu", pooler_hidden_act="tanh", conv_kernel_size=3, conv_act="sigmoid", pooler_dropout=0.2),
    ),
    "deberta-unshared-gelu_new": (
        "deberta-v2",
        dict(hidden_act="gelu_new", share_att_key=False, position_biased_input=True, cls_dropout=0.0),
    ),
    "deberta-idle-relative": ("deberta-v2", dict(relative_attention=False)),  # its LayerNorm is built, never used
    "deberta-no-c2p-p2c": ("deberta-v2", dict(pos_att_type=None, hidden_act="silu")),  # table and norm unused
    "modernbert-relu-mean": (
        "modernbert",
        dict(hidden_activation="relu", classifier_activation="silu", classifier_pooling="mean"),
    ),
    "modernbert-gelu_new-eager": (
        "modernbert",
        dict(
            hidden_activation="gelu_new", classifier_activation="linear", attn_implementation="eager", mlp_dropout=0.1
        ),
    ),
    "mpnet-gelu_new-R40": ("mpnet", dict(hidden_act="gelu_new", relative_attention_num_buckets=40)),
    "mpnet-relu-nodrop": ("mpnet", dict(hidden_act="relu", **DROPOUT_OFF)),
    "albert-silu-drop": ("albert", dict(hidden_act="silu", hidden_dropout_prob=0.1)),
}


def _activation(options: dict) -> str:
    """The trunk's activation a key sets (what the methods that copy or scale it meet)."""
    return next((options[k] for k in ("hidden_act", "activation", "hidden_activation") if k in options), "default")


def _method_grid() -> list[tuple]:
    """Every valid (family, key, activation, method): each configuration above × every method its family takes."""
    out = []
    for key, (model_type, options) in ACTIVATED.items():
        family = get_family(from_hf_config(_config_json(model_type, _fields(model_type, options))).family)
        out += [(family.name, key, _activation(options), m) for m in METHODS if not family.refusal(m)]
    return out


# pairwise (tests/pairwise.py): every method on every activation and in every family, every configuration; key ×
# method only as far as those need (PALS_FULL_GRID=1: every key × every method)
METHOD_CASES = [(key, method) for _, key, _, method in grid(_method_grid(), skip={(1, 3)})]


@pytest.mark.parametrize("key,method", METHOD_CASES, ids=[f"{k}-{m}" for k, m in METHOD_CASES])
def test_every_method_on_another_activation(key, method):
    model_type, options = ACTIVATED[key]
    config = _config_json(model_type, _fields(model_type, options))
    hf, shape, spec = (
        AutoConfig.for_model(model_type, **_fields(model_type, options)),
        from_hf_config(config),
        get_method(method),
    )
    cfg = AdapterConfig(
        method=method,
        d_s=6 if spec.sized else None,
        location="all" if spec.within else None,
        heads=2,
        n_top=2,
        ffn_ratio=3,
        freeze_trunk=method == "lora",
    )
    ds = design(shape, parse_tasks(TASKS), cfg, seq_len=N)
    cost = at_size(ds, cfg.d_s)
    torch.manual_seed(0)
    model = MultiTaskModel.from_base_config(hf, cfg, TASKS)
    assert sum(p.numel() for p in model.parameters()) == cost.params_total
    assert count_forward_flops(model, "rte", N) == cost.flops_per_seq
    mem = memory_train(ds, cfg.d_s, cost, batch=B, cond=conditions_from_config(config))
    assert mem.activations == saved_activation_bytes(model, "rte", B, N)
    assert mem.optimizer == optimizer_state_bytes(model)
    assert mem.gradients == _gradient_bytes(model)


@pytest.mark.parametrize("name", sorted(ACT2CLS))
def test_every_activation_keeps_what_the_table_says(name):
    """For every activation transformers names: the bytes the trace keeps for ``ACT2FN[name]`` on a (2, 3, 5) input that
    requires grad are the bytes torch saves, storage by storage; ``prelu`` and ``xielu`` (parameters) are refused."""
    if name in PARAMETRISED_ACTIVATIONS:
        with pytest.raises(ValueError, match="parameters"):
            check_activation(name, "hidden_act", "config 'x'")
        return
    assert check_activation(name, "hidden_act", "config 'x'") == name
    x = torch.randn(2, 3, 5, requires_grad=True) * 1.0  # a non-leaf, as a linear's output is
    kept: dict[int, int] = {}

    def pack(t):
        kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = ACT2FN[name](x)
    kinds = sorted(
        "in" if p == x.untyped_storage().data_ptr() else "out" if p == y.untyped_storage().data_ptr() else "new"
        for p in kept
    )
    assert kinds == sorted(ACTIVATIONS[name])
    tr = Trace(2, 3, Conditions())
    sx = Sym(Poly.of(2 * 3 * 5 * 4), True)
    sy = tr.activation(sx, name)
    assert tr.total(0) == sum(kept.values())
    assert (sy is sx) == (y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())


def test_the_activation_table_names_every_transformers_activation():
    assert set(ACTIVATIONS) | set(PARAMETRISED_ACTIVATIONS) == set(ACT2CLS)


def test_the_family_default_pad_token_counts():
    """ModernBERT's config puts pad_token_id at 50283 unless told otherwise: a tiny vocabulary without pad ids is refused."""
    fields = {k: v for k, v in BASES["modernbert"].items() if not k.endswith("token_id")}
    with pytest.raises(ValueError, match="pad_token_id 50283 is outside the vocabulary"):
        from_hf_config({"model_type": "modernbert", **fields})
    with pytest.raises(AssertionError, match="Padding_idx"):  # what transformers does with it
        AutoModel.from_config(AutoConfig.for_model("modernbert", **fields))


def test_the_console_script_refuses_an_unseen_option_in_one_line(tmp_path):
    """The real process: exit 2, one stderr line naming the option and its value, no traceback."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_config_json("modernbert", _fields("modernbert", dict(head_dim=4)))))
    out = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", "--model", str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "head_dim 4" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "family, fields, needle",
    [
        ("bert", {"hidden_dropout_prob": "0.1"}, "hidden_dropout_prob is '0.1', not a number"),
        ("bert", {"attention_probs_dropout_prob": 2.0}, "not a probability in [0, 1)"),
        ("bert", {"classifier_dropout": -0.5}, "not a probability in [0, 1)"),
        ("bert", {"pad_token_id": 0.5}, "pad_token_id is 0.5; it takes an integer"),
        ("modernbert", {"mlp_bias": "false"}, "mlp_bias is 'false'; it takes true or false"),
        ("modernbert", {"local_attention": "64"}, "local_attention is '64'; it takes an integer"),
        ("deberta-v2", {"relative_attention": "yes"}, "relative_attention is 'yes'; it takes true or false"),
        ("deberta-v2", {"conv_kernel_size": 3, "conv_groups": 0}, "conv_groups 0 is out of range"),
        ("deberta-v2", {"pos_att_type": 5}, "pos_att_type is 5"),
        (
            "deberta-v2",
            {"relative_attention": True, "max_relative_positions": 10**9},
            "max_relative_positions 1,000,000,000 is out of range",
        ),
        (
            "mpnet",
            {"relative_attention_num_buckets": 10**12},
            "relative_attention_num_buckets 1000000000000 is not an integer from 32",
        ),
    ],
)
def test_config_values_are_read_with_the_types_transformers_requires(tmp_path, capsys, family, fields, needle):
    """Several were priced before (mlp_bias "false" *with* biases; MPNet buckets 10¹² and DeBERTa positions 10⁹ at
    2·10¹² parameters); every one is one line now."""
    import json

    from pals_core.cli.budget import main

    f = tmp_path / "config.json"
    f.write_text(json.dumps(tiny_config_json(family, **fields)))
    assert main(["--model", str(f), "--budget", "1.1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


@pytest.mark.parametrize("rate", [2.0, float("nan"), -0.5])
def test_a_dropout_that_is_no_probability_is_refused_by_train_and_study_too(tmp_path, rate, pals_train, here):
    """pals-budget refused it; pals-train and pals-study read the same config through the same reader now."""
    import json

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(tiny_config_json("bert", hidden_dropout_prob=rate)))
    train = pals_train(
        "--model",
        str(folder),
        "--tasks",
        "rte",
        "--method",
        "shared",
        "--steps",
        "2",
        "--out",
        str(tmp_path / "run"),
        cwd=tmp_path,
    )
    assert train.returncode == 2 and "not a probability in [0, 1)" in train.stderr, train.stderr
    from studies.cli import main as pals_study

    study = here(
        pals_study,
        "create",
        "design",
        "--model",
        str(folder),
        "--storage",
        f"sqlite:///{tmp_path / 's.db'}",
        "--study-name",
        "s",
        cwd=tmp_path,
    )
    assert study.returncode == 2 and "not a probability in [0, 1)" in study.stderr, study.stderr
    assert len(study.stderr.strip().splitlines()) == 1 and "Traceback" not in study.stderr + train.stderr
