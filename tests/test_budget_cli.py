"""`pals-budget` as a user runs it: a real process, its output, its exit status."""

import json
import os
import subprocess
import sys

import pytest

from pals_core.cli.budget import main


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", *args], capture_output=True, text=True, timeout=60
    )


def test_budget_never_imports_torch():
    code = (
        "import sys, pals_core.budget, pals_core\n"
        "from pals_core.cli.budget import run\n"
        "run(['--tasks', '8', '--budget', '1.13']); run(['--paper'])\n"
        "heavy = [m for m in ('torch', 'transformers', 'numpy', 'pandas') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_table():
    p = run("--tasks", "8", "--budget", "1.13")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("Priced for bert-base-uncased, the calculator's default")  # not what pals-train trains
    assert lines[lines.index("") + 1].startswith("bert-base-uncased (109,482,240 params, exact) · 8 tasks")
    assert any(line.startswith("Recommended: ") for line in lines)  # the explorer's answer, above the table
    dashes = next(i for i, l in enumerate(lines) if l.startswith("-----"))
    body = [l.split() for l in lines[dashes + 1 :] if not l.startswith("(")][:28]
    assert len(body) == 28  # 8 within-network methods × 3 locations (incl. ca_mtl, ia3) + 4 others
    pals_all = next(r for r in body if r[:2] == ["pals", "all"])
    assert pals_all[2] == "192" and pals_all[-1] == "yes"
    assert next(r for r in body if r[0] == "bert_layer_top")[-1] == "NO"


def test_json_schema():
    p = run("--tasks", "rte,stsb", "--extra", "2M", "--method", "pals", "--model", "minilm-l6-h384", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["model"] == {
        "name": "all-MiniLM-L6-v2",  # the preset minilm-l6-h384 is the embedded model, by its one name
        "family": "bert",
        "hidden": 384,
        "layers": 6,
        "heads": 12,
        "intermediate": 1536,
        "params": 22_713_216,
    }
    assert out["tasks"] == [{"name": "rte", "num_labels": 2}, {"name": "stsb", "num_labels": 1}]
    assert out["convention"] == "exact" and out["budget"] == {"ratio": None, "extra": 2e6, "per_task": None}
    (row,) = out["rows"]
    for key in (
        "method",
        "location",
        "d_s",
        "d_s_unconstrained",
        "params_task_specific",
        "params_total",
        "ratio",
        "flops_per_seq",
        "flops_base_per_seq",
        "flops_all_tasks_per_seq",
        "feasible",
    ):
        assert key in row
    assert row["method"] == "pals" and row["location"] == "all" and row["d_s"] % 12 == 0 and row["feasible"]
    assert row["params_total"] == 22_713_216 + row["params_task_specific"] <= 22_713_216 + 2e6


def test_d_s_and_config_json(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "model_type": "bert",
                "hidden_size": 64,
                "num_hidden_layers": 3,
                "num_attention_heads": 4,
                "intermediate_size": 100,
                "vocab_size": 99,
                "max_position_embeddings": 40,
                "type_vocab_size": 2,
            }
        )
    )
    p = run(
        "--model",
        str(cfg),
        "--tasks",
        "2",
        "--d-s",
        "16",
        "--method",
        "pals",
        "--heads",
        "4",
        "--location",
        "0,2",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)["rows"][0]
    n_base = (99 + 40 + 2) * 64 + 128 + 3 * (4 * 64 * 64 + 2 * 64 * 100 + 9 * 64 + 100) + 64 * 64 + 64
    adapter = (64 * 16 + 16) + (16 * 64 + 64) + 2 * 3 * (16 * 16 + 16)
    assert row["params_total"] == n_base + 2 * (adapter + 64 * 2 + 2)
    assert row["d_s"] == 16 and row["location"] == "0,2" and row["feasible"] is True


def test_paper_flag():
    p = run("--paper")
    assert p.returncode == 0
    assert "1.52× vs claimed 1.66×" in p.stdout and "101 vs 100" in p.stdout
    assert json.loads(run("--paper", "--json").stdout)["paper"][0]["ours"] == 204


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--budget", "0.9"], "below 1.0"),
        (["--budget", "-1"], "--budget"),
        (["--budget", "0"], "--budget"),
        (["--budget", "nan"], "nan"),
        (["--budget", "inf"], "inf"),
        (["--budget", "abc"], "abc"),
        (["--extra", "lots"], "lots"),
        (["--per-task", "-3"], "negative"),
        (["--tasks", "0", "--budget", "1.1"], "at least 1"),
        (["--tasks", "foo", "--budget", "1.1"], "foo"),
        (["--method", "nope", "--budget", "1.1"], "nope"),
        (["--model", "nope", "--budget", "1.1"], "nope"),
        (["--model", "/nonexistent/config.json", "--budget", "1.1"], "not found"),
        (["--budget", "1.1", "--extra", "1M"], "conflicting"),
        (["--method", "pals", "--d-s", "100"], "divisible"),
        (["--method", "proj_attn_top", "--location", "top", "--budget", "1.1"], "location"),
        (["--method", "lhuc", "--d-s", "8"], "no adapter size"),
        (["--location", "40", "--budget", "1.1"], "out of range"),
        (["--tasks", "8"], "give a budget"),
        (["--d-s", "x"], "integer"),
        (["--heads", "0", "--budget", "1.1"], "positive"),
        (["--seq-len", "-4", "--budget", "1.1"], "positive"),
        (["--convention", "other", "--budget", "1.1"], "convention"),
        (["--bogus"], "bogus"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pals-budget: error:") and needle in err
    assert "Traceback" not in err


def test_malformed_config(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    p = run("--model", str(bad), "--budget", "1.1")
    assert p.returncode == 2 and "not valid JSON" in p.stderr and "Traceback" not in p.stderr
    bad.write_text(json.dumps({"model_type": "bert", "hidden_size": 64}))
    p = run("--model", str(bad), "--budget", "1.1")
    assert p.returncode == 2 and "lacks the field" in p.stderr


@pytest.mark.parametrize("rate,needle", [([0.1], "not a number"), ("x", "not a number"), (1.5, "[0, 1)")])
def test_a_dropout_rate_that_is_no_probability_is_one_line(tmp_path, capsys, rate, needle):
    bad = tmp_path / "config.json"
    bad.write_text(
        json.dumps(
            dict(
                model_type="bert",
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=64,
                vocab_size=3000,
                hidden_dropout_prob=rate,
            )
        )
    )
    assert main(["--model", str(bad), "--budget", "1.1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


TINY_BERT = dict(
    model_type="bert", hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=3000
)


def _one_line_refusal(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err


def test_a_config_that_is_not_what_it_says_is_refused(tmp_path, capsys):
    """Custom modelling code (auto_map: jina-bert-v2) is not BERT; a config without model_type is refused as
    transformers' AutoConfig refuses it (an ALBERT config without it was priced as BERT)."""
    f = tmp_path / "config.json"
    f.write_text(json.dumps({**TINY_BERT, "auto_map": {"AutoModel": "modeling_bert.JinaBertModel"}}))
    _one_line_refusal(capsys, ["--model", str(f), "--budget", "1.1"], "custom modelling code")
    f.write_text(json.dumps({k: v for k, v in TINY_BERT.items() if k != "model_type"} | {"embedding_size": 16}))
    _one_line_refusal(capsys, ["--model", str(f), "--budget", "1.1"], "has no model_type")


def test_hostile_config_files_are_one_line_and_never_hang(tmp_path, capsys):
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    _one_line_refusal(capsys, ["--model", str(nested), "--budget", "1.1"], "nested too deeply")
    loop = tmp_path / "loop.json"
    loop.symlink_to(tmp_path / "loop.json")
    _one_line_refusal(capsys, ["--model", str(loop), "--budget", "1.1"], "cannot be read")
    folder = tmp_path / "dir.json"
    folder.mkdir()
    _one_line_refusal(capsys, ["--model", str(folder / "x.json"), "--budget", "1.1"], "not found")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it would block forever: it is never opened
    _one_line_refusal(capsys, ["--model", str(fifo), "--budget", "1.1"], "not a regular file")
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(2 << 30)  # a sparse 2 GiB file: refused by its size, never read
    _one_line_refusal(capsys, ["--model", str(big), "--budget", "1.1"], "over the")
    profile = tmp_path / "deep-profile.json"
    profile.write_text("{" + '"a":{' * 50_000 + "}" * 50_001)
    _one_line_refusal(capsys, ["--tasks", "2", "--budget", "1.1", "--device", str(profile)], "nested too deeply")


def test_deberta_with_a_convolution_is_priced_with_a_step_time(capsys):
    """The published deberta-v2-xlarge/xxlarge configs have conv_kernel_size: pals-budget crashed in the time model
    ('int' object is not callable) with a 25-line traceback."""
    import tempfile

    cfg = {
        "model_type": "deberta-v2",
        "vocab_size": 128100,
        "hidden_size": 384,
        "num_hidden_layers": 12,
        "num_attention_heads": 6,
        "intermediate_size": 1536,
        "conv_kernel_size": 3,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(cfg, fh)
    assert main(["--model", fh.name, "--budget", "1.1", "--method", "pals", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["time_step_s"] > 0 and row["feasible"]
    os.unlink(fh.name)


@pytest.mark.parametrize("columns", ["100", "80", "160"])
def test_the_table_fits_the_terminal_and_wide_shows_every_column(columns):
    """Not a terminal: 100 columns; a terminal: its width ($COLUMNS); --wide: every column, whatever the width."""
    import os

    env = {**os.environ, "COLUMNS": columns}
    p = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", "--tasks", "8", "--budget", "1.13"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert max(len(line) for line in p.stdout.splitlines()) <= int(columns)
    assert "method" in p.stdout and "fits" in p.stdout and "× base" in p.stdout
    wide = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", "--tasks", "8", "--budget", "1.13", "--wide"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    header = next(line for line in wide.stdout.splitlines() if line.startswith("method"))
    assert all(c in header for c in ("all tasks GFLOPs", "act. GiB", "serve GiB", "step s", "extra total"))
    if int(columns) < 160:
        assert "not shown to fit" in p.stdout


def test_help_says_what_happens_without_method():
    p = run("--help")
    assert "Without --method: every method the calculator knows" in " ".join(p.stdout.split())


def test_a_memory_without_a_unit_is_never_read_as_bytes_silently(capsys):
    assert main(["--tasks", "8", "--budget", "1.13", "--memory", "8"]) == 2
    err = capsys.readouterr().err
    assert "has no unit: 8GB (10⁹ bytes) or 8GiB" in err and err.count("\n") == 1
    assert main(["--tasks", "8", "--budget", "1.13", "--memory", "2.4e10", "--json"]) == 0  # bytes, as documented
    assert json.loads(capsys.readouterr().out)["machine"]["memory"] == 2.4e10


def test_wnli_is_priced_not_trained(capsys):
    """GLUE's ninth task is priced like any other (its two labels' head), and no run is looked up for it: the paper
    leaves it out, so the trainer does not train it (and says so)."""
    assert main(["--tasks", "rte,wnli", "--budget", "1.1", "--method", "pals", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tasks"] == [{"name": "rte", "num_labels": 2}, {"name": "wnli", "num_labels": 2}]
    assert out["rows"][0]["d_s"] and "priced, not trained" in out["recommendation"]["not_looked_up"]
    two_rte = main(["--tasks", "2", "--budget", "1.1", "--method", "pals", "--json"])
    assert two_rte == 0 and json.loads(capsys.readouterr().out)["rows"][0]["d_s"] == out["rows"][0]["d_s"]
    from pals_core.tasks.glue_tasks import get_task

    with pytest.raises(ValueError, match="'wnli' is priced by pals-budget, not trained"):
        get_task("wnli")
