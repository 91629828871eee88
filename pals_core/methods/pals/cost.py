"""PALs (Stickland & Murray 2019, Sec. 3.3): exact parameter and FLOP parts per task.

``pals``: V^E: d→d_s and V^D: d_s→d (with biases) shared across the task's K adapted layers, and per
layer a multi-head attention in d_s with Q, K, V (with biases, no output matrix):
    params 2·d·S + S + d + K·(3·S² + 3·S)            (paper: 2·d·S + 3·K·S²)
``pals_unshared``: its own V^E, V^D per layer:
    params K·(2·d·S + S + d + 3·S² + 3·S)            (paper: K·(2·d·S + 3·S²))
FLOPs per adapted layer (both): 2n·d·S (V^E) + 6n·S² (Q, K, V) + 4n²·S + 2n·S·d (V^D) — sharing
V^E/V^D saves parameters, not FLOPs. The released code's GELU on the branch (``adapter_gelu``) and the
dropout on the PAL attention probabilities (``pal_attention_dropout``) are elementwise: the counts do not
change; the activation memory does (``PalsActivations``).
"""

from __future__ import annotations

from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, attention_scores, linear, mm
from ...pricing.poly import S
from ...pricing.recipe import BERT_FINE_TUNING


def _pals_params(m, layers, cfg, paper):
    d = m.hidden
    parts = [Part("encoder V^E", None, linear(d, S, paper=paper)), Part("decoder V^D", None, linear(S, d, paper=paper))]
    parts += [Part("attention Q,K,V", l, 3 * linear(S, S, paper=paper)) for l in layers]
    return parts


def _pals_unshared_params(m, layers, cfg, paper):
    d = m.hidden
    parts = []
    for l in layers:
        parts += [
            Part("encoder V^E", l, linear(d, S, paper=paper)),
            Part("decoder V^D", l, linear(S, d, paper=paper)),
            Part("attention Q,K,V", l, 3 * linear(S, S, paper=paper)),
        ]
    return parts


def _pals_flops(m, layers, cfg, n):
    d = m.hidden
    one = mm(n, d, S) + 3 * mm(n, S, S) + attention_scores(n, S) + mm(n, S, d)
    return [Part("PAL", l, one) for l in layers]


def _check_dropout(m, cfg) -> None:
    p = cfg.pal_attention_dropout
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"pal_attention_dropout must be a number in [0, 1), got {p!r}")


def small_attention(hooks: ActivationHooks, x, output: bool, dropout: float = 0.0):
    """``SmallSelfAttention`` in width S: one fused Q,K,V matmul with the concatenated weight (a computed tensor,
    3·S² floats, kept), attention with ``dropout`` on its probabilities over the (B, n, 3S) projection, the output
    matrix if any."""
    tr, s = hooks.trace, hooks.size
    qkv = tr.linear(x, 3 * s, True, weight=tr.new(3 * s * s, True))
    ctx = tr.attention(qkv, qkv, qkv, s, hooks.cfg.heads, dropout, packed=True)
    return tr.linear(ctx, s, True) if output else ctx


class PalsActivations(ActivationHooks):
    """TS_l(h) = GELU(V^D · Attn_l(V^E · h)): V^E keeps h, the attention its projection (and, with dropout, what
    the math kernel keeps), V^D the context, the GELU its input (``adapter_gelu``)."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def parallel_branch(self, i, h):
        tr = self.trace
        ctx = small_attention(self, tr.linear(h, self.size, True), output=False, dropout=self.cfg.pal_attention_dropout)
        out = tr.linear(ctx, self.model.hidden, True)
        return tr.gelu(out) if self.cfg.adapter_gelu else out


def _pals_tensors(m, layers, cfg):
    return 4 + 6 * len(layers), 0


def _pals_unshared_tensors(m, layers, cfg):
    return 10 * len(layers), 0


METHODS = (
    Method(
        "pals",
        "PALs",
        "Projected attention layers in parallel to each adapted BERT layer; V^E, V^D shared "
        "across the task's layers (Stickland & Murray 2019, Sec. 3.3).",
        "2·d·d_s + 3·K·d_s²",
        _pals_params,
        _pals_flops,
        attention=True,
        activations=PalsActivations,
        validate=_check_dropout,
        tensors=_pals_tensors,
        trunk="fine-tuned",  # as Stickland & Murray train PALs: every weight fine-tuned
        recipe=BERT_FINE_TUNING,  # Stickland & Murray 2019, Sec. 4: BERT's rate, 2e-5, 10 % warm-up
    ),
    Method(
        "pals_unshared",
        "PALs (unshared V^E/V^D)",
        "PALs with its own encoder and decoder per layer.",
        "K·(2·d·d_s + 3·d_s²)",
        _pals_unshared_params,
        _pals_flops,
        attention=True,
        validate=_check_dropout,
        activations=PalsActivations,
        tensors=_pals_unshared_tensors,
        trunk="fine-tuned",  # as Stickland & Murray train PALs: every weight fine-tuned
        recipe=BERT_FINE_TUNING,  # Stickland & Murray 2019, Sec. 4: BERT's rate, 2e-5, 10 % warm-up
    ),
)
