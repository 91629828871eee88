"""Method name → torch builder (peft-style registry).

The calculator's registry (``pals_core.budget.METHODS``) says what a method costs; this one says how
to build it. A method is usable in ``MultiTaskBert`` when it is in both. To add one (e.g. CA-MTL):

    from pals_core.adapters.registry import BuildContext, register_adapter
    register_adapter("ca_mtl", build_task_adapter, build_shared=build_modules_shared_by_all_tasks)

and import the module from ``pals_core/adapters/__init__.py``. ``build_shared`` (optional) builds
one module shared by every task (stored as ``model.shared_adapter``, handed to each task's builder
as ``ctx.shared``); the calculator counts it once through ``Method.shared_params``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from torch import nn

from ..budget.config import AdapterConfig


@dataclass(frozen=True)
class BuildContext:
    """What a builder may read: the HF config of the trunk, the design, the adapted layers, the trunk itself."""

    base_config: Any  # transformers.BertConfig
    adapter: AdapterConfig
    layers: tuple[int, ...]  # adapted layers, 0-based, sorted (empty for top methods)
    trunk: nn.Module  # the shared transformers.BertModel (e.g. to copy its last layer)
    task: Optional[str] = None  # None when building the shared module
    num_labels: Optional[int] = None
    shared: Optional[nn.Module] = None  # the method's shared module, if it has one

    @property
    def hidden(self) -> int:
        return self.base_config.hidden_size

    @property
    def std(self) -> float:
        return self.base_config.initializer_range


Builder = Callable[[BuildContext], nn.Module]


@dataclass(frozen=True)
class AdapterSpec:
    name: str
    build: Builder  # one task's TaskAdapter
    build_shared: Optional[Builder] = None


ADAPTERS: dict[str, AdapterSpec] = {}


def register_adapter(name: str, build: Builder, *, build_shared: Optional[Builder] = None) -> AdapterSpec:
    spec = AdapterSpec(name, build, build_shared)
    ADAPTERS[name] = spec
    return spec


def get_adapter(name: str) -> AdapterSpec:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"method {name!r} has no torch modules yet (built: {', '.join(ADAPTERS)})") from None
