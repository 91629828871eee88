"""Memory and step time on a machine (docs/design.md "Memory (bytes)", "Time"): budgets in the solver, the CLI's table
and JSON, device profiles, pals-calibrate, bad input (exit 2, one line)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from memory_probe import optimizer_state_bytes, saved_activation_bytes
from transformers import BertConfig

from pals_core.budget.solver import Budget
from pals_core.budget.table import rows
from pals_core.budget.tasks import parse_tasks
from pals_core.cli.budget import main, run
from pals_core.families.shapes import load_model
from pals_core.footprint.timing import DeviceProfile, builtin_devices, load_profile
from pals_core.model import MultiTaskBert
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.units import parse_memory

torch.set_num_threads(1)


def test_memory_sizes():
    assert parse_memory("24GB") == 24e9 and parse_memory("24GiB") == 24 * 2**30 and parse_memory("512 MB") == 512e6
    assert parse_memory("1.5e10") == 1.5e10
    for bad in ("-3GB", "abc", "0", "12 parsecs", ""):
        with pytest.raises(ValueError):
            parse_memory(bad)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--memory=-3GB"], "memory"),
        (["--memory", "abc"], "memory"),
        (["--device", "tpu9"], "unknown device"),
        (["--batch", "0"], "--batch"),
        (["--batch", "x"], "--batch"),
        (["--max-slowdown", "0.5"], "--max-slowdown"),
        (["--precision", "fp8"], "precision"),
    ],
)
def test_bad_machine_input_exits_2_with_one_line(argv, needle, capsys):
    assert main(["--budget", "1.13", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


@pytest.mark.parametrize(
    "content,needle",
    [
        ("{nope", "not valid JSON"),
        ('{"name": "x"}', "lacks"),
        ("[1, 2]", "not a JSON object"),
        (None, "kind must be cpu or cuda"),
        (None, "matmul_flops"),
    ],
)
def test_malformed_profile_exits_2(tmp_path, capsys, content, needle):
    path = tmp_path / "p.json"
    if content is None:
        good = load_profile("h100").as_dict()
        good.update({"kind": "tpu"} if "kind" in needle else {"matmul_flops": "fast"})
        content = json.dumps(good)
    path.write_text(content)
    assert main(["--budget", "1.13", "--device", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


def test_builtin_profiles_load_and_round_trip(tmp_path):
    assert {"h100", "a100", "l4", "t4", "local"} <= set(builtin_devices())
    for name in ("h100", "a100", "l4", "t4"):
        p = load_profile(name)
        assert p.kind == "cuda" and p.matmul_flops > 1e12 and p.source
        (tmp_path / f"{name}.json").write_text(json.dumps(p.as_dict()))
        assert load_profile(str(tmp_path / f"{name}.json")) == p


def _json(argv):
    return json.loads(run([*argv, "--json"]))


def test_json_rows_hold_memory_and_time():
    out = _json(["--tasks", "rte", "--method", "shared", "--device", "a100", "--batch", "8"])
    [row] = out["rows"]
    assert set(row["memory_train"]) == {"weights", "gradients", "optimizer", "activations", "total"}
    assert row["memory_train"]["total"] == sum(v for k, v in row["memory_train"].items() if k != "total")
    assert row["memory_train"]["weights"] == 4 * row["params_total"]
    assert row["memory_infer"] > row["memory_train"]["weights"] // 1
    assert row["time_ratio"] == pytest.approx(1.0)  # the base model with one head is the reference
    assert row["time_step_s"] > 0 and out["machine"]["batch"] == 8


def test_memory_budget_binds_and_is_respected():
    base = _json(["--budget", "1.13", "--method", "pals", "--device", "h100"])["rows"][0]
    limit = base["memory_train"]["total"] - 200e6
    row = _json(["--budget", "1.13", "--method", "pals", "--device", "h100", "--memory", f"{limit:.0f}"])["rows"][0]
    assert row["binding"] == "memory" and row["d_s"] < base["d_s"] and row["feasible"]
    assert row["memory_train"]["total"] <= limit
    bigger = _json(["--d-s", str(row["d_s"] + 12), "--method", "pals", "--device", "h100"])["rows"][0]
    assert bigger["memory_train"]["total"] > limit  # one valid step more would not fit
    assert base["binding"] == "params"


def test_slowdown_budget_binds_and_is_respected():
    base = _json(["--budget", "1.13", "--method", "low_rank", "--device", "l4"])["rows"][0]
    half = _json(["--d-s", str(base["d_s"] // 2), "--method", "low_rank", "--device", "l4"])["rows"][0]
    r = half["time_ratio"] * (1 + 1e-9)
    row = _json(["--budget", "1.13", "--method", "low_rank", "--device", "l4", "--max-slowdown", repr(r)])["rows"][0]
    assert row["binding"] == "time" and row["time_ratio"] <= r and row["d_s"] == base["d_s"] // 2 and row["feasible"]
    bigger = _json(["--d-s", str(row["d_s"] + 1), "--method", "low_rank", "--device", "l4"])["rows"][0]
    assert bigger["time_ratio"] > r
    # IA³ with its trunk fine-tuned (its own default, frozen, trains faster than the base model's step)
    sizeless = _json(["--method", "ia3", "--train-trunk", "--device", "l4", "--max-slowdown", "1.0"])["rows"][0]
    assert sizeless["binding"] == "time" and not sizeless["feasible"]


def test_table_names_the_machine_and_the_binding_constraint():
    text = run(["--budget", "1.13", "--device", "t4", "--memory", "8GB", "--max-slowdown", "1.2", "--location", "all"])
    assert "NVIDIA T4" in text and "binds" in text and "train GiB" in text and "step × base" in text


def _cli_rows_and_models(tmp_path, hf, config: dict, designs):
    """For each (method, d_s, freeze): ``pals-budget --json`` on ``config`` written as a config.json (a CPU profile: the
    figure is exact for torch on CPU) → (its argv, its first row, the model torch builds); asserts the row's weights,
    AdamW state and saved activations are torch's to the byte."""
    (tmp_path / "config.json").write_text(json.dumps(config))
    cpu_profile = tmp_path / "cpu.json"
    cpu_profile.write_text(json.dumps(load_profile("h100").as_dict() | {"kind": "cpu", "name": "cpu"}))
    for method, d_s, freeze in designs:
        argv = [
            "--model",
            str(tmp_path / "config.json"),
            "--tasks",
            "rte,stsb",
            "--method",
            method,
            "--seq-len",
            "9",
            "--batch",
            "3",
            "--heads",
            "4",
            "--device",
            str(cpu_profile),
        ]
        argv += (["--d-s", str(d_s)] if d_s else []) + (["--freeze-trunk"] if freeze else ["--train-trunk"])
        row = _json(argv)["rows"][0]
        torch.manual_seed(0)
        model = MultiTaskBert.from_base_config(
            hf, AdapterConfig(method=method, d_s=d_s, heads=4, freeze_trunk=freeze), {"rte": 2, "stsb": 1}
        )
        assert row["memory_train"]["weights"] == 4 * sum(p.numel() for p in model.parameters())
        assert row["memory_train"]["optimizer"] == optimizer_state_bytes(model)
        assert row["memory_train"]["activations"] == saved_activation_bytes(model, "rte", 3, 9)
        yield argv, row, model


def test_cli_memory_is_torch_memory_for_a_config_json(tmp_path):
    """An outside check's path: a config.json of a small BERT (dropout, eager), pals-budget --json at a size, torch."""
    hf = BertConfig(
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=48,
        vocab_size=60,
        max_position_embeddings=20,
        hidden_dropout_prob=0.2,
        attention_probs_dropout_prob=0.1,
        attn_implementation="eager",
    )
    d = hf.to_dict() | {"attn_implementation": "eager"}
    for argv, row, _model in _cli_rows_and_models(
        tmp_path, hf, d, (("houlsby", 6, False), ("pals", 8, True), ("ia3", None, False))
    ):
        gpu = _json([*argv, "--device", "h100"])["rows"][0]  # CUDA: bool dropout masks, fused attention under dropout
        assert gpu["memory_train"]["activations"] < row["memory_train"]["activations"]


FAMILY_CONFIGS = {  # a config.json of each non-BERT family as transformers writes it (their own dropout field names)
    "deberta-v3": dict(
        model_type="deberta-v2",
        hidden_size=24,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=40,
        vocab_size=60,
        max_position_embeddings=20,
        type_vocab_size=0,
        relative_attention=True,
        position_buckets=6,
        pos_att_type="p2c|c2p",
        share_att_key=True,
        position_biased_input=False,
        norm_rel_ebd="layer_norm",
        pooler_dropout=0.1,
    ),
    "modernbert": dict(
        model_type="modernbert",
        hidden_size=24,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=20,
        vocab_size=60,
        max_position_embeddings=64,
        local_attention=6,
        mlp_dropout=0.1,
        classifier_pooling="mean",
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        cls_token_id=1,
        sep_token_id=2,
    ),
    "mpnet": dict(
        model_type="mpnet",
        hidden_size=24,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=40,
        vocab_size=60,
        max_position_embeddings=20,
        hidden_dropout_prob=0.2,
    ),
}


@pytest.mark.parametrize("family", sorted(FAMILY_CONFIGS))
def test_cli_memory_is_torch_memory_for_other_families(tmp_path, family):
    """The same outside check on a DeBERTa-v3 and a ModernBERT config.json: their own dropout fields, DeBERTa's own
    attention (the adapters' eager), ModernBERT's sliding-window layers and mean pooling."""
    from transformers import AutoConfig

    fields = dict(FAMILY_CONFIGS[family])
    hf = AutoConfig.for_model(fields.pop("model_type"), **fields)
    for _, row, _ in _cli_rows_and_models(
        tmp_path, hf, hf.to_dict(), (("pals", 8, False), ("lora", 5, True), ("bert_layer_top", None, False))
    ):
        assert row["time_step_s"] > 0 and row["memory_infer"] > row["memory_train"]["weights"]


@pytest.mark.parametrize("preset", ["deberta-v3-base", "ModernBERT-base", "mpnet-base"])
def test_family_presets_take_memory_and_slowdown_budgets(preset):
    """Every row of a DeBERTa / ModernBERT table has its memory and step time; --memory and --max-slowdown bind."""
    out = _json(
        ["--model", preset, "--tasks", "8", "--budget", "1.13", "--device", "h100", "--memory", "24GB", "--batch", "32"]
    )
    assert out["rows"] and all(
        r["memory_train"] and r["memory_infer"] and r["time_step_s"] and r["time_ratio"] for r in out["rows"]
    )
    assert all(r["memory_train"]["total"] <= 24e9 for r in out["rows"] if r["feasible"])
    pals = next(r for r in out["rows"] if r["method"] == "pals" and r["location"] == "all")
    limit = pals["memory_train"]["total"] - 50e6
    tight = _json(
        [
            "--model",
            preset,
            "--tasks",
            "8",
            "--budget",
            "1.13",
            "--method",
            "pals",
            "--location",
            "all",
            "--device",
            "h100",
            "--memory",
            f"{limit:.0f}",
            "--batch",
            "32",
        ]
    )["rows"][0]
    assert tight["binding"] == "memory" and tight["d_s"] < pals["d_s"] and tight["memory_train"]["total"] <= limit
    common = [
        "--model",
        preset,
        "--tasks",
        "8",
        "--method",
        "low_rank",
        "--location",
        "all",
        "--device",
        "h100",
        "--batch",
        "8",
    ]
    solved = _json([*common, "--budget", "1.13"])["rows"][0]
    r = _json([*common, "--d-s", str(solved["d_s"] // 2)])["rows"][0]["time_ratio"] * (1 + 1e-9)
    slow = _json([*common, "--budget", "1.13", "--max-slowdown", repr(r)])["rows"][0]
    assert slow["binding"] == "time" and slow["time_ratio"] <= r and slow["d_s"] == solved["d_s"] // 2
    text = run(
        [
            "--model",
            preset,
            "--tasks",
            "8",
            "--budget",
            "1.13",
            "--memory",
            "1GB",
            "--batch",
            "8",
            "--device",
            "t4",
            "--location",
            "all",
        ]
    )
    assert "train GiB" in text and "memory" in text.split("binds")[1]


def test_presets_read_their_family_conditions():
    """A preset's dropout and attention are its family's (ModernBERT: no dropout; DeBERTa: adapters' attention eager)."""
    from pals_core.families.shapes import conditions_for_model
    from pals_core.pricing.activations import Conditions

    assert conditions_for_model("ModernBERT-base").hidden_dropout == 0.0
    assert conditions_for_model("ModernBERT-base").attention_dropout == 0.0
    assert conditions_for_model("deberta-v3-base").attention == "eager"
    assert conditions_for_model("mpnet-base") == Conditions(attention="eager")  # MPNet has no sdpa path
    assert conditions_for_model("bert-base") == Conditions()


def test_time_model_prices_narrow_attention_heads():
    """PALs' twelve narrow heads cost per score element: on a CPU profile their step-time overhead exceeds the FLOP
    overhead; LoRA's does not by much."""
    cpu = DeviceProfile(
        "cpu",
        "cpu",
        matmul_flops=8e10,
        bandwidth=1.6e10,
        kernel_overhead_s=6e-6,
        rng_s_per_element=7e-9,
        special_s_per_element=8e-10,
        flash_forward=(2.4e-9, 1.9e-11),
        flash_backward=(9e-9, 1.7e-11),
    )
    [pals] = rows(load_model("minilm"), parse_tasks(8), budget=Budget(ratio=1.13), methods=["pals"], location="all")
    from pals_core.budget.costs import design
    from pals_core.footprint.timing import step_seconds
    from pals_core.pricing.activations import Conditions

    m, tasks = load_model("minilm"), parse_tasks(8)
    base = step_seconds(design(m, tasks[:1], AdapterConfig(method="shared"), seq_len=128), None, 4, Conditions(), cpu)
    t = step_seconds(
        design(m, tasks, AdapterConfig(method="pals", d_s=pals.d_s), seq_len=128), pals.d_s, 4, Conditions(), cpu
    )
    flops = pals.flops_per_seq / pals.flops_base_per_seq
    assert t / base - 1 > 1.5 * (flops - 1)


@pytest.mark.slow
def test_pals_calibrate_writes_a_local_profile(tmp_path):
    out = tmp_path / "local.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.calibrate", "--threads", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    p = load_profile(str(out))
    assert p.kind == "cpu" and p.threads == 1 and p.matmul_flops > 1e8 and p.bandwidth > 1e8
    bad = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.calibrate", "--threads", "0"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("matmul_flops_bf16", -9.89e14, "matmul_flops_bf16 must be a positive number"),
        ("matmul_flops_bf16", "fast", "matmul_flops_bf16 must be a positive number"),
        ("memory_bytes", -1, "memory_bytes must be a positive number"),
        ("memory_bytes", float("nan"), "memory_bytes must be a positive number"),
        ("bandwidth", "1e400", "bandwidth must be a positive number"),
        ("threads", 2.5, "threads must be a positive integer"),
        ("threads", -4, "threads must be a positive integer"),
        ("name", ["h100"], "name must be a non-empty string"),
        ("kernel_overhead_s", float("nan"), "kernel_overhead_s must be a non-negative number"),
    ],
)
def test_every_profile_field_is_checked(tmp_path, capsys, field, value, needle):
    """A negative bf16 rate gave a step time of −1e11 s and bound d_s at 12; every field is now checked."""
    good = load_profile("h100").as_dict()
    good[field] = value
    path = tmp_path / "p.json"
    path.write_text(json.dumps(good).replace('"1e400"', "1e400"))  # 1e400: JSON's infinity
    assert main(["--budget", "1.13", "--device", str(path), "--precision", "bf16"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err
