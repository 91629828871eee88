"""What an install brings: `pip install .` is the calculator alone (pure Python), the extras add the rest, and the
transformers range pyproject.toml declares is the one the tests run on."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the calculator must install without: the torch side, the explorer, the studies, the exports, their data stack
NOT_IN_CORE = (
    "torch",
    "transformers",
    "streamlit",
    "optuna",
    "onnxruntime",
    "onnx",
    "peft",
    "datasets",
    "pandas",
    "numpy",
    "scipy",
    "sklearn",
    "plotly",
    "pyarrow",
    "safetensors",
)


@pytest.mark.slow
def test_the_core_install_is_the_calculator_alone(tmp_path):
    """A fresh venv, `pip install <checkout>` with no extra: `pals-budget --tasks 8 --budget 1.13` answers, and none of
    torch, transformers, streamlit, optuna, onnxruntime, peft (nor datasets, pandas, numpy, scipy, …) is there."""
    source = tmp_path / "src"  # a copy: pip's in-tree build would leave build/ and *.egg-info in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("pals_core", "explorer", "studies"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's install, not this checkout
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(source)], env=env, capture_output=True, text=True, timeout=600
    )
    assert install.returncode == 0, install.stderr[-2000:]

    answer = subprocess.run(
        [str(venv / "bin" / "pals-budget"), "--tasks", "8", "--budget", "1.13"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answer.returncode == 0, answer.stderr
    assert "8 tasks" in answer.stdout and "houlsby" in answer.stdout and "Traceback" not in answer.stderr

    probe = "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))"
    found = subprocess.run(
        [str(python), "-c", probe, *NOT_IN_CORE], env=env, capture_output=True, text=True, timeout=60
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [], f"the core install brought {found.stdout.split()}"
    torch = subprocess.run([str(python), "-c", "import torch"], env=env, capture_output=True, text=True, timeout=60)
    assert torch.returncode != 0 and "No module named 'torch'" in torch.stderr


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_core_needs_no_torch_side_package_and_the_extras_add_them():
    project = _pyproject()["project"]
    names = lambda reqs: {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}  # noqa: E731
    assert names(project["dependencies"]) == {"pyyaml"}
    extras = project["optional-dependencies"]
    assert {"torch", "transformers", "datasets"} <= names(extras["train"])
    assert {"onnxruntime", "peft"} <= names(extras["export"]) and "pals-explorer" in names(extras["export"])
    assert "optuna" in names(extras["study"]) and "streamlit" in names(extras["app"])
    assert set(extras["all"]) == {"pals-explorer[train,export,study,app,postgres]"} and "dev" in extras
    assert "-e '.[all,dev]'" in (ROOT / "Makefile").read_text()


def test_the_transformers_range_is_declared_once_and_checked_at_start():
    from pals_core.deps import TRANSFORMERS, DependencyError, check_transformers

    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"transformers' + re.escape(TRANSFORMERS) + '"', pyproject), "pyproject.toml and deps.py differ"
    check_transformers()  # the installed one: this very test run is on it
    for bad in ("4.57.0", "6.0.0", "not-a-version"):
        with pytest.raises(DependencyError, match=r"transformers .* is installed; PALs Explorer is tested on"):
            check_transformers(bad)


def test_the_transformers_range_is_the_one_tested_and_every_cited_version_is_inside_it():
    """Lower bound: the version these tests run on (the oldest a CI job runs); upper bound: the next minor, not yet
    tried. A comment or doc that says what transformers X.Y does names a version inside the range."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from pals_core.deps import TRANSFORMERS

    spec = SpecifierSet(TRANSFORMERS)
    installed = Version(metadata.version("transformers"))
    lower = next(Version(s.version) for s in spec if s.operator == ">=")
    upper = next(Version(s.version) for s in spec if s.operator == "<")
    assert installed in spec and (installed.major, installed.minor) == (lower.major, lower.minor)
    assert (upper.major, upper.minor) == (lower.major, lower.minor + 1), f"{TRANSFORMERS}: only {lower} is tried"
    cited = []
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md")]
    files += [p for d in ("pals_core", "explorer", "studies") for p in (ROOT / d).rglob("*.py")]
    for path in files:
        for version in re.findall(r"transformers (\d+\.\d+(?:\.\d+)?)\b", path.read_text()):
            cited.append(version)
            assert Version(version) in spec, f"{path}: transformers {version}"
    assert cited  # the check reads what it should
