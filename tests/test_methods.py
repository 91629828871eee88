"""One place per method: every package of ``pals_core.methods.PACKAGES`` declares its calculator entries
(``cost.py``, no torch) and its torch builders (``module.py``), the two registries agree, and any method file
can be imported first in a fresh interpreter (no import cycle through the registries)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pals_core.methods import PACKAGES
from pals_core.methods.registry import METHODS


def test_both_registries_hold_the_same_methods_in_the_order_of_the_one_list():
    from pals_core.methods.adapters import ADAPTERS

    assert list(ADAPTERS) == list(METHODS)
    assert len(PACKAGES) == len(set(PACKAGES))


def _fresh(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_cost_file_imported_first_registers_without_torch(package):
    _fresh(
        f"import sys\nfrom pals_core.methods.{package} import cost\n"
        f"from pals_core.budget import METHODS\n"
        f"assert cost.METHODS and all(METHODS[m.name] is m for m in cost.METHODS)\n"
        f"assert 'torch' not in sys.modules\n"
    )


@pytest.mark.slow
def test_a_module_file_imported_first_registers():
    """Every module.py imports the torch base the same way; CA-MTL's also imports its cost.py (one interpreter:
    importing torch costs seconds)."""
    _fresh(
        "from pals_core.methods.ca_mtl import module\n"
        "from pals_core.methods.adapters import ADAPTERS\n"
        "assert [s.name for s in module.ADAPTERS] == ['ca_mtl'] and ADAPTERS['ca_mtl'] is module.ADAPTERS[0]\n"
    )
