"""Bad input to the console commands is one line and exit 2, naming the file (no traceback): an unreadable file, a run
whose shared weights are truncated, garbage or of other shapes, a hand-edited run config.json with wrong types,
``--add-tasks`` on another ``--model``; small refusals read well: a negative or sub-byte memory bound, a ``--device``
path that is no profile, an export ``--out`` that is a symbolic link (followed, or refused before the work)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_models import tiny_config_json, train_tiny_run

from pals_core.cli.budget import main as pals_budget
from pals_core.cli.export import main as pals_export
from pals_core.cli.predict import main as pals_predict
from pals_core.cli.tasks import main as pals_tasks

BIN = Path(sys.executable).parent


def refused(p, *needles: str) -> None:
    """Exit 2 and one error line holding every needle (what a command says of its progress before may precede it)."""
    assert p.returncode == 2, (p.returncode, p.stderr)
    errors = [line for line in p.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "Traceback" not in p.stderr, p.stderr
    for needle in needles:
        assert needle in errors[0], p.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A frozen-trunk PALs run of a tiny BERT (one task, ``intent``), trained for one step; tests damage copies."""
    root = tmp_path_factory.mktemp("refusals")
    (root / "new.csv").write_text("text\ninvoice to pay\n")
    (root / "more.yaml").write_text("tasks:\n  topic: {train: rows.csv, dev: rows.csv, text: text, label: intent}\n")
    return train_tiny_run(root, ["intent"])


def shared_file(run: Path) -> Path:
    (path,) = run.glob("checkpoints/step-*/shared.safetensors")
    return path


def damage_truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def damage_garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 8)


def damage_shapes(path: Path) -> None:
    """Every tensor twice as long along its first axis: names right, shapes of another trunk."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: torch.cat([f.get_tensor(k)] * 2) for k in f.keys()}
    save_file(tensors, str(path), metadata=meta)


@pytest.mark.slow
@pytest.mark.parametrize("damage", [damage_truncated, damage_garbage, damage_shapes], ids=lambda f: f.__name__)
def test_a_damaged_shared_weights_file_is_one_line_naming_it(run, tmp_path, here, damage):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    damage(shared_file(copy))
    new = run.parent / "new.csv"
    p = here(
        pals_predict, str(copy), "--input", str(new), "--out", str(tmp_path / "p.csv"), "--no-progress", cwd=tmp_path
    )
    refused(p, str(shared_file(copy)))
    assert not (tmp_path / "p.csv").exists()
    p = here(pals_export, str(copy), "--format", "onnx", "--out", str(tmp_path / "onnx"), cwd=tmp_path)
    refused(p, str(shared_file(copy)))
    assert not (tmp_path / "onnx").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda c: c.update(max_len=[1]), "max_len must be a positive integer"),
        (lambda c: c.update(max_len=-1), "max_len must be a positive integer"),
        (lambda c: c.update(eval_batch_size="z"), "eval_batch_size must be a positive integer"),
        (lambda c: c.update(adapter=5), "adapter must be an object"),
        (lambda c: c["adapter"].update(d_s="x"), "d_s must be a positive integer"),
        (lambda c: c.update(tasks=7), "tasks must be a list"),
        (lambda c: c.update(model=5), "model must be"),
        (lambda c: c.update(data=[1]), "data must be an object"),
        (lambda c: c["data"]["intent"].update(labels=5), "data.intent.labels must be a list"),
        (lambda c: c["data"]["intent"].update(record=3), "data.intent.record must be an object"),
        (lambda c: c["data"]["intent"]["record"].update(text=5), "config.json"),
    ],
)
def test_a_hand_edited_run_config_with_wrong_types_is_one_line_naming_it(run, tmp_path, here, edit, needle):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    config = json.loads((copy / "config.json").read_text())
    edit(config)
    (copy / "config.json").write_text(json.dumps(config))
    new = run.parent / "new.csv"
    p = here(
        pals_predict, str(copy), "--input", str(new), "--out", str(tmp_path / "p.csv"), "--no-progress", cwd=tmp_path
    )
    refused(p, f"{copy / 'config.json'} is not a pals-train configuration", needle)
    p = here(pals_export, str(copy), "--format", "onnx", "--out", str(tmp_path / "onnx"), cwd=tmp_path)
    refused(p, f"{copy / 'config.json'} is not a pals-train configuration", needle)


@pytest.mark.slow
def test_add_tasks_on_another_model_is_one_line(run, tmp_path, pals_train):
    """A local model folder with the tiny BERT's layer names but twice its width (and its tokenizer)."""
    from transformers import AutoConfig, AutoModel

    from pals_core.base_model import tiny_config_dict
    from pals_core.data.load import minilm_path

    fields = {k: v for k, v in tiny_config_dict().items() if k != "model_type"}
    fields.update(hidden_size=64, intermediate_size=128)
    wide = tmp_path / "wide"
    AutoModel.from_config(AutoConfig.for_model("bert", **fields)).save_pretrained(str(wide))
    for f in Path(minilm_path()).iterdir():
        if f.name.startswith("tokenizer") or f.name in ("vocab.txt", "special_tokens_map.json"):
            shutil.copy(f, wide)
    more = run.parent / "more.yaml"
    p = pals_train("--from", str(run), "--add-tasks", str(more), "--model", str(wide), "--out", "ext", cwd=tmp_path)
    refused(p, "model")
    assert not (tmp_path / "ext" / "summary.json").exists()


def unreadable(folder: Path) -> Path:
    mem = folder / "tasks.yaml"
    mem.symlink_to("/proc/self/mem")  # opens, then fails to read (EIO), even for root (chmod 000 does not stop root)
    return mem


def test_an_unreadable_tasks_file_is_one_line_naming_it(tmp_path, here):
    mem = unreadable(tmp_path)
    refused(here(pals_budget, "--budget", "1.1", "--tasks-file", str(mem), cwd=tmp_path), str(mem), "cannot be read")
    refused(here(pals_tasks, str(mem), cwd=tmp_path), str(mem), "cannot be read")


@pytest.mark.slow  # pals-train imports torch and transformers: seconds when first in a worker
def test_an_unreadable_tasks_file_is_one_line_to_pals_train_and_makes_no_folder(tmp_path, pals_train):
    mem = unreadable(tmp_path)
    p = pals_train("--model", "tiny", "--method", "shared", "--tasks-file", str(mem), "--out", "r", cwd=tmp_path)
    refused(p, str(mem), "cannot be read")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("flag", ["--memory", "--memory-infer"])
@pytest.mark.parametrize(
    "size, needle",
    [
        ("-5", "memory must be a positive size, got '-5'"),
        ("-1GB", "memory must be a positive size, got '-1GB'"),
        ("0GB", "memory must be a positive size, got '0GB'"),
        ("0.5B", "memory '0.5B' is under one byte"),
        ("1e-12GB", "memory '1e-12GB' is under one byte"),
    ],
)
def test_a_negative_or_sub_byte_memory_bound_is_one_clear_line(tmp_path, here, flag, size, needle):
    refused(here(pals_budget, "--budget", "1.1", f"{flag}={size}", cwd=tmp_path), flag, needle)


def test_memory_infer_takes_the_sizes_the_memory_flag_takes(tmp_path, here):
    for size in ("2GB", "1.5GiB", "512MB", "1e10", "3 gib"):
        a = here(pals_budget, "--budget", "1.1", "--memory", size, "--json", cwd=tmp_path)
        b = here(pals_budget, "--budget", "1.1", "--memory-infer", size, "--json", cwd=tmp_path)
        assert a.returncode == b.returncode == 0, (size, a.stderr, b.stderr)


def test_a_device_path_that_is_no_profile_says_so(tmp_path, here):
    folder = tmp_path / "profiles"
    folder.mkdir()
    other = tmp_path / "other.json"
    other.write_text('{"hidden_size": 64}')
    for given in (folder, Path("/dev/null"), other):
        p = here(pals_budget, "--budget", "1.1", "--device", str(given), cwd=tmp_path)
        refused(p, f"{given} is", "not a device profile")
    refused(here(pals_budget, "--budget", "1.1", "--device", str(tmp_path / "gone.json"), cwd=tmp_path), "not found")


@pytest.mark.slow
def test_an_export_out_that_is_a_link_to_a_folder_is_followed(run, tmp_path, here):
    target = tmp_path / "exports"
    target.mkdir()
    link = tmp_path / "latest"
    link.symlink_to(target, target_is_directory=True)
    p = here(pals_export, str(run), "--format", "onnx", "--no-check", "--out", str(link), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert link.is_symlink() and (target / "model.onnx").is_file() and (link / "export.json").is_file()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    p = here(pals_export, str(run), "--format", "onnx", "--no-check", "--out", str(dangling), cwd=tmp_path)
    refused(p, f"--out {dangling} is a symbolic link", "does not exist")
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()


def installed_pals_train(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed ``pals-train`` script in a process of its own (the other tests call its main() in process)."""
    return subprocess.run(
        [str(BIN / "pals-train"), *args, "--no-progress"], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.mark.slow  # the installed script in a process of its own (~3 s): what a user sees on the terminal
def test_a_model_folder_without_tokenizer_files_is_one_line_before_any_folder(tmp_path):
    """An MPNet folder without its tokenizer files ended in a tokenizers traceback after the run folder was made."""
    import json

    folder = tmp_path / "mpnet"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(tiny_config_json("mpnet")))
    out = installed_pals_train(
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
    assert out.returncode == 2 and "holds no tokenizer" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "module, argv, prog",
    [
        ("pals_core.cli.budget", ["--budget"], "pals-budget"),
        ("pals_core.cli.train", ["--steps"], "pals-train"),
        ("pals_core.cli.train", ["--seeds"], "pals-train"),  # read before the trainer's parser, by the same one
        ("studies.cli", ["run", "design", "--trials"], "pals-study"),
        ("pals_core.cli.predict", ["run", "--out"], "pals-predict"),
        ("pals_core.cli.tasks", ["tasks.yaml", "--glue-dir"], "pals-tasks"),
        ("pals_core.cli.export", ["run", "--format"], "pals-export"),
        ("pals_core.cli.runs", ["list", "--root"], "pals-runs"),
        ("pals_core.cli.calibrate", ["--out"], "pals-calibrate"),
    ],
)
def test_a_flag_without_its_value_is_one_line_in_every_command(module, argv, prog, capsys):
    """Every command parses with the project's one parser (``pals_core.flags.OneLineParser``): a flag missing its
    value is one line naming the command and the flag, exit 2 — never argparse's usage dump."""
    import importlib

    assert importlib.import_module(module).main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"{prog}: error: argument {argv[-1]}: expected one argument"], err
