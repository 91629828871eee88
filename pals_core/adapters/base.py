"""The interface every task adapter implements, and the small building blocks they share.

A ``TaskAdapter`` holds ONE task's adapter weights. ``adapt_embeddings(E)`` may change the input
embeddings (methods whose calculator entry sets ``conditions_input``, e.g. CA-MTL). The encoder loop (``pals_core.encoder``) runs
the plain Hugging Face ``BertLayer`` at every layer the adapter does not touch, and at each adapted
layer l (``self.layers``) an explicit copy of BERT's layer that calls these hooks:

    q, v   = adapt_qv(l, h, Q h, V h)                  # LoRA
    ctx    = MH(q, K h, v; adapt_attention_mask(l, mask, h))       # CA-MTL conditional attention
    y      = adapt_attention_output(l, dropout(O ctx))  # Houlsby (serial, before residual + LN1)
    a_l    = layer_norm(l, "attention", LN1, y + h)     # CA-MTL conditional layer norm
    z      = adapt_ffn_output(l, dropout(W_out GELU(W_in a_l)))  # Houlsby
    h'     = layer_norm(l, "output", LN2, z + a_l + parallel(l, h, mask))  # PALs / low-rank (parallel, SPEC §4)
    h_{l+1} = adapt_layer_output(l, h')                   # LHUC

and after the last layer ``top(H, mask)`` (projected attention / FFN stacks, a BERT layer on top).
Every hook is the identity by default, so a method overrides only what it changes.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch
from torch import nn


Mask = Any
"""The batch's attention mask as transformers builds it for the trunk's attention implementation
(sdpa: bool (B, 1, n, n) or None when nothing is padded; eager: additive float) — adapters use the same."""


class TaskAdapter(nn.Module):
    """One task's adapter. ``layers``: the adapted BERT layers (0-based, sorted); empty for top methods."""

    def __init__(self, layers: Sequence[int] = ()) -> None:
        super().__init__()
        self.layers: tuple[int, ...] = tuple(layers)

    def adapt_embeddings(self, h: torch.Tensor) -> torch.Tensor:
        """The embedding output E (B, n, d) before layer 0."""
        return h

    def adapt_qv(self, i: int, h: torch.Tensor, q: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return q, v

    def adapt_attention_mask(self, i: int, mask: Mask, h: torch.Tensor) -> Mask:
        """The mask (or additive bias) the trunk's attention of layer i uses."""
        return mask

    def layer_norm(self, i: int, which: str, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        """LN1 (``which="attention"``) or LN2 (``"output"``) of layer i applied to x."""
        return norm(x)

    def adapt_attention_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        return y

    def adapt_ffn_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        return y

    def parallel(self, i: int, h: torch.Tensor, mask: Mask) -> Optional[torch.Tensor]:
        """TS_l(h_l), added inside LN2; None = no parallel branch."""
        return None

    def adapt_layer_output(self, i: int, h: torch.Tensor) -> torch.Tensor:
        return h

    def top(self, hidden: torch.Tensor, mask: Mask) -> torch.Tensor:
        """Applied to the final hidden states H (B, n, d) before the pooler."""
        return hidden


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


def layer_key(i: int) -> str:
    """ModuleDict key of BERT layer i (parameter names read ``….attention.3.query.weight``)."""
    return str(i)
