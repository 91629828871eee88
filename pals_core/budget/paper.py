"""Reproduction of the configurations of Stickland & Murray (2019), docs/design.md "Budgets and the solver".

BERT-base, the paper's eight GLUE tasks, paper convention (no biases / LayerNorms), h_s = 12.
Each row says what the paper reports and what the calculator gives; disagreements are shown, never
tuned away.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..families.shapes import PRESETS
from ..pricing.config import AdapterConfig
from ..tasks.glue_tasks import PAPER_TASKS
from .costs import design
from .solver import Budget, at_size, solve
from .tasks import glue_task


@dataclass
class PaperRow:
    label: str
    method: str
    location: str | None
    budget: str
    quantity: str  # what is compared: "d_s" or "ratio"
    paper: float
    ours: float
    params_task_specific: int
    ratio: float

    @property
    def reproduces(self) -> bool:
        return abs(self.ours - self.paper) < (0.005 if self.quantity == "ratio" else 0.5)

    @property
    def difference(self) -> str:
        if self.reproduces:
            return ""
        if self.quantity == "ratio":
            return f"{self.ours:.2f}× vs claimed {self.paper:.2f}×"
        return f"{self.ours:.0f} vs {self.paper:.0f} ({self.ours - self.paper:+.0f})"

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["reproduces"] = self.reproduces
        return d


_CASES = [
    # label, method, location, extra budget, paper's d_s
    ("PALs, all layers", "pals", "all", 15e6, 204),
    ("PALs, unshared V^E/V^D", "pals_unshared", "all", 15e6, 84),
    ("PALs, top 6 layers", "pals", "top", 15e6, 276),
    ("PALs, bottom 6 layers", "pals", "bottom", 15e6, 276),
    ("Low-rank layers", "low_rank", "all", 15e6, 100),
    ("Projected attention on top", "proj_attn_top", None, 0.10 * 110e6, 204),
]


def paper_reproduction() -> list[PaperRow]:
    model = PRESETS["bert-base-uncased"]
    tasks = [glue_task(t) for t in PAPER_TASKS]
    out = []
    for label, method, loc, extra, paper_ds in _CASES:
        ds = design(
            model, tasks, AdapterConfig(method=method, location=loc, heads=12), convention="paper", check_size=False
        )
        c = solve(ds, Budget(extra=extra))
        budget = f"extra {extra / 1e6:g}M"
        out.append(PaperRow(label, method, loc, budget, "d_s", paper_ds, c.d_s, c.params_task_specific, c.ratio))
    ds = design(model, tasks, AdapterConfig(method="bert_layer_top"), convention="paper")
    c = at_size(ds, None)
    out.append(
        PaperRow(
            "BERT layer on top (8 tasks)",
            "bert_layer_top",
            None,
            "—",
            "ratio",
            1.66,
            round(c.ratio, 4),
            c.params_task_specific,
            c.ratio,
        )
    )
    return out
