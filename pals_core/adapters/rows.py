"""Several tasks' adapters on one batch, each on its own rows: how a mixed-task batch runs the trunk once.

``RowGroups`` is a ``TaskAdapter`` whose every hook applies task t's adapter to the rows of task t (gathered by index,
scattered back), while the trunk's own weights — every plain and adapted layer's W_q, W_k, W_v, O, W_in, W_out and
norms — run once on the whole batch (top stacks, after the last layer, run per task: ``forward_mixed``). A hook no task's adapter overrides runs once on the whole batch, as the base
class defines it (the identity for most). Every hook acts on each sequence alone (attention never mixes rows), so
row i's result equals running row i through its task alone (``MultiTaskModel.forward_mixed``; tests/test_predict.py
holds every method to it). This is peft's ``adapter_names`` mixed batch, for every method of the project.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .base import TaskAdapter


class RowGroups(TaskAdapter):
    """``groups``: (adapter, row index) per task, the indices a partition of the batch's ``batch`` rows; the adapters
    share one design (the same adapted layers)."""

    def __init__(self, groups: Sequence[tuple[TaskAdapter, torch.Tensor]], batch: int) -> None:
        super().__init__(groups[0][0].layers)
        self._groups = list(groups)  # a plain list: the task modules stay registered where they live (the model)
        self._batch = batch

    def _rows(self, value: Any, index: torch.Tensor) -> Any:
        """``value``'s rows of one group, where its first axis is the batch (masks broadcast over it stay whole)."""
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == self._batch:
            return value[index]
        return value

    def _overridden(self, name: str) -> bool:
        return any(getattr(type(a), name) is not getattr(TaskAdapter, name) for a, _ in self._groups)

    def _each(self, name: str, *args: Any) -> Any:
        """Hook ``name`` of each group's adapter on that group's rows, scattered into one batch-first result (None
        where no group returns a tensor; zeros for a group that returns None beside others that do not)."""
        if not self._overridden(name):
            return getattr(TaskAdapter, name)(self, *args)
        parts = [(getattr(a, name)(*(self._rows(v, index) for v in args)), index) for a, index in self._groups]
        first = next((y for y, _ in parts if y is not None), None)
        if first is None:
            return None
        out = first.new_zeros((self._batch, *first.shape[1:]))
        for y, index in parts:
            if y is not None:
                out[index] = y
        return out

    # --- every hook of TaskAdapter, per group -------------------------------------------------------------------
    def adapt_embeddings(self, h):
        return self._each("adapt_embeddings", h)

    def adapt_query(self, i, h, q):
        return self._each("adapt_query", i, h, q)

    def adapt_key(self, i, h, k):
        return self._each("adapt_key", i, h, k)

    def adapt_value(self, i, h, v):
        return self._each("adapt_value", i, h, v)

    def adapt_attention_mask(self, i, mask, h):
        return self._each("adapt_attention_mask", i, mask, h)

    def adapt_attention_output(self, i, y):
        return self._each("adapt_attention_output", i, y)

    def attention_norm(self, i, norm, x):
        return self._each("attention_norm", i, norm, x)

    def adapt_ffn_activation(self, i, g):
        return self._each("adapt_ffn_activation", i, g)

    def adapt_ffn_output(self, i, y):
        return self._each("adapt_ffn_output", i, y)

    def parallel_branch(self, i, h, mask) -> torch.Tensor | None:
        return self._each("parallel_branch", i, h, mask)

    def output_norm(self, i, norm, x):
        return self._each("output_norm", i, norm, x)

    def adapt_layer_output(self, i, h):
        return self._each("adapt_layer_output", i, h)

    def adapt_top(self, hidden, mask):
        """Not here: a top stack may read its family's per-forward state (the BERT layer on top), so each task's
        stack runs on its own rows with that state prepared for them (``MultiTaskModel.forward_mixed``)."""
        raise NotImplementedError("top stacks run per task on their own rows")
