"""Token classification (named entities, parts of speech, …): one tag per word, any tag set, BIO/IOB2 or plain tags
(pure Python; the torch part is ``module.py``).

The rows side — sources (CoNLL column files; list-valued JSON Lines / Parquet / save_to_disk columns), the tag set
and each word's tag checked, the profile's statistics — is ``rows.py:TokenRows``. The outputs side (the per-token
head's count, decoding one tag per word, seqeval's entity scores and token accuracy, the all-"O" baseline, the
export's axes and task type) is ``outputs.py:TokenOutputs``.
"""

from __future__ import annotations

from ..base import FRACTION, Kind
from .outputs import TokenOutputs
from .rows import TokenRows


class Tokens(TokenRows, TokenOutputs, Kind):
    name = "tokens"
    metrics = {
        "entity_f1": FRACTION,
        "entity_precision": FRACTION,
        "entity_recall": FRACTION,
        "token_accuracy": FRACTION,
    }


KIND = Tokens()
