"""Shared BERT: no adapter, so no adapter parameters and no extra FLOPs; each task has only its head
(and, with ``per_task_pooler``, its pooler), counted by ``pals_core.budget.costs``."""

from __future__ import annotations

from ...pricing.method import Method, no_parts
from ...pricing.recipe import BERT_FINE_TUNING

METHODS = (
    Method(
        "shared",
        "Shared BERT",
        "All layers shared; only a head (and optionally a pooler) per task.",
        "0",
        no_parts,
        no_parts,
        sized=False,
        within=False,
        trunk="fine-tuned",  # the PALs paper's shared baseline: the whole model fine-tuned
        recipe=BERT_FINE_TUNING,  # Stickland & Murray 2019, Sec. 4: BERT's rate, 2e-5, 10 % warm-up
    ),
)
