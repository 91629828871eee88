"""Low-rank layers (Stickland & Murray 2019, Sec. 3.2): own V^E_l: d→d_s, V^D_l: d_s→d (with biases) per layer.

    params K·(2·d·S + S + d)   (paper: 2·K·d·S);   FLOPs per adapted layer 2n·d·S + 2n·S·d
(the released code's GELU between V^E and V^D, ``adapter_gelu``, is elementwise: 0 FLOPs)
"""

from __future__ import annotations

from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, linear, mm
from ...pricing.poly import S
from ...pricing.recipe import BERT_FINE_TUNING


def _params(m, layers, cfg, paper):
    d = m.hidden
    parts = []
    for l in layers:
        parts += [Part("encoder V^E", l, linear(d, S, paper=paper)), Part("decoder V^D", l, linear(S, d, paper=paper))]
    return parts


def _flops(m, layers, cfg, n):
    d = m.hidden
    return [Part("low-rank", l, mm(n, d, S) + mm(n, S, d)) for l in layers]


class LowRankActivations(ActivationHooks):
    """V^D_l GELU(V^E_l h): V^E keeps h, the GELU the (B, n, S) code, V^D the GELU's output (without the GELU,
    ``adapter_gelu=False``: V^D keeps the code)."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def parallel_branch(self, i, h):
        tr = self.trace
        code = tr.linear(h, self.size, True)
        return tr.linear(tr.gelu(code) if self.cfg.adapter_gelu else code, self.model.hidden, True)


METHODS = (
    Method(
        "low_rank",
        "Low-rank layers",
        "Parallel low-rank update V^D V^E h per adapted layer (Sec. 3.2).",
        "2·K·d·d_s",
        _params,
        _flops,
        activations=LowRankActivations,
        tensors=lambda m, layers, cfg: (4 * len(layers), 0),
        trunk="fine-tuned",  # as the PALs paper trains its low-rank variant
        recipe=BERT_FINE_TUNING,  # Stickland & Murray 2019, Sec. 4: BERT's rate, 2e-5, 10 % warm-up
    ),
)
