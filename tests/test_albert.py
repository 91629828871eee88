"""ALBERT, the family added as one folder (docs/design.md "Recipe: add a family"): ``pals_core/families/albert/``
(description, trunk, presets) and one line in ``pals_core.families.PACKAGES``.

Here: the published checkpoints' counts (``AutoModel.from_config`` on the meta device), the one shared layer (counted
once, run L times, each adapted layer with its own adapter), every method the family allows on a second ALBERT shape
(E = d, the default ``gelu_new``, adapters in two of four layers) held to torch's parameters, FlopCounterMode's
FLOPs, the bytes autograd saves and AdamW's state, CA-MTL refused in one line with its reason, ``pals-budget`` on
an ALBERT config.json, and the calculator's half never importing torch. ALBERT also sits in the per-family grids:
tests/test_exactness.py and tests/test_memory.py ("albert-E10": E ≠ d), tests/test_families_train.py (a tiny
checkpoint on disk trained, stopped, resumed) and tests/test_export_onnx.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from flops import count_forward_flops, count_predict_all_flops
from memory_probe import optimizer_state_bytes, saved_activation_bytes
from transformers import AutoConfig, AutoModel

from pals_core.budget.costs import base_params, design
from pals_core.budget.solver import at_size
from pals_core.budget.tasks import parse_tasks
from pals_core.families.albert.description import CA_MTL_REASON, FAMILY
from pals_core.families.shapes import PRESET_CONFIGS, PRESETS, conditions_from_config, from_hf_config, load_model
from pals_core.footprint.memory import activation_bytes, memory_train
from pals_core.methods.registry import METHODS, get_method
from pals_core.model import MultiTaskBert, _hf_config
from pals_core.pricing.config import AdapterConfig

torch.set_num_threads(1)

PUBLISHED = {"albert-base-v2": 11_683_584, "albert-large-v2": 17_683_968, "albert-xxlarge-v2": 222_595_584}
# E = d (the E → d mapping is there all the same), ALBERT's defaults (gelu_new, no dropout in the trunk)
SHAPE = dict(
    model_type="albert",
    embedding_size=20,
    hidden_size=20,
    num_hidden_layers=4,
    num_attention_heads=4,
    intermediate_size=29,
    vocab_size=37,
    max_position_embeddings=16,
    type_vocab_size=2,
)
TASKS = {"rte": 2, "stsb": 1}
LAYERS = [1, 3]  # the adapted layers: two applications of the shared layer, each with its own adapter
N, BATCH = 9, 2


def _auto_numel(fields: dict) -> int:
    fields = dict(fields)
    with torch.device("meta"):
        model = AutoModel.from_config(AutoConfig.for_model(fields.pop("model_type"), **fields))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_the_presets_are_the_published_checkpoints(name):
    assert base_params(PRESETS[name]) == PUBLISHED[name] == _auto_numel(PRESET_CONFIGS[name])
    assert load_model(f"albert/{name}") is PRESETS[name] and PRESETS[name].family == "albert"  # the hub's name


def test_the_folder_is_registered_by_its_one_line():
    """The three registries read the folder by its name in ``PACKAGES``: the calculator's, the trunks', the presets'."""
    from pals_core.families import PACKAGES
    from pals_core.families.albert import presets, trunk
    from pals_core.families.registry import get_family_for
    from pals_core.families.trunks import TRUNKS

    assert PACKAGES.count("albert") == 1
    assert get_family_for("albert") is FAMILY and TRUNKS["albert"] is trunk.TRUNK
    assert all(PRESET_CONFIGS[name] == fields for name, fields in presets.CONFIGS.items())


def test_the_shared_layer_is_counted_once_and_run_l_times():
    """N_base does not grow with L (torch's count neither); the FLOPs do; the trunk lists one module L times."""
    two, six = (from_hf_config(dict(SHAPE, num_hidden_layers=L)) for L in (2, 6))
    assert base_params(two) == base_params(six) == _auto_numel(dict(SHAPE, num_hidden_layers=6))
    cost = {
        m.layers: at_size(design(m, parse_tasks(TASKS), AdapterConfig(method="shared"), seq_len=N), None)
        for m in (two, six)
    }
    assert cost[6].flops_base_per_seq > cost[2].flops_base_per_seq
    pals = AdapterConfig(method="pals", d_s=8, heads=4, location=LAYERS)
    model = MultiTaskBert.from_base_config(_hf_config(SHAPE), pals, TASKS)
    assert len({id(layer) for layer in model.trunk.layers}) == 1 and len(model.trunk.layers) == 4
    adapted = {name.split(".")[2] for name, _ in model.adapters.named_parameters() if ".attention." in name}
    assert adapted == {"1", "3"}, adapted  # layer 1's and layer 3's own PALs around the one layer


ALLOWED = [m for m in METHODS if not FAMILY.refusal(m)]


def _case(method: str):
    m = get_method(method)
    d_s = (8 if m.attention else 5) if m.sized else None
    cfg = AdapterConfig(method=method, d_s=d_s, location=LAYERS if m.within else None, heads=4, n_top=2, ffn_ratio=3)
    hf = _hf_config(dict(SHAPE))
    ds = design(from_hf_config(hf.to_dict()), parse_tasks(TASKS), cfg, seq_len=N)
    torch.manual_seed(0)
    return hf, cfg, ds, MultiTaskBert.from_base_config(hf, cfg, TASKS)


@pytest.mark.parametrize("method", ALLOWED)
def test_every_allowed_method_is_torch_to_the_parameter_flop_and_byte(method):
    hf, cfg, ds, model = _case(method)
    cost = at_size(ds, cfg.d_s)
    assert sum(p.numel() for p in model.parameters()) == cost.params_total
    assert count_forward_flops(model, "rte", N) == cost.flops_per_seq
    assert count_predict_all_flops(model, N) == cost.flops_all_tasks_per_seq
    cond = conditions_from_config(hf.to_dict() | {"attn_implementation": hf._attn_implementation})
    assert activation_bytes(ds, BATCH, cond)(cfg.d_s or 0) == saved_activation_bytes(model, "rte", BATCH, N)
    assert memory_train(ds, cfg.d_s, cost, batch=BATCH, cond=cond).optimizer == optimizer_state_bytes(model)


def test_ca_mtl_is_refused_in_one_line_with_the_reason():
    assert "ca_mtl" not in ALLOWED and "\n" not in CA_MTL_REASON
    with pytest.raises(ValueError, match="does not apply") as e:
        MultiTaskBert.from_base_config(_hf_config(dict(SHAPE)), AdapterConfig(method="ca_mtl", d_s=8), TASKS)
    assert "\n" not in str(e.value) and CA_MTL_REASON in str(e.value)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pals_core.cli.budget",
            "--model",
            "albert-base-v2",
            "--method",
            "ca_mtl",
            "--budget",
            "1.13",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and out.stdout == "" and len(lines) == 1 and CA_MTL_REASON in lines[0]


@pytest.mark.parametrize("field", ["num_hidden_groups", "inner_group_num"])
def test_several_shared_groups_are_refused(field):
    with pytest.raises(ValueError, match=f"{field} 2 is not supported"):
        from_hf_config(dict(SHAPE, **{field: 2}))


def test_pals_budget_prices_an_albert_config_json_without_torch(tmp_path):
    """What a user does with a downloaded config.json: the calculator prices it — and never imports torch."""
    path = tmp_path / "albert" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(dict(PRESET_CONFIGS["albert-base-v2"], architectures=["AlbertForMaskedLM"])))
    code = (
        "import sys\n"
        "from pals_core.cli.budget import run\n"
        f"out = run(['--model', {str(path)!r}, '--tasks', 'rte,stsb', '--budget', '1.13', '--method', 'pals', '--json'])\n"
        "heavy = [m for m in ('torch', 'transformers', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(out)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    priced = json.loads(out.stdout)
    assert priced["model"]["family"] == "albert" and priced["model"]["params"] == PUBLISHED["albert-base-v2"]
    assert all(row["feasible"] and row["params_total"] <= 1.13 * PUBLISHED["albert-base-v2"] for row in priced["rows"])


def test_the_description_imported_first_needs_no_torch():
    """The folder's pure half imported before anything else: no import cycle with the calculator, no torch."""
    code = (
        "import sys\n"
        "from pals_core.families.albert.description import FAMILY\n"
        "from pals_core.families.registry import get_family_for\n"
        "assert get_family_for('albert') is FAMILY\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_peft_export_of_an_albert_design_is_refused_in_one_line():
    """peft would put one LoRA on the shared layer's query for all L applications; the run has one per layer."""
    from pals_core.export import ExportRefused
    from pals_core.export.peft import check_exportable

    model = MultiTaskBert.from_base_config(_hf_config(dict(SHAPE)), AdapterConfig(method="lora", d_s=4), TASKS)
    with pytest.raises(
        ExportRefused, match="albert family cannot be exported to peft: ALBERT runs one set of layer weights"
    ) as e:
        check_exportable(model)
    assert "\n" not in str(e.value)
