"""The interface every task adapter implements, what its builder reads, and the small building blocks they share.

A ``TaskAdapter`` holds ONE task's adapter weights; each method's ``pals_core/methods/<name>/module.py``
subclasses it and declares its builders (``AdapterSpec``) in ``ADAPTERS``. The trunk of the base
model's family (``pals_core.trunks``) runs the plain Hugging Face layer at every layer the adapter does not
touch, and at each adapted layer l (``self.layers``) an explicit copy of the family's layer that calls these
hooks, named by where they act, in this order (BERT's post-norm layer; the other families' modules say
where each place is in their layer — in a pre-norm layer (ModernBERT) ``attention_norm`` is the norm before
the attention and ``output_norm`` the one before the FFN, and the parallel branch joins the residual):

    q       = adapt_query(l, h, W_q h + b_q)               # LoRA
    k       = adapt_key(l, h, W_k h + b_k)                 # IA³
    v       = adapt_value(l, h, W_v h + b_v)               # LoRA, IA³
    ctx     = MH(q, k, v; adapt_attention_mask(l, mask, h))  # CA-MTL conditional attention (mask/score bias)
    y       = adapt_attention_output(l, dropout(O ctx))    # Houlsby (serial, before residual + LN1)
    a_l     = attention_norm(l, LN1, y + h)                # CA-MTL conditional layer norm
    g       = adapt_ffn_activation(l, GELU(W_in a_l))      # IA³
    z       = adapt_ffn_output(l, dropout(W_out g))        # Houlsby, CA-MTL bottleneck
    h'      = output_norm(l, LN2, z + a_l + parallel_branch(l, h, mask))  # PALs / low-rank (parallel); CA-MTL
    h_{l+1} = adapt_layer_output(l, h')                    # LHUC

before layer 0 ``adapt_embeddings(E)`` (methods whose calculator entry sets ``conditions_input``,
e.g. CA-MTL) and after the last layer ``adapt_top(H, mask)`` (projected attention / FFN stacks, a
BERT layer on top). Every hook is the identity by default (``parallel_branch`` None = no branch), so
a method overrides only what it changes, and with every hook at its default the adapted layer
computes exactly ``BertLayer``'s output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..pricing.config import AdapterConfig

Mask = Any
"""The batch's attention mask as transformers builds it for the trunk's attention implementation
(sdpa: bool (B, 1, n, n) or None when nothing is padded; eager: additive float) — adapters use the same."""


class TaskAdapter(nn.Module):
    """One task's adapter. ``layers``: the adapted BERT layers (0-based, sorted); empty for top methods.

    Hooks (identity by default; ``i`` is the layer, ``h`` the layer's input (B, n, d)): see the module docstring."""

    #: names of this module's own parameters that AdamW must not decay (``MultiTaskModel.parameter_groups``): scale
    #: vectors whose identity is 1, which weight decay (p ← p − lr·λ·p) would pull toward 0, away from the base model
    NO_DECAY: tuple[str, ...] = ()

    def __init__(self, layers: Sequence[int] = ()) -> None:
        super().__init__()
        self.layers: tuple[int, ...] = tuple(layers)

    def adapt_embeddings(self, h: torch.Tensor) -> torch.Tensor:
        """The embedding output E (B, n, d) before layer 0."""
        return h

    def adapt_query(self, i: int, h: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """The queries W_q h + b_q (B, n, d) of layer i, before the split into heads."""
        return q

    def adapt_key(self, i: int, h: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """The keys W_k h + b_k (B, n, d) of layer i, before the split into heads."""
        return k

    def adapt_value(self, i: int, h: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The values W_v h + b_v (B, n, d) of layer i, before the split into heads."""
        return v

    def adapt_attention_mask(self, i: int, mask: Mask, h: torch.Tensor) -> Mask:
        """The mask (or additive bias on the attention scores) the trunk's attention of layer i uses."""
        return mask

    def adapt_attention_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        """dropout(O ctx) of layer i, before the residual and LN1."""
        return y

    def attention_norm(self, i: int, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        """LN1 of layer i (``attention.output.LayerNorm``) applied to x = y + h."""
        return norm(x)

    def adapt_ffn_activation(self, i: int, g: torch.Tensor) -> torch.Tensor:
        """The FFN activation GELU(W_in a) (B, n, d_ff) of layer i (the output of ``intermediate``), before W_out."""
        return g

    def adapt_ffn_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        """dropout(W_out g) of layer i, before the residual and LN2."""
        return y

    def parallel_branch(self, i: int, h: torch.Tensor, mask: Mask) -> torch.Tensor | None:
        """TS_l(h_l), added inside LN2; None = no parallel branch."""
        return None

    def output_norm(self, i: int, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        """LN2 of layer i (``output.LayerNorm``) applied to x = z + a (+ the parallel branch)."""
        return norm(x)

    def adapt_layer_output(self, i: int, h: torch.Tensor) -> torch.Tensor:
        """The output h_{l+1} of layer i."""
        return h

    def adapt_top(self, hidden: torch.Tensor, mask: Mask) -> torch.Tensor:
        """The final hidden states H (B, n, d), before the pooler."""
        return hidden


@dataclass(frozen=True)
class BuildContext:
    """What a builder may read: the HF config of the trunk, the design, the adapted layers, the trunk itself."""

    base_config: Any  # the trunk's transformers config (any supported family)
    adapter: AdapterConfig
    layers: tuple[int, ...]  # adapted layers, 0-based, sorted (empty for top methods)
    trunk: nn.Module  # the shared HF base model (e.g. to copy its last layer)
    task: str | None = None  # None when building the shared module
    num_labels: int | None = None
    shared: nn.Module | None = None  # the method's shared module, if it has one
    family: Any = None  # the trunk's family, torch half (``pals_core.trunks.Trunk``): runs a layer, names its parts
    shape: Any = None  # the calculator's view of the base model (``pals_core.budget.BaseModel``)

    @property
    def hidden(self) -> int:
        return self.base_config.hidden_size

    @property
    def intermediate(self) -> int:
        """d_ff, the width of the FFN activation (DistilBERT's ``hidden_dim``, ModernBERT's GLU width)."""
        return self.shape.intermediate if self.shape is not None else self.base_config.intermediate_size

    @property
    def dropout(self) -> float:
        """The trunk's hidden-state dropout rate."""
        return self.family.hidden_dropout if self.family is not None else self.base_config.hidden_dropout_prob

    @property
    def eps(self) -> float:
        """The trunk's LayerNorm epsilon."""
        return self.family.norm_eps if self.family is not None else self.base_config.layer_norm_eps

    @property
    def std(self) -> float:
        return self.base_config.initializer_range


Builder = Callable[[BuildContext], nn.Module]


@dataclass(frozen=True)
class AdapterSpec:
    """How to build one method: ``build`` makes one task's ``TaskAdapter``; ``build_shared`` (optional) one
    module shared by every task (``model.shared_adapter``, handed to each task's builder as ``ctx.shared``;
    the calculator counts it once through ``Method.shared_params``)."""

    name: str
    build: Builder
    build_shared: Builder | None = None


def init_linear(layer: nn.Linear, std: float) -> nn.Linear:
    """BERT's initialisation: weights ~ N(0, std²) (std = ``initializer_range``), bias 0."""
    nn.init.normal_(layer.weight, mean=0.0, std=std)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def zero_linear(layer: nn.Linear) -> nn.Linear:
    """Zero weights and bias: the branch it closes outputs exactly 0 at initialisation."""
    nn.init.zeros_(layer.weight)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def reinitialise(layer: nn.Module, std: float) -> nn.Module:
    """BERT's initialisation of a fresh layer (``BertPreTrainedModel._init_weights``): every Linear N(0, std²) with
    zero bias, every LayerNorm gain 1 and bias 0 (CA-MTL's adapter layer, ``bert_layer_top`` fresh)."""
    for module in layer.modules():
        if isinstance(module, nn.Linear):
            init_linear(module, std)
        elif isinstance(module, nn.LayerNorm):
            if module.weight is not None:
                nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    return layer


def layer_key(i: int) -> str:
    """ModuleDict key of BERT layer i (parameter names read ``….attention.3.query.weight``)."""
    return str(i)
