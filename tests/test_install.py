"""What an install brings: `pip install .` is the calculator alone (pure Python), the extras add the rest, and the
transformers range pyproject.toml declares is the one the tests run on."""

from __future__ import annotations

import ast
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


#: modules of the installed packages that users call though nothing installed does (each says why)
USED_BY_USERS = {"pals_core/budget/sweep.py": "the calculator's whole design space at once: a Python API"}


def _modules_nothing_installed_names(root: Path) -> list[str]:
    """Modules of the installed packages that no other module of them, ``app.py`` or pyproject.toml names: not
    imported (at the top or inside a function, relative or absolute), not an entry point, not loaded by name (its
    dotted name as a string, or its file's stem under a package whose loaders build the name: ``import_module`` of an
    f-string, as the method, family, kind and lazy-name registries do)."""
    tops = ("pals_core", "explorer", "studies")
    files = {p: p.read_text() for d in tops for p in sorted((root / d).rglob("*.py"))}
    dotted = {p: ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__") for p in files}
    named: set[str] = set(re.findall(r"\b[a-z_]+(?:\.[a-z_0-9]+)+\b", (root / "pyproject.toml").read_text()))
    strings: set[str] = set()
    loaders: set[Path] = set()  # package folders whose modules load modules by a name they build
    sources = dict(files)
    if (root / "app.py").is_file():
        sources[root / "app.py"] = (root / "app.py").read_text()
    for path, text in sources.items():
        here = dotted.get(path, "app")
        package = here if path.name == "__init__.py" else here.rpartition(".")[0]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                named.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                named.add(base)
                named.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.update([node.value, *node.value.split(".")])  # f"{package}.presets": presets
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", "")) == "import_module"
            ):
                if node.args and isinstance(node.args[0], ast.JoinedStr) and path.parent.name not in tops:
                    loaders.add(path.parent)
    named |= strings

    def loaded_by_name(path: Path) -> bool:
        return path.stem in strings and any(folder in loaders for folder in path.parents)

    return [
        str(p.relative_to(root))
        for p, name in dotted.items()
        if p.name != "__init__.py" and name not in named and not loaded_by_name(p)
    ]


def test_the_installed_packages_hold_only_modules_they_use():
    """A module only the tests or the benchmarks import (a measuring instrument, e.g. counting FLOPs with torch's
    FlopCounterMode) lives beside them, not in what `pip install` ships."""
    unused = [m for m in _modules_nothing_installed_names(ROOT) if m not in USED_BY_USERS]
    assert unused == []
    assert all((ROOT / m).is_file() for m in USED_BY_USERS)


#: methods named only where they are defined because a library calls them by that name
PROTOCOLS = {"extra_repr": "torch.nn.Module's repr", "to_plotly_json": "plotly's JSON encoder"}


def test_every_function_of_the_installed_packages_is_named_somewhere_else():
    """No dead code: each function, class and method of the installed packages is named by some other line of the
    project (the packages, app.py, the tests, the benchmarks, pyproject.toml), or by the library that calls it."""
    sources = [p for d in ("pals_core", "explorer", "studies") for p in sorted((ROOT / d).rglob("*.py"))]
    others = [ROOT / "app.py", ROOT / "pyproject.toml", *(ROOT / "tests").rglob("*.py"), *ROOT.glob("benchmarks/*.py")]
    words: dict[str, int] = {}
    for path in sources + [p for p in others if p.is_file()]:
        for word in re.findall(r"[A-Za-z_]\w*", path.read_text()):
            words[word] = words.get(word, 0) + 1
    unnamed = []
    for path in sources:
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            members = node.body if isinstance(node, ast.ClassDef) else []
            for fn in [node, *members]:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and fn.name.strip("_"):
                    if not fn.name.startswith("__") and fn.name not in PROTOCOLS and words.get(fn.name, 0) <= 1:
                        unnamed.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}")
    assert unnamed == []
