"""Stacks on top of BERT (Stickland & Murray 2019, Sec. 3.1, Table 1): exact parameter and FLOP parts per task.

``proj_attn_top``: V^E: d→S, V^D: S→d (with biases), N_top blocks of attention in S with Q, K, V, O
and a LayerNorm(S):   params 2·d·S + S + d + N·(4·(S² + S) + 2·S)   (paper: 2·d·S + 4·N·S²)
    FLOPs 2n·d·S + 2n·S·d + N·(8n·S² + 4n²·S)
``proj_ffn_top``: the same with FFN blocks S→f→S, f = r·S:
    params 2·d·S + S + d + N·(2·r·S² + r·S + S + 2·S)   (paper: 2·d·S + 2·N·S·f)
    FLOPs 2n·d·S + 2n·S·d + N·4n·S·f
``bert_layer_top``: one more layer of the trunk's own family, a copy of its last layer: its parameters and FLOPs
are the family's (``pals_core.families.registry``); for BERT 4d² + 2·d·d_ff + 9d + d_ff and 2n·(4d² + 2·d·d_ff) + 4n²·d.
Top methods adapt no layer: the whole trunk is shared when running all tasks.
"""

from __future__ import annotations

from collections.abc import Callable

from ...families.registry import get_family, replay_of
from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, attention_scores, layer_norm, linear, mm
from ...pricing.poly import Poly, S
from ...pricing.recipe import BERT_FINE_TUNING
from ..pals.cost import small_attention


def _top_stack(m, cfg, paper, block: Callable[[], list]):
    d = m.hidden
    parts = [Part("encoder V^E", None, linear(d, S, paper=paper)), Part("decoder V^D", None, linear(S, d, paper=paper))]
    for i in range(cfg.n_top):
        parts += [Part(name, i, p) for name, p in block()]
    return parts


def _proj_attn_top_params(m, layers, cfg, paper):
    return _top_stack(
        m,
        cfg,
        paper,
        lambda: [("attention Q,K,V,O", 4 * linear(S, S, paper=paper)), ("LayerNorm", layer_norm(S, paper=paper))],
    )


def _proj_ffn_top_params(m, layers, cfg, paper):
    f = S * cfg.ffn_ratio
    return _top_stack(
        m,
        cfg,
        paper,
        lambda: [
            ("FFN", linear(S, f, paper=paper) + linear(f, S, paper=paper)),
            ("LayerNorm", layer_norm(S, paper=paper)),
        ],
    )


def _bert_layer_top_params(m, layers, cfg, paper):
    return [
        Part("layer (a copy of the last)", None, Poly(0, 0, get_family(m.family).layer_params(m, m.layers - 1, paper)))
    ]


def _proj_attn_top_flops(m, layers, cfg, n):
    d = m.hidden
    block = 4 * mm(n, S, S) + attention_scores(n, S)
    return [Part("encoder/decoder", None, mm(n, d, S) + mm(n, S, d))] + [
        Part("attention", i, block) for i in range(cfg.n_top)
    ]


def _proj_ffn_top_flops(m, layers, cfg, n):
    d = m.hidden
    f = S * cfg.ffn_ratio
    block = mm(n, S, f) + mm(n, f, S)
    return [Part("encoder/decoder", None, mm(n, d, S) + mm(n, S, d))] + [
        Part("FFN", i, block) for i in range(cfg.n_top)
    ]


def _bert_layer_top_flops(m, layers, cfg, n):
    return [Part("layer (a copy of the last)", None, Poly(0, 0, get_family(m.family).layer_flops(m, m.layers - 1, n)))]


class ProjectedTopActivations(ActivationHooks):
    """H + V^D · blocks(V^E · H): V^E keeps H; each block keeps what its layers keep (attention in S as in PALs,
    with the output matrix; or the FFN S → f → S with its GELU), its dropout mask and its LayerNorm's input."""

    def block(self, x):
        raise NotImplementedError

    residual = True

    def adapt_top(self, h):
        tr = self.trace
        x = tr.linear(h, self.size, True)
        for _ in range(self.cfg.n_top):
            x = tr.layer_norm(tr.add(x, tr.dropout(self.block(x), tr.cond.hidden_dropout)), True)
        out = tr.linear(x, self.model.hidden, True)
        return tr.add(h, out) if self.residual else out


class ProjAttnTopActivations(ProjectedTopActivations):
    @property
    def residual(self) -> bool:
        return self.cfg.proj_attn_top_residual

    def block(self, x):
        return small_attention(self, x, output=True)


class ProjFfnTopActivations(ProjectedTopActivations):
    def block(self, x):
        tr = self.trace
        return tr.linear(tr.gelu(tr.linear(x, self.size * self.cfg.ffn_ratio, True)), self.size, True)


class BertLayerTopActivations(ActivationHooks):
    """One more layer of the trunk's family (a copy of its last layer, run as the trunk runs it), all of it trained."""

    def adapt_top(self, h):
        plain = ActivationHooks(self.trace, self.model, self.cfg, (), None)
        return replay_of(self.model).layer(self.trace, self.model, "top", h, True, plain)


def _bert_layer_top_tensors(m, layers, cfg):
    return replay_of(m).layer_tensors(m, "top"), 0


def _check_top_layer(m, cfg) -> None:
    if cfg.bert_layer_top_init not in ("fresh", "copy"):
        raise ValueError(f"bert_layer_top_init must be fresh or copy, got {cfg.bert_layer_top_init!r}")


def _check_n_top(m, cfg) -> None:
    if not isinstance(cfg.n_top, int) or cfg.n_top < 1:
        raise ValueError(f"n_top must be a positive integer, got {cfg.n_top!r}")


def _check_ffn_stack(m, cfg) -> None:
    _check_n_top(m, cfg)
    if not isinstance(cfg.ffn_ratio, int) or cfg.ffn_ratio < 1:
        raise ValueError(f"ffn_ratio must be a positive integer, got {cfg.ffn_ratio!r}")


METHODS = (
    Method(
        "proj_attn_top",
        "Projected attention on top",
        "V^E, N_top attention layers of width d_s, V^D, on the "
        "final hidden states, replacing them as the released code does (the residual of Sec. 3.1's text: "
        "proj_attn_top_residual).",
        "2·d·d_s + 4·N_top·d_s²",
        _proj_attn_top_params,
        _proj_attn_top_flops,
        attention=True,
        top=True,
        within=False,
        validate=_check_n_top,
        activations=ProjAttnTopActivations,
        tensors=lambda m, layers, cfg: (4 + 10 * cfg.n_top, 0),
        trunk="fine-tuned",  # as the PALs paper trains its top variants
        recipe=BERT_FINE_TUNING,  # Stickland & Murray 2019, Sec. 4: BERT's rate, 2e-5, 10 % warm-up
    ),
    Method(
        "proj_ffn_top",
        "Projected FFN on top",
        "As projected attention on top, with FFN blocks d_s→f→d_s.",
        "2·d·d_s + 2·N_top·d_s·f",
        _proj_ffn_top_params,
        _proj_ffn_top_flops,
        top=True,
        within=False,
        validate=_check_ffn_stack,
        activations=ProjFfnTopActivations,
        tensors=lambda m, layers, cfg: (4 + 6 * cfg.n_top, 0),
        trunk="fine-tuned",  # as the PALs paper trains its top variants
        recipe=BERT_FINE_TUNING,  # Stickland & Murray 2019, Sec. 4: BERT's rate, 2e-5, 10 % warm-up
    ),
    Method(
        "bert_layer_top",
        "BERT layer on top",
        "One full BERT layer per task on top of the shared encoder (fresh, as released; or a copy of the last layer).",
        "4·d² + 2·d·d_ff",
        _bert_layer_top_params,
        _bert_layer_top_flops,
        sized=False,
        top=True,
        within=False,
        validate=_check_top_layer,
        activations=BertLayerTopActivations,
        tensors=_bert_layer_top_tensors,
        trunk="fine-tuned",  # as the PALs paper trains its top variants
        fixed_flops=lambda m, layers, cfg: get_family(m.family).fixed_flops(m, m.layers - 1),
        recipe=BERT_FINE_TUNING,  # Stickland & Murray 2019, Sec. 4: BERT's rate, 2e-5, 10 % warm-up
    ),
)
