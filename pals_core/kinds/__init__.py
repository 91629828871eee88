"""Task kinds, one package per kind (docs/design.md: "Add a task kind").

A kind is everything that depends on what a task's label *is* — a class, a number, a set of labels: reading and
checking label values out of rows, the label set and its order, the head's outputs C_t, the loss, decoding logits
to ``pals-predict``'s columns, the metrics and the main metric, the trivial baseline, the profile's label
statistics, the logits' memory, the export's output axes and peft task type. Each package holds

* ``__init__.py`` — its ``KIND``, a ``pals_core.kinds.base.Kind`` (pure Python: numpy at most, never torch);
* ``module.py`` — the torch part: ``loss(logits, labels, scale)`` and ``reduce(logits)``, the batch's outputs the
  dev metrics keep (loaded on first use, by the trainer and the evaluator only).

``PACKAGES`` below is the one place a kind is registered (its first is the default kind of a record that names
none); nothing outside the packages, this registry and the tests names a kind. This module imports nothing of the
project itself (the packages load on first use of ``get_kind``). Adding a kind = a new package + one line here.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

PACKAGES: tuple[str, ...] = (
    "classification",  # one class of C per row: softmax, cross-entropy, accuracy
    "regression",  # one number per row: mean squared error on standardised targets, Pearson
    "multilabel",  # a set of C labels per row: sigmoid, binary cross-entropy, micro F1
    "tokens",  # one tag per word: a head on every token, cross-entropy on each word's first sub-token, entity F1
    "choice",  # the right one of k candidates: one score per (context, candidate) sequence, softmax over the k
    "span",  # an answer span of a context: a start and an end logit on every token, SQuAD's exact match and F1
)
DEFAULT_KIND = PACKAGES[0]

_LOADED: dict[str, Any] = {}


def get_kind(kind: Any) -> Any:
    """The ``Kind`` of a name, or of a record (its ``kind``); an unknown name is a ``ValueError`` naming the kinds."""
    name = getattr(kind, "kind", kind)
    found = _LOADED.get(name)
    if found is None:
        if name not in PACKAGES:
            raise ValueError(f"unknown kind {name!r} ({', '.join(PACKAGES)})")
        found = _LOADED[name] = import_module(f"{__name__}.{name}").KIND
        if found.name != name:
            raise ValueError(f"pals_core/kinds/{name}/__init__.py declares kind {found.name!r}")
    return found


__all__ = ["DEFAULT_KIND", "PACKAGES", "get_kind"]
