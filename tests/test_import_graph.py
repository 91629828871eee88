"""The import graph of the project, imports inside functions included: no cycle, no module reaching a class through
the package's public face (``pals_core.__getattr__``), and every import left inside a function says why it is late."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pals_core", "explorer", "studies")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _late_imports(path: Path):
    """(line, node, has a comment) of each import of the project's own code inside a function of ``path``."""
    src = path.read_text()
    comments = {t.start[0] for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT}
    seen = set()
    for fn in ast.walk(ast.parse(src)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if id(node) in seen or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            seen.add(id(node))
            if isinstance(node, ast.ImportFrom):
                own = node.level > 0 or (node.module or "").split(".")[0] in PACKAGES
            else:
                own = any(a.name.split(".")[0] in PACKAGES for a in node.names)
            if own:
                yield node.lineno, node, any(n in comments for n in range(node.lineno, node.end_lineno + 1))


def test_the_import_graph_has_no_cycle_counting_imports_inside_functions():
    tool = ROOT.parent / "shared" / "tools" / "import_cycles.py"
    if not tool.is_file():
        pytest.skip(f"{tool} is not beside this checkout")
    out = subprocess.run([sys.executable, str(tool)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().startswith("0 cycle(s)"), out.stdout


def test_no_module_takes_a_class_from_the_package_face():
    """``pals_core.MultiTaskModel`` is for users; inside the project it is imported from ``pals_core.model``."""
    import pals_core

    lazy = set(pals_core._LAZY)
    found = []
    for name, path in _modules().items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                if base == "pals_core" and lazy & {a.name for a in node.names}:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_every_import_left_inside_a_function_says_why_it_is_late():
    """A short trailing comment ("late: loads torch"); an import with no reason to be late sits at the top."""
    silent = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _modules().values()
        for line, _node, says in _late_imports(path)
        if not says
    ]
    assert not silent, silent


def test_the_task_kinds_import_nothing_of_the_floors_above_them():
    """``pals_core/kinds/`` sits below the records, rows, metrics and outputs that use it: every import of the
    project's own code in a kind (inside functions too) stays in ``pals_core.kinds`` — its errors, ``TaskOutputs``
    and ``check_lengths`` are declared there, so no late import runs back up a floor."""
    up = []
    for name, path in _modules().items():
        if not name.startswith("pals_core.kinds"):
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets = [base]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] in PACKAGES and not (target + ".").startswith("pals_core.kinds."):
                    up.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    assert not up, up


def _own_imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports, inside functions included (``from . import x`` names the submodule)."""
    modules = _modules()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in modules}
    return out


def test_the_model_and_what_it_reads_stand_below_the_trainer():
    """``pals_core/train/`` builds ``MultiTaskModel`` (``pals_core.model``), so nothing the model imports, directly or
    through another module, inside functions too, is in the trainer's package: the model reads a run through
    ``run_info``, ``base_model`` and ``checkpoint`` beside it, and ``train.trainer`` -> ``model`` is the only way the
    arrow runs between them."""
    modules = _modules()
    seen, todo, up = set(), ["pals_core.model"], []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for target in _own_imports(name, modules[name]):
            if target == "pals_core.train" or target.startswith("pals_core.train."):
                up.append(f"{modules[name].relative_to(ROOT)} imports {target}")
            todo.append(target)
    assert "pals_core.run_info" in seen and "pals_core.checkpoint" in seen  # the walk reaches what the model reads
    assert not up, up
