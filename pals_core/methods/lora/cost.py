"""LoRA (Hu et al. 2021): B·A, A: d→d_s, B: d_s→d, no biases, on Q and on V of each adapted layer.

params K·2·2·d·S (no biases: exact = paper);   FLOPs per adapted layer 2·(2n·d·S + 2n·S·d)
"""

from __future__ import annotations

from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, linear, mm
from ...pricing.poly import S
from ...pricing.recipe import Recipe


def _params(m, layers, cfg, paper):
    d = m.hidden
    one = linear(d, S, bias=False) + linear(S, d, bias=False)
    parts = []
    for l in layers:
        parts += [Part("LoRA on Q", l, one), Part("LoRA on V", l, one)]
    return parts


def _flops(m, layers, cfg, n):
    d = m.hidden
    return [Part("LoRA", l, 2 * (mm(n, d, S) + mm(n, S, d))) for l in layers]


class LoraActivations(ActivationHooks):
    """q + (α/S)·B A h (and v): A keeps h, B the (B, n, S) code; the scale by a number keeps nothing."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def _update(self, h, x):
        tr = self.trace
        return tr.add(x, tr.linear(tr.linear(h, self.size, True), self.model.hidden, True))

    def adapt_query(self, i, h, q):
        return self._update(h, q)

    def adapt_value(self, i, h, v):
        return self._update(h, v)


# Hu et al. 2021, Table 9 (RoBERTa-base on GLUE): AdamW, lr 5e-4 (MNLI, SST-2, QQP, RTE) or 4e-4 (MRPC, CoLA, QNLI,
# STS-B), warm-up ratio 0.06, linear decay; the released scripts (microsoft/LoRA examples/NLU/roberta_base_mnli.sh,
# roberta_base_qqp.sh) add weight decay 0.1. 5e-4: the rate of their runs that start from the pretrained model
# (MNLI, QQP; MRPC, RTE and STS-B start from the MNLI LoRA).
RECIPE = Recipe(
    lr=5e-4,
    warmup=0.06,
    weight_decay=0.1,
    source="Hu et al. 2021, Table 9 (RoBERTa-base, GLUE: lr 4e-4 to 5e-4, warm-up ratio 0.06) and "
    "microsoft/LoRA examples/NLU/roberta_base_mnli.sh (lr 5e-4, weight decay 0.1)",
)

METHODS = (
    Method(
        "lora",
        "LoRA",
        "Rank-d_s update B·A on the query and value projections (Hu et al. 2021).",
        "4·K·d·d_s",
        _params,
        _flops,
        activations=LoraActivations,
        tensors=lambda m, layers, cfg: (4 * len(layers), 0),
        trunk="frozen",  # as its authors train it: the pretrained weights stay as they are
        recipe=RECIPE,
    ),
)
