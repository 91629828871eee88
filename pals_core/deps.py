"""The versions of what the torch side is built on, as the tests pass on them — declared once here (pyproject.toml's
``[train]`` extra repeats the range; ``tests/test_install.py`` holds the two equal). The lower bound is the version CI
runs; the upper bound the next minor, not yet tried (the trunks follow transformers internals that move between minors).

The trunks use transformers 5 internals (``masking_utils.create_bidirectional_mask`` with ``inputs_embeds=``), so a
transformers 4.x would fail deep inside a forward pass; it is refused in one line at start instead.
"""

from __future__ import annotations

from importlib import metadata

TRANSFORMERS = ">=5.24,<5.25"


class DependencyError(RuntimeError):
    """An installed package outside the range the project is tested on."""


def check_transformers(installed: str | None = None) -> None:
    """``DependencyError`` (one line) unless the installed transformers is within ``TRANSFORMERS``."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    version = installed if installed is not None else metadata.version("transformers")
    try:
        ok = Version(version) in SpecifierSet(TRANSFORMERS)
    except InvalidVersion:
        ok = False
    if not ok:
        raise DependencyError(
            f"transformers {version} is installed; PALs Explorer is tested on transformers{TRANSFORMERS} "
            f"(pip install 'transformers{TRANSFORMERS}')"
        )
