"""The closed-form parameter and FLOP calculator and its budget solver. Pure Python: no torch.

It stands above what it prices (docs/design.md "The house: floors, and one direction of dependency"): the vocabulary of
a price (``Method``/``Part``, ``Poly``, ``AdapterConfig``, ``BaseModel``: ``pals_core.pricing``), the families
(``pals_core.families``: ``PRESETS``, ``load_model``), the methods (``pals_core.methods``: ``METHODS``, each method's
parts in ``<name>/cost.py``) and memory and time (``pals_core.footprint``); this package holds the cost model
(``costs``), the solver (``solver``), the design checks (``methods``), a machine's pricing (``machine``) and the rows
(``table``), and hands on the public names of the floors below. The command ``pals-budget`` is
``pals_core/cli/budget.py``.

    >>> from pals_core.budget import load_model, parse_tasks, rows, Budget
    >>> r = rows(load_model("bert-base-uncased"), parse_tasks(8), budget=Budget(ratio=1.13), methods=["pals"], location="all")
    >>> r[0].d_s
    192
"""

from ..families.shapes import DEFAULT_MODEL, PRESETS, from_hf_config, load_model
from ..methods.registry import METHODS, get_method
from ..pricing.config import AdapterConfig
from ..pricing.method import Method, Part
from ..pricing.poly import Poly
from ..pricing.shape import BaseModel
from ..tasks.glue_tasks import GLUE_LABELS, PAPER_TASKS
from .costs import (
    CONVENTIONS,
    DEFAULT_SEQ_LEN,
    Cost,
    Design,
    base_flops,
    base_params,
    breakdown,
    default_seq_len,
    design,
    evaluate,
    forward_flops,
    head_params,
    pooler_params,
)
from .methods import check_config, location_label, resolve_layers
from .solver import Budget, at_size, real_optimum, smallest_budget, solve
from .table import WITHIN_LOCATIONS, designs_for, rows, sort_rows
from .tasks import Task, glue_task, parse_tasks, tasks_of_records

_LAZY = {"PaperRow": "paper", "paper_reproduction": "paper"}  # the paper's reproduction, loaded on first use (--paper)


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AdapterConfig",
    "BaseModel",
    "Budget",
    "CONVENTIONS",
    "Cost",
    "DEFAULT_MODEL",
    "DEFAULT_SEQ_LEN",
    "Design",
    "GLUE_LABELS",
    "METHODS",
    "Method",
    "PAPER_TASKS",
    "PRESETS",
    "PaperRow",
    "Part",
    "Poly",
    "Task",
    "WITHIN_LOCATIONS",
    "at_size",
    "base_flops",
    "base_params",
    "breakdown",
    "check_config",
    "default_seq_len",
    "design",
    "designs_for",
    "evaluate",
    "forward_flops",
    "from_hf_config",
    "get_method",
    "glue_task",
    "head_params",
    "load_model",
    "location_label",
    "paper_reproduction",
    "parse_tasks",
    "pooler_params",
    "real_optimum",
    "resolve_layers",
    "rows",
    "smallest_budget",
    "solve",
    "sort_rows",
    "tasks_of_records",
]
