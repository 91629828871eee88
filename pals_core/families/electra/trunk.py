"""ELECTRA's torch half: BERT's trunk (``pals_core/families/bert/trunk.py``) on embeddings projected E → d
(``embeddings_project``, when E ≠ d), no pooler; the head is ``ElectraClassificationHead`` (dense + GELU +
out_proj on the first token, dropout before and after); a multiple-choice task's is ``ElectraForMultipleChoice``'s
(``ElectraSequenceSummary``: dense + GELU + dropout ``summary_last_dropout`` on the first token, then Linear(d, 1);
no dropout before the dense, as ElectraConfig sets no ``summary_first_dropout``)."""

from __future__ import annotations

import torch
from torch import nn

from ...trunks.base import DenseHead, classify_first_token
from ..bert.trunk import BertTrunk


class ElectraTrunk(BertTrunk):
    family = "electra"

    @property
    def pooler(self) -> nn.Module | None:
        return None

    def embedding_modules(self) -> list[nn.Module]:
        project = getattr(self.model, "embeddings_project", None)
        return [self.model.embeddings] + ([project] if project is not None else [])

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        h = self.model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        project = getattr(self.model, "embeddings_project", None)
        return project(h) if project is not None else h

    def new_head(self, num_labels: int) -> nn.Module:
        return DenseHead(self.config.hidden_size, num_labels, nn.GELU(), dropout_in=True)

    classify = staticmethod(classify_first_token)

    def new_choice_head(self) -> nn.Module:
        return DenseHead(self.config.hidden_size, 1, nn.GELU(), dropout_in=False)

    @property
    def choice_dropout(self) -> float:
        return getattr(self.config, "summary_last_dropout", 0.1) or 0.0


TRUNK = ElectraTrunk
