"""The torch half of a family (``pals_core.families.registry`` is the other): embed, run layer i with a task
adapter's hooks, finish, classify — around the Hugging Face base model ``AutoModel.from_config`` builds.

A ``Trunk`` holds no parameters of its own: the HF model stays ``MultiTaskModel.bert`` (parameter names
``bert.*``), the task heads live in ``MultiTaskModel.heads``. Each family's module builds its adapted layer as
an explicit copy of its HF layer's forward with the hooks of ``pals_core.adapters.base.TaskAdapter`` at the
places it names; with every hook at its identity the copy computes exactly what the HF layer computes, and
layers the adapter does not touch run as the HF layer itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from transformers.masking_utils import create_bidirectional_mask

from ..adapters.base import Mask, TaskAdapter


def make_mask(config, embeddings: torch.Tensor, attention_mask: torch.Tensor | None) -> Mask:
    """The attention mask as the HF model builds it for its attention implementation; adapters use it too."""
    return create_bidirectional_mask(config=config, inputs_embeds=embeddings, attention_mask=attention_mask)


@dataclass
class State:
    """What the layers of one forward read besides the hidden states: ``mask`` (the adapters' mask, in the
    trunk's attention implementation's format), the raw ``attention_mask`` and family-specific tensors."""

    mask: Mask
    attention_mask: torch.Tensor | None
    extra: dict = field(default_factory=dict)


class Trunk:
    """The family-neutral interface; subclasses implement the family (one per module of this package)."""

    family = ""
    token_types = True  # reads token_type_ids

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.config = model.config
        self.current: State | None = None

    # --- structure -------------------------------------------------------------------------------------
    @property
    def layers(self) -> nn.ModuleList:
        raise NotImplementedError

    def embedding_modules(self) -> list[nn.Module]:
        """The modules of the embedding layer (frozen by CA-MTL's freezing)."""
        return [self.model.embeddings]

    @property
    def pooler(self) -> nn.Module | None:
        """The base model's pooler, shared by the tasks (None: the family's head holds its own dense layer)."""
        return None

    @property
    def classifier_dropout(self) -> float:
        c = self.config
        return c.classifier_dropout if getattr(c, "classifier_dropout", None) is not None else c.hidden_dropout_prob

    @property
    def choice_dropout(self) -> float:
        """The dropout rate of the family's ``…ForMultipleChoice`` head (its sequence head's by default)."""
        return self.classifier_dropout

    @property
    def hidden_dropout(self) -> float:
        """The dropout rate the family uses on hidden states (top stacks use it)."""
        return self.config.hidden_dropout_prob

    @property
    def norm_eps(self) -> float:
        return self.config.layer_norm_eps

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    # --- forward ---------------------------------------------------------------------------------------
    def embed(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, token_type_ids: torch.Tensor | None
    ) -> torch.Tensor:
        raise NotImplementedError

    def prepare(self, h: torch.Tensor, attention_mask: torch.Tensor | None) -> State:
        """What this forward's layers read; kept as ``current`` for a copy of a layer run on top (``bert_layer_top``)."""
        self.current = self._prepare(h, attention_mask)
        return self.current

    def _prepare(self, h: torch.Tensor, attention_mask: torch.Tensor | None) -> State:
        return State(make_mask(self.config, h, attention_mask), attention_mask)

    def plain_layer(self, module: nn.Module, i: int, h: torch.Tensor, state: State) -> torch.Tensor:
        """The HF layer ``module`` run as layer i (also a copy of a layer: ``bert_layer_top``)."""
        return module(h, state.mask)

    def adapted_layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter) -> torch.Tensor:
        raise NotImplementedError

    def hook_norms(self, i: int) -> tuple[nn.Module, nn.Module]:
        """The modules ``adapted_layer`` hands to layer i's ``attention_norm`` and ``output_norm`` hooks (what a
        task's own copy of them copies: Houlsby's LayerNorms); the calculator's ``Family.hook_norms`` counts them."""
        raise NotImplementedError

    def layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter | None) -> torch.Tensor:
        if adapter is not None and i in adapter.layers:
            return self.adapted_layer(i, h, state, adapter)
        return self.plain_layer(self.layers[i], i, h, state)

    def run(self, start: int, stop: int, h: torch.Tensor, state: State, adapter: TaskAdapter | None) -> torch.Tensor:
        """Layers start … stop−1; ``adapter`` None = the plain trunk."""
        for i in range(start, stop):
            h = self.layer(i, h, state, adapter)
        return h

    def finish(self, h: torch.Tensor) -> torch.Tensor:
        """After the last layer (ModernBERT's final norm)."""
        return h

    # --- task heads --------------------------------------------------------------------------------------
    def new_head(self, num_labels: int) -> nn.Module:
        """One task's head: Linear(d, C) on the shared pooler (pooler families); else the family's own head."""
        return nn.Linear(self.config.hidden_size, num_labels)

    def new_token_head(self, num_labels: int) -> nn.Module:
        """One tagging task's head, run on every token: what the family's ``…ForTokenClassification`` holds (by
        default dropout + Linear(d, C), the pooler unused); the calculator's ``Family.token_head_params``."""
        return nn.Linear(self.config.hidden_size, num_labels)

    @property
    def span_dropout(self) -> float:
        """The dropout of the family's ``…ForQuestionAnswering`` head before its ``qa_outputs``: none (BERT, RoBERTa,
        ELECTRA, DeBERTa, MPNet, ALBERT read the last hidden states as they are); DistilBERT ``qa_dropout``, ModernBERT
        its classifier's."""
        return 0.0

    def new_span_head(self) -> nn.Module:
        """One extractive-QA task's head, run on every token: what the family's ``…ForQuestionAnswering`` holds
        (``qa_outputs`` Linear(d, 2): the start and the end logit; ModernBERT its prediction head + classifier), run
        as ``tag`` with a dropout of ``span_dropout``."""
        return self.new_token_head(2)

    def new_choice_head(self) -> nn.Module:
        """One multiple-choice task's head, run on each candidate's sequence: what the family's
        ``…ForMultipleChoice`` holds (by default its sequence head with one output); ``Family.head_params(m, 1)``."""
        return self.new_head(1)

    def choose(
        self,
        head: nn.Module,
        pooler: nn.Module | None,
        dropout: nn.Module,
        hidden: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Each candidate sequence's score (S, 1) from its final hidden states (by default as ``classify``)."""
        return self.classify(head, pooler, dropout, hidden, attention_mask)

    def tag(self, head: nn.Module, dropout: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        """Logits (B, n, C) of every token: head(dropout(H))."""
        return head(dropout(hidden))

    def classify(
        self,
        head: nn.Module,
        pooler: nn.Module | None,
        dropout: nn.Module,
        hidden: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Logits from the final hidden states: head(dropout(pooler(H))) for pooler families."""
        return head(dropout(pooler(hidden)))


class DenseHead(nn.Module):
    """A head that holds its own dense layer, on the first token: out(drop(act(dense(drop_in(x₀)))))
    (ELECTRA: dropout before and after, GELU; DistilBERT: ReLU, dropout after; DeBERTa: ContextPooler's GELU)."""

    def __init__(self, d: int, labels: int, act: nn.Module, *, dropout_in: bool) -> None:
        super().__init__()
        self.dense = nn.Linear(d, d)
        self.act = act
        self.dropout_in = dropout_in
        self.out = nn.Linear(d, labels)

    def forward(self, first: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
        x = dropout(first) if self.dropout_in else first
        return self.out(dropout(self.act(self.dense(x))))


def classify_first_token(
    head: DenseHead, pooler, dropout: nn.Module, hidden: torch.Tensor, attention_mask
) -> torch.Tensor:
    return head(hidden[:, 0], dropout)
