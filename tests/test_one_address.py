"""One address per name: inside the project (tests and benchmarks included) each name is imported from the module
that defines it, never through a package's ``__init__.py`` or another module that imported it; the users' faces
(``pals_core``, ``pals_core.budget``) keep their documented names."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("pals_core", "explorer", "studies", "tests", "benchmarks", "examples")
ON_PATH = ("tests", "benchmarks")  # their modules import each other by bare name (pytest's rootdir, a script's folder)
FACES = ("pals_core", "pals_core.budget")  # the users' public faces: their names, for users only
INSTALLED = ("pals_core", "explorer", "studies")


def _modules() -> dict[str, Path]:
    out = {}
    for path in [ROOT / "app.py", *(p for f in FOLDERS for p in sorted((ROOT / f).rglob("*.py")))]:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[0] in ON_PATH:
            parts = parts[1:]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()
_SCANNED: dict[str, tuple[set, dict, dict]] = {}


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _source(package: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    parts = parts[: len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def _scan(name: str) -> tuple[set, dict, dict]:
    """(names the module defines, name → (module, name) it imported, name → module its ``_LAZY`` loads)."""
    if name not in _SCANNED:
        defined, imported, lazy = set(), {}, {}
        package = _package(name)
        for top in ast.parse(MODULES[name].read_text()).body:
            for node in ast.walk(top) if isinstance(top, (ast.If, ast.Try)) else [top]:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defined.add(node.name)
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    defined |= {x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name)}
                    is_lazy = any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in targets)
                    if is_lazy and isinstance(node.value, ast.Dict):
                        for k, v in zip(node.value.keys, node.value.values):
                            lazy[k.value] = v.value if v.value.startswith("pals_core.") else f"{package}.{v.value}"
                elif isinstance(node, ast.ImportFrom):
                    for a in node.names:
                        imported[a.asname or a.name] = (_source(package, node), a.name)
        _SCANNED[name] = (defined - set(lazy), imported, lazy)
    return _SCANNED[name]


def _definer(module: str, name: str) -> str | None:
    """The project module that defines ``module.name`` (None: a submodule, or a name from outside the project)."""
    if f"{module}.{name}" in MODULES:
        return None
    defined, imported, lazy = _scan(module)
    if name in defined:
        return module
    if name in lazy:
        return _definer(lazy[name], name)
    if name in imported:
        source, original = imported[name]
        return _definer(source, original) if source in MODULES else None
    return module  # not found statically (a module __getattr__): the module answers for it


def _second_addresses(name: str) -> list[str]:
    """``from X import N`` and ``m.N`` (m an imported project module) in module ``name`` where X or m only hands N
    on from the module that defines it."""
    path, package, found = MODULES[name], _package(name), []
    tree = ast.parse(path.read_text())
    modules = {}  # local name → the project module it is bound to
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = _source(package, node)
        if source not in MODULES or name in FACES:
            continue
        for a in node.names:
            if f"{source}.{a.name}" in MODULES:
                modules[a.asname or a.name] = f"{source}.{a.name}"
                continue
            definer = _definer(source, a.name)
            if definer not in (None, source):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {a.name} from {source}, defined in {definer}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            source = modules[node.value.id]
            definer = _definer(source, node.attr)
            if definer not in (None, source):
                found.append(
                    f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}, defined in {definer}"
                )
    return found


def test_every_name_is_imported_from_the_module_that_defines_it():
    found = [line for name in sorted(MODULES) for line in _second_addresses(name)]
    assert not found, "\n".join(found)


def test_the_installed_packages_hand_nothing_on():
    """No ``noqa: F401`` import kept only for others to import from here (ruff checks that the rest is used)."""
    kept = [
        f"{path.relative_to(ROOT)}:{i}"
        for name, path in MODULES.items()
        if name.split(".")[0] in INSTALLED and name not in FACES
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if "noqa: F401" in line
    ]
    assert not kept, kept


def test_a_package_init_holds_only_what_it_defines():
    """Outside the users' faces, a package's ``__init__.py`` lists in ``__all__`` only names it defines."""
    handed_on = []
    for name, path in MODULES.items():
        if path.name != "__init__.py" or name in FACES or name.split(".")[0] not in INSTALLED:
            continue
        defined, _imported, lazy = _scan(name)
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                listed = {e.value for e in node.value.elts}
                handed_on += [f"{name}: {n}" for n in sorted(listed - defined)]
        handed_on += [f"{name}: {n} (lazy)" for n in lazy]
    assert not handed_on, handed_on


@pytest.mark.slow  # imports torch (pals_core.model)
def test_the_users_faces_keep_their_documented_names():
    """The guides and docs/design.md: ``from pals_core import AdapterConfig, MultiTaskModel`` (alias ``MultiTaskBert``)
    and ``from pals_core.budget import load_model, parse_tasks, design, solve, rows, Budget``."""
    face = importlib.import_module("pals_core")
    config = importlib.import_module("pals_core.pricing.config")
    assert face.AdapterConfig is config.AdapterConfig
    model = importlib.import_module("pals_core.model")
    assert face.MultiTaskModel is model.MultiTaskModel and face.MultiTaskBert is model.MultiTaskBert
    budget = importlib.import_module("pals_core.budget")
    assert all(hasattr(budget, n) for n in budget.__all__)
    assert (
        budget.solve(
            budget.design(
                budget.load_model("bert-base-uncased"),
                budget.parse_tasks(8),
                face.AdapterConfig(method="pals"),
                check_size=False,
            ),
            budget.Budget(ratio=1.13),
        ).d_s
        == 192
    )


def test_the_console_scripts_sit_in_one_place():
    """Each command of the core is ``pals_core/cli/<command>.py``; ``pals-study``'s is ``studies/cli.py`` (the studies
    stand above the core); no other module is a CLI by its name."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    where = {name: entry.partition(":")[0] for name, entry in scripts.items()}
    assert where.pop("pals-study") == "studies.cli"
    assert where == {name: f"pals_core.cli.{name.removeprefix('pals-')}" for name in where}
    assert all(module in MODULES for module in where.values())
    named_cli = sorted(
        str(p.relative_to(ROOT))
        for package in INSTALLED
        for p in (ROOT / package).rglob("*cli*.py")
        if p.parent != ROOT / "pals_core" / "cli"
    )
    assert named_cli == ["studies/cli.py"], named_cli


def test_files_are_named_for_what_they_hold():
    """One ``glue`` module each for GLUE's task table and its rows, and no ``models.py`` beside ``pals_core/model.py``."""
    names = [p.relative_to(ROOT) for package in INSTALLED for p in (ROOT / package).rglob("*.py")]
    assert not [n for n in names if n.name == "glue.py"], "GLUE's modules: tasks/glue_tasks.py, data/glue_rows.py"
    assert not [n for n in names if n.name == "models.py"], "pals_core/model.py is the one model module"
