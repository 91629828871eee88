"""Token classification: one tag per word (pure Python; the torch part is ``module.py``).

The rows side — sources (CoNLL column files; list-valued JSON Lines / Parquet / save_to_disk columns), the tag set
and each word's tag checked, the profile's statistics — is ``rows.py:TokenRows``. The outputs side (the per-token
head's count, decoding, seqeval metrics, the all-"O" baseline, the export) is ``outputs.py:TokenOutputs``, joined
here as ``class Tokens(TokenRows, TokenOutputs, Kind)``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..base import Kind
from .rows import TokenRows


class Tokens(TokenRows, Kind):
    name = "tokens"
    metrics = ("entity_f1", "token_accuracy")

    # --- stand-ins until TokenOutputs joins this class (the profile's majority reference needs them) -------------

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: Optional[int]) -> tuple:
        """Every word tagged with the most frequent training tag ("O")."""
        import numpy as np

        flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in train_labels])
        c = num_labels or int(flat.max()) + 1
        top = int(np.bincount(flat, minlength=c).argmax())
        out = {}
        for s, y in dev_labels.items():
            preds = np.empty(len(y), dtype=object)
            for i, row in enumerate(y):
                preds[i] = np.full(len(row), top, dtype=np.int64)
            out[s] = preds
        return out, c

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        """Token accuracy; entity F1 of the baseline (it predicts no entity): 0."""
        import numpy as np

        p = np.concatenate([np.asarray(r) for r in preds]) if len(preds) else np.zeros(0)
        y = np.concatenate([np.asarray(r) for r in labels]) if len(labels) else np.zeros(0)
        accuracy = float((p == y).mean()) if len(y) else 0.0
        return {m: accuracy if m == "token_accuracy" else 0.0 for m in metrics}


KIND = Tokens()
