"""Houlsby adapters (Houlsby et al. 2019, Sec. 2.1): two bottlenecks x + U·GELU(W·x) per adapted layer,
W: d→d_s, U: d_s→d (with biases).

    params K·2·(2·d·S + S + d)   (paper: 4·K·d·S);   FLOPs per adapted layer 2·(2n·d·S + 2n·S·d)
"""

from __future__ import annotations

from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, linear, mm
from ...pricing.poly import S


def _params(m, layers, cfg, paper):
    d = m.hidden
    one = linear(d, S, paper=paper) + linear(S, d, paper=paper)
    parts = []
    for l in layers:
        parts += [Part("adapter after attention", l, one), Part("adapter after FFN", l, one)]
    return parts


def _flops(m, layers, cfg, n):
    d = m.hidden
    return [Part("adapters", l, 2 * (mm(n, d, S) + mm(n, S, d))) for l in layers]


class HoulsbyActivations(ActivationHooks):
    """x + U·GELU(W·x) on the attention output and on the FFN output: W keeps x, GELU W·x, U its output."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def _bottleneck(self, x):
        tr = self.trace
        return tr.add(x, tr.linear(tr.gelu(tr.linear(x, self.size, True)), self.model.hidden, True))

    def adapt_attention_output(self, i, y):
        return self._bottleneck(y)

    def adapt_ffn_output(self, i, y):
        return self._bottleneck(y)


METHODS = (
    Method(
        "houlsby",
        "Houlsby adapters",
        "Serial bottleneck x + U·GELU(W·x) after the attention and FFN outputs (Houlsby et al. 2019).",
        "4·K·d·d_s",
        _params,
        _flops,
        activations=HoulsbyActivations,
        tensors=lambda m, layers, cfg: (8 * len(layers), 0),
        trunk="frozen",  # as its authors train it: the pretrained weights stay as they are
    ),
)
