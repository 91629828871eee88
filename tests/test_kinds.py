"""Task kinds as folders (issue 35, item 1): one registry line per kind, its pure part free of torch, and no code
outside ``pals_core/kinds/`` that branches on a kind's name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pals_core.kinds import PACKAGES, get_kind
from pals_core.tasks import TaskRecord, TaskRecordError

ROOT = Path(__file__).resolve().parents[1]


def test_each_registered_kind_is_one_folder_with_a_pure_part_and_a_torch_part():
    for name in PACKAGES:
        folder = ROOT / "pals_core" / "kinds" / name
        assert (folder / "__init__.py").is_file() and (folder / "module.py").is_file()
        assert get_kind(name).name == name
    code = "import sys, pals_core.kinds as k; [k.get_kind(n) for n in k.PACKAGES]; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_an_unknown_kind_is_named_with_the_registered_ones():
    with pytest.raises(TaskRecordError, match=r"unknown kind 'tokens' \(classification, regression, multilabel\)"):
        TaskRecord("t", kind="tokens", train="x").check()
    with pytest.raises(ValueError, match="unknown kind 'tokens'"):
        get_kind("tokens")


def test_a_field_of_another_kind_is_refused_naming_what_it_is_for():
    cases = {
        ("regression", "labels", ("a", "b")): "a regression task takes no 'labels'",
        ("multilabel", "positive", "a"): "'positive' is for binary classification (f1)",
        ("classification", "range", (0, 1)): "'range' is for regression tasks",
        ("classification", "label_sep", ";"): "'label_sep' is for multilabel tasks",
    }
    for (kind, field, value), message in cases.items():
        with pytest.raises(TaskRecordError, match=re.escape(message)):
            TaskRecord("t", kind=kind, train="x", **{field: value}).check()


BRANCH = re.compile(
    r"""(==|!=|\bin\b|\.get\()\s*\(?\s*["'](classification|regression|multilabel)["']|\.(regression|multilabel)\b"""
)


def test_no_code_outside_the_kinds_folders_branches_on_a_kind():
    found = []
    for top in ("pals_core", "explorer", "studies"):
        for path in (ROOT / top).rglob("*.py"):
            if "kinds" in path.relative_to(ROOT).parts[:2]:
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if BRANCH.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert found == []
