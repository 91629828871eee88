"""Shared BERT: the task adapter is the identity everywhere (every hook of ``TaskAdapter`` at its default)."""

from __future__ import annotations

from ...adapters.base import AdapterSpec, TaskAdapter

ADAPTERS = (AdapterSpec("shared", lambda ctx: TaskAdapter(())),)
