"""A design trains as its authors train it, and says so: each method's default trunk is declared once, in its record
(``Method.trunk``, pals_core/methods/<name>/cost.py) — frozen for Houlsby, LoRA, IA³ and LHUC, fine-tuned for PALs,
the paper's low-rank and top variants and ``shared``, CA-MTL's lower layers frozen — and the calculator (parameters
trained, memory, step time), the torch model, ``pals-budget`` and a run's config.json all follow it;
``--freeze-trunk`` / ``--train-trunk`` override it."""

from __future__ import annotations

import json

import pytest
import torch
from memory_probe import optimizer_state_bytes, saved_activation_bytes
from transformers import BertConfig

from pals_core.budget.costs import design, evaluate
from pals_core.budget.tasks import parse_tasks
from pals_core.cli.budget import main as pals_budget
from pals_core.families.shapes import conditions_from_config, from_hf_config
from pals_core.footprint.memory import activation_bytes, memory_train
from pals_core.methods.registry import METHODS
from pals_core.model import MultiTaskBert
from pals_core.pricing.config import AdapterConfig
from pals_core.train.config import TrainConfig

FROZEN = {"houlsby", "lora", "ia3", "lhuc"}
TUNED = {"pals", "pals_unshared", "low_rank", "proj_attn_top", "proj_ffn_top", "bert_layer_top", "shared", "ca_mtl"}
TINY = dict(
    hidden_size=24, num_hidden_layers=4, num_attention_heads=4, intermediate_size=37, vocab_size=61,
    max_position_embeddings=16, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
)  # fmt: skip
TASKS = {"rte": 2, "stsb": 1}
SIZES = {"pals": 8, "pals_unshared": 8, "low_rank": 6, "houlsby": 6, "lora": 6, "proj_attn_top": 8}


def test_each_method_declares_its_authors_trunk():
    assert {m.name for m in METHODS.values() if m.trunk == "frozen"} == FROZEN
    assert {m.name for m in METHODS.values() if m.trunk == "fine-tuned"} == TUNED
    assert {m.trunk for m in METHODS.values()} == {"frozen", "fine-tuned"}


def _cfg(method: str, **kw) -> AdapterConfig:
    return AdapterConfig(method=method, d_s=SIZES.get(method, 8 if METHODS[method].sized else None), heads=4, **kw)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_calculator_and_the_torch_model_train_the_same_parameters_by_default(method):
    """The default (no flag) trains what the method's authors train, in the calculator and in torch alike."""
    shape = from_hf_config(BertConfig(**TINY).to_dict())
    for freeze in (None, True, False):
        cfg = _cfg(method, freeze_trunk=freeze)
        cost = evaluate(design(shape, parse_tasks(TASKS), cfg, seq_len=8), cfg.d_s)
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(BertConfig(**TINY), _cfg(method, freeze_trunk=freeze), TASKS)
        trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
        assert cost.params_trained == trained, (method, freeze)
        frozen = freeze if freeze is not None else method in FROZEN
        if frozen:
            assert cost.trunk == "frozen" and trained == cost.params_task_specific
        elif method == "ca_mtl":
            assert cost.trunk == "partly frozen" and cost.params_task_specific < trained < cost.params_total
        else:
            assert cost.trunk == "fine-tuned" and trained == cost.params_total


@pytest.mark.slow  # 1-5 s each under load (a torch forward and an AdamW step)
@pytest.mark.parametrize("method", ["lora", "houlsby", "ia3", "lhuc", "pals"])
def test_memory_is_priced_for_what_the_default_trains(method):
    """Gradients, AdamW's state and the activations autograd saves, priced for the default trunk, equal torch's."""
    hf = BertConfig(**TINY)
    cfg = _cfg(method)
    ds = design(from_hf_config(hf.to_dict()), parse_tasks(TASKS), cfg, seq_len=8)
    torch.manual_seed(0)
    model = MultiTaskBert.from_base_config(hf, cfg, TASKS)
    cond = conditions_from_config(hf.to_dict() | {"attn_implementation": hf._attn_implementation})
    mem = memory_train(ds, cfg.d_s, evaluate(ds, cfg.d_s), batch=2, cond=cond)
    assert mem.gradients == 4 * sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert mem.optimizer == optimizer_state_bytes(model)
    assert activation_bytes(ds, 2, cond)(cfg.d_s or 0) == saved_activation_bytes(model, "rte", 2, 8)
    fine_tuned = design(ds.model, ds.tasks, _cfg(method, freeze_trunk=False), seq_len=8)
    tuned = memory_train(fine_tuned, cfg.d_s, evaluate(fine_tuned, cfg.d_s), batch=2, cond=cond)
    assert (mem.total < tuned.total) == (method in FROZEN)


def _budget_json(capsys, *argv) -> dict:
    assert pals_budget(["--tasks", "rte,mrpc", "--budget", "1.13", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_pals_budget_shows_the_trained_parameters_and_the_trunk(capsys):
    rows = {r["method"]: r for r in _budget_json(capsys, "--location", "all")["rows"]}
    assert rows["lora"]["trunk"] == "frozen" and rows["lora"]["params_trained"] == rows["lora"]["params_task_specific"]
    assert rows["pals"]["trunk"] == "fine-tuned" and rows["pals"]["params_trained"] == rows["pals"]["params_total"]
    assert rows["ca_mtl"]["trunk"] == "partly frozen"
    lora = _budget_json(capsys, "--method", "lora", "--train-trunk")["rows"][0]
    assert lora["trunk"] == "fine-tuned" and lora["params_trained"] == lora["params_total"]
    assert lora["time_ratio"] > rows["lora"]["time_ratio"]  # a fine-tuned trunk's step is priced slower
    pals = _budget_json(capsys, "--method", "pals", "--freeze-trunk")["rows"][0]
    assert pals["trunk"] == "frozen" and pals["params_trained"] == pals["params_task_specific"]
    out = _budget_json(capsys, "--method", "lora")
    ranked = out["recommendation"]["ranking"][0]
    assert ranked["trunk"] == "frozen" and "trunk frozen" in out["recommendation"]["text"]
    assert pals_budget(["--tasks", "8", "--budget", "1.13", "--freeze-trunk", "--train-trunk"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert pals_budget(["--tasks", "8", "--budget", "1.13", "--wide"]) == 0
    table = capsys.readouterr().out
    assert "trained" in table and "trunk" in table
    lora_row = next(line for line in table.splitlines() if line.startswith("lora ") and " all " in line)
    assert " frozen " in lora_row


def test_help_gives_each_methods_default_trunk(capsys):
    with pytest.raises(SystemExit):
        pals_budget(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--freeze-trunk" in text and "--train-trunk" in text
    assert "frozen for houlsby, lora, lhuc, ia3" in text and "fine-tuned for shared, pals" in text


def test_a_run_states_its_trunk_in_its_config():
    """What a run trains is decided before it starts and written into its config (config.json) and command."""
    lora = TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="lora", d_s=4))
    assert lora.adapter.freeze_trunk is True and lora.as_dict()["adapter"]["freeze_trunk"] is True
    assert "--freeze-trunk" in lora.to_argv()
    pals = TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="pals", d_s=12))
    assert pals.adapter.freeze_trunk is False and "--train-trunk" in pals.to_argv()
    told = TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="lora", d_s=4, freeze_trunk=False))
    assert told.as_dict()["adapter"]["freeze_trunk"] is False
    old = TrainConfig.from_dict(lora.as_dict() | {"adapter": {"method": "lora", "d_s": 4, "freeze_trunk": False}})
    assert old.adapter.freeze_trunk is False  # a run written before keeps what it trained


@pytest.mark.slow
def test_the_page_shows_what_each_design_trains_and_the_train_form_starts_from_it():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parents[1] / "app.py")
    at = AppTest.from_file(app, default_timeout=120)
    for k, v in {"model": "all-MiniLM-L6-v2", "tasks": "rte,mrpc", "budget": "1.13", "view": "designs"}.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception and not [e.value for e in at.error]
    (answer,) = [s.value for s in at.success if "Recommended:" in s.value]
    assert "parameters, trunk frozen, at the method's own learning rate" in answer or (
        "parameters, trunk fine-tuned, at the method's own learning rate" in answer
    )
    table = next(d.value for d in at.dataframe if "trunk" in d.value.columns)
    rows = {d: (t, n) for d, t, n in zip(table["design"], table["trunk"], table["trained"])}
    assert rows["lora @ all"][0] == "frozen" and rows["pals @ all"][0] == "fine-tuned"
    assert rows["lora @ all"][1] < rows["pals @ all"][1]
    at.selectbox(key="design").select("lora @ all").run()
    at.segmented_control(key="view").set_value("train").run()
    assert at.checkbox(key="train_freeze").value is True  # LoRA's own: the trunk frozen
    said = " ".join(m.value for m in at.markdown)
    assert "This run **trains" in said and "trunk frozen**" in said and "as its authors train it" in said
    assert "--freeze-trunk" in " ".join(c.value for c in at.code)
    at.selectbox(key="design").select("pals @ all").run()
    assert at.checkbox(key="train_freeze").value is False  # PALs' own: fine-tuned
    at.checkbox(key="train_freeze").check().run()
    said = " ".join(m.value for m in at.markdown)
    assert "trunk frozen**" in said and "not as its authors train it" in said
