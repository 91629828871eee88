"""The adapter methods, one package per method (or per family of variants that share code).

Each package holds ``cost.py`` — the exact parameter and FLOP parts as polynomials in d_s (pure
Python, no torch; its ``METHODS`` tuple holds the ``pals_core.pricing.method.Method`` records) — and
``module.py`` — the torch ``TaskAdapter`` holding exactly those parameters (its ``ADAPTERS`` tuple
holds the ``pals_core.adapters.AdapterSpec`` builders). ``PACKAGES`` below is the one place a method
is registered: the two collectors, which stand above the packages they read, load them by name
from it — ``registry`` (``METHODS``, pure) every ``cost.py``, ``adapters`` (``ADAPTERS``, torch) every
``module.py`` — in this order (the order of every table and list). This module imports nothing of the
project itself (``collect`` imports the packages by name when called). Adding a method = a new package +
one line here.
"""

from importlib import import_module

PACKAGES: tuple[str, ...] = (
    "shared",  # shared: heads (and poolers) only
    "pals",  # pals, pals_unshared
    "low_rank",  # low_rank
    "houlsby",  # houlsby
    "lora",  # lora
    "lhuc",  # lhuc
    "ia3",  # ia3
    "top",  # proj_attn_top, proj_ffn_top, bert_layer_top
    "ca_mtl",  # ca_mtl
)


def collect(module: str, records: str, what: str) -> dict:
    """{record.name: record} of every package's ``<module>.py`` tuple ``records``, in ``PACKAGES`` order — the one
    loader of both registries (``collect("cost", "METHODS", "declared")``, ``collect("module", "ADAPTERS", "built")``);
    a name given twice is an error naming the file."""
    found: dict = {}
    for package in PACKAGES:
        for record in getattr(import_module(f"pals_core.methods.{package}.{module}"), records):
            if record.name in found:
                raise ValueError(f"method {record.name!r} is {what} twice (pals_core/methods/{package}/{module}.py)")
            found[record.name] = record
    return found
