"""Multiple choice (SWAG, COPA, ARC): a row is an optional context and k candidates, its label the right one's index
(pure Python; the torch part is ``module.py``).

The rows side — the layouts (SWAG's ``sent1``, ``sent2``, ``ending0…``, ``label``; candidate columns; a list column),
each (context, candidate) pair, the right candidate's index checked, the profile's statistics — is
``rows.py:ChoiceRows``. The outputs side (the family's choice head on each of the k sequences, softmax over the
candidates, accuracy, the most frequent index as the baseline, the export's axes and head class) is
``outputs.py:ChoiceOutputs``.
"""

from __future__ import annotations

from ..base import FRACTION, Kind
from .outputs import ChoiceOutputs
from .rows import ChoiceRows


class Choice(ChoiceRows, ChoiceOutputs, Kind):
    name = "choice"
    metrics = {"accuracy": FRACTION}


KIND = Choice()
