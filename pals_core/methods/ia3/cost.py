"""(IA)³ (Liu et al. 2022, Sec. 3.3): exact parameter and FLOP parts per task.

Per adapted layer three learned vectors, initialised to 1:
    K ← l_k ⊙ K,   V ← l_v ⊙ V   (l_k, l_v ∈ R^d),      FFN: W_out (l_ff ⊙ γ(W_in x))   (l_ff ∈ R^{d_ff})
    params K·(2d + d_ff) — weights, not biases: exact = paper;   FLOPs 0 (elementwise products, no matmul)
Sizeless (no d_s, like LHUC) and within the network (a location): running all tasks on one input shares
the layers below the lowest adapted layer, as for every within-network method.
"""

from __future__ import annotations

from ...pricing.activations import ActivationHooks, Sym
from ...pricing.method import Method, Part, no_parts
from ...pricing.poly import Poly
from ...pricing.recipe import Recipe


def _params(m, layers, cfg, paper):
    d, f = m.hidden, m.intermediate
    parts = []
    for l in layers:
        parts += [
            Part("key scale l_k", l, Poly(0, 0, d)),
            Part("value scale l_v", l, Poly(0, 0, d)),
            Part("FFN scale l_ff", l, Poly(0, 0, f)),
        ]
    return parts


class Ia3Activations(ActivationHooks):
    """x ⊙ l (l a row of a trained parameter): the product keeps x (the keys, the values, the FFN activation)."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def _scale(self, x):
        return self.trace.mul(x, Sym(self.trace.new(0, True).nbytes, True), s_is_param=True)

    def adapt_key(self, i, h, k):
        return self._scale(k)

    def adapt_value(self, i, h, v):
        return self._scale(v)

    def adapt_ffn_activation(self, i, g):
        return self._scale(g)


# Liu et al. 2022 (T-Few, Sec. 3.3 and 4.2) train (IA)³ at lr 3e-3 with a linear decay after a 60-step warm-up of
# 1,000 steps (ratio 0.06) and no weight decay (r-three/t-few configs/ia3.json: lr 3e-3; src/utils/Config.py:
# warmup_ratio 0.06, weight_decay 0). Their optimiser is Adafactor on T0; the trainer's AdamW takes the same rate.
RECIPE = Recipe(
    lr=3e-3,
    warmup=0.06,
    weight_decay=0.0,
    source="Liu et al. 2022 (T-Few), r-three/t-few configs/ia3.json (lr 3e-3) and src/utils/Config.py "
    "(warm-up ratio 0.06, weight decay 0)",
)

METHODS = (
    Method(
        "ia3",
        "IA³",
        "Learned vectors scaling the keys, the values and the FFN activation of each adapted "
        "layer, initialised to 1 (Liu et al. 2022, Sec. 3.3).",
        "K·(2d + d_ff)",
        _params,
        no_parts,
        sized=False,
        activations=Ia3Activations,
        tensors=lambda m, layers, cfg: (3, 0),
        trunk="frozen",  # as its authors train it: the pretrained weights stay as they are
        recipe=RECIPE,
    ),
)
