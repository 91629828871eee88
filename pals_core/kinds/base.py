"""``Kind``: what a task kind owns, with the behaviour most kinds share (pure Python: numpy at most, never torch).

A kind's package (``pals_core/kinds/<kind>/__init__.py``) subclasses ``Kind`` and sets ``KIND``; its torch part
(``module.py``: ``loss``, ``reduce``) loads through ``Kind.module()``. Everything below is asked of a kind by the
rest of the project, which never names one (``pals_core.kinds.get_kind``):

* the record — ``metrics`` (the main one first by default), ``fields`` (the optional record fields it takes,
  with ``field_notes`` saying what each is for), ``check`` (those fields' values);
* the rows — ``per_word`` (a row is a list of words with one label each, not a text with one label),
  ``text_columns`` / ``text_help`` (how many text columns a record names), ``record_defaults`` (the fields a
  tasks-file entry of the kind gets when it leaves them out), ``row_columns`` / ``label_columns`` (the columns a row
  reads, and those the label set is read from), ``texts`` / ``label_texts`` (a kind that reads its rows' sequences
  itself: a multiple-choice row's k (context, candidate) pairs, and the text each label stands for),
  ``label_names`` (the label set and its order; () for a kind without named labels), ``targets``
  (each row's label value, checked: one line naming file, row and column for a bad one), ``label_array`` (what the
  model trains on), ``scale`` / ``unscale`` (the targets' standardisation kept in the run, or None);
* the head — ``num_outputs`` (C_t from the label set), ``per_candidate`` (a row is k candidate sequences, each
  scored one output by the family's choice head; the row's logits are the k scores), ``every_token`` (a head on
  every token, no pooler: tagging, span), ``span_head`` (that head is ``AutoModelForQuestionAnswering``'s: a start
  and an end logit per token, the family's QA dropout), ``sequences`` (how many
  sequences one row is read as: what a row costs), ``head_params`` / ``head_flops`` (its exact count, from the
  family's head), ``logits_floats`` (the logits' memory);
* the outputs — ``decode`` (logits → ``pals-predict``'s values), ``columns`` (its prediction columns),
  ``scores`` (dev metrics), ``baseline`` (the trivial reference), ``distribution`` / ``profile_lines`` /
  ``baseline_text`` / ``distribution_text`` / ``chart`` (the profile's label statistics, printed and charted);
* the export — ``output_axes`` (each ONNX logits output's axes), ``hf_head``, ``peft_task_type`` and ``problem_type``
  (the transformers head class, peft task type and config field), ``pipeline_task``, ``pipeline_arguments`` /
  ``pipeline_call_arguments`` and ``pipeline_reading`` (the transformers ``pipeline(...)`` call that reproduces
  ``pals-predict`` on a merged or peft export, and how its output reads; the model cards quote them; a kind with no
  such pipeline gives its code instead, ``card_code``), ``output_names`` (an export's ``id2label`` where the kind
  names no labels), or ``export_refusal`` (why it cannot be exported, None when it can);
* training — ``entropy_sampling``: what MT-Uncertainty does with its rows ("softmax": entropy over the C outputs;
  "start_end": over a window's tokens, of its start and of its end distribution; "borrow": no distribution, copies
  another task's; None: refused, with ``entropy_refusal``).

What a kind hands back is declared here too, below the kinds and the modules above that read it: ``TaskOutputs``
(``decode``'s result, gathered by ``pals_core.outputs``), ``check_lengths`` (``scores``' guard) and ``is_number``
(the records' and the kinds' test of a number); the errors are ``pals_core.kinds.errors``'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


OUTPUTS_AXIS = "C"
"""The axis of a task's C_t outputs in ``Kind.output_axes`` (fixed, as an axis given as a size is: a choice task's 1;
the other, named, axes are dynamic)."""


@dataclass
class TaskOutputs:
    """One task's outputs over n rows, as its kind decodes them (``Kind.decode``). ``label``: one value per row (a
    name, a number, a list of names); ``prob``: the probability of the predicted label (None where the kind has
    none); ``probs``: (n, C) — each label's probability — or None."""

    task: str
    kind: str
    labels: tuple[str, ...]  # label names in output order; () for a kind without named labels
    label: list
    prob: np.ndarray | None
    probs: np.ndarray | None
    logits: np.ndarray | None  # (n, C); None where the caller kept the labels only (``decode(keep=False)``)
    spans: np.ndarray | None = None  # (n, 2): each answer's character [start, end) in its context (a span answer)


def check_lengths(preds: np.ndarray, labels: np.ndarray) -> None:
    """``ValueError`` unless there are as many predictions as labels, and some."""
    if preds.shape[0] != labels.shape[0]:
        raise ValueError(f"{preds.shape[0]} predictions for {labels.shape[0]} labels")
    if labels.shape[0] == 0:
        raise ValueError("no examples to score")


def is_number(v: Any) -> bool:
    """An int or a float, not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


Range = tuple[float, float]
FRACTION: Range = (0.0, 1.0)  # accuracy, F1, precision, recall: a share of the rows (or entities, labels)
CORRELATION: Range = (-1.0, 1.0)  # MCC, Pearson, Spearman
ERROR: Range = (0.0, math.inf)  # RMSE, MAE: in the user's units, lower is better


class Kind:
    """A kind declares ``metrics`` as {name: (lowest, highest) value it can take} (``FRACTION``, ``CORRELATION``,
    ``ERROR``), the first the default main metric; the class keeps the names as ``metrics`` (a tuple, what records
    and scorers read) and the ranges as ``metric_ranges`` (what a run's recorded scores are checked against:
    ``pals_core.results``)."""

    name: str = ""
    metrics: tuple[str, ...] = ()  # every metric the kind may report; the first is the default main metric
    metric_ranges: Mapping[str, Range] = {}  # each metric's range of values, as the kind declares it

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("metrics")
        if isinstance(declared, Mapping):  # {name: range}: the names as ``metrics``, the ranges beside them
            cls.metric_ranges = dict(declared)
            cls.metrics = tuple(declared)

    fields: tuple[str, ...] = ()  # optional record fields only this kind takes (labels, positive, range, label_sep)
    field_notes: dict[str, str] = {}  # field -> what a record of another kind is told it is for
    has_labels: bool = True  # a set of named labels (its order = the head's output order)
    peft_task_type: str | None = "SEQ_CLS"
    hf_head: str = "SequenceClassification"  # transformers' AutoModelFor<hf_head> / peft's AutoPeftModelFor<hf_head>
    problem_type: str = ""
    output_axes: tuple[str | int, ...] = ("batch", OUTPUTS_AXIS)  # a logits output's axes (ONNX, export.json)
    # transformers' pipeline serving the task's hf / peft export; None: none does (the model card calls the head's
    # AutoModelFor<hf_head> itself: ``export.cards.candidates_code``)
    pipeline_task: str | None = "text-classification"
    pipeline_scores: dict[str, Any] = {}  # that pipeline's function_to_apply / top_k giving pals-predict's numbers
    pipeline_call_arguments: dict[str, Any] = {}  # arguments each call of that pipeline takes (not its settings)
    pipeline_reading: str = ""  # how the pipeline's output reads as pals-predict's columns (the model card says it)
    output_names: tuple[str, ...] = ()  # the outputs' names in an export's config where the kind names no labels
    entropy_sampling: str | None = "softmax"
    entropy_refusal: str = ""
    in_units: tuple[str, ...] = ()  # metrics in the user's units (shown as they are); the rest are fractions (×100)
    per_word: bool = False  # one label per word (a tagging task): words aligned to sub-tokens, a head on every token
    # a row is k candidate sequences (C_t = k), each scored one output by the family's choice head (what its
    # ``…ForMultipleChoice`` holds); the row's logits are the k scores
    per_candidate: bool = False
    own_texts: bool = False  # the kind reads its rows' sequences itself (``texts``), not the record's text columns
    text_columns: tuple[int, int] = (1, 2)  # the fewest and the most text columns a record names
    text_help: str = "one column name or a list of two"
    record_defaults: dict = {}  # fields a tasks-file entry of this kind gets when it leaves them out
    span_head: bool = False  # the head is AutoModelForQuestionAnswering's (start and end logits on every token)

    @property
    def every_token(self) -> bool:
        """A head on every token, reading no pooler: a tagging task's (``per_word``) or a span task's."""
        return self.per_word or self.span_head

    # --- the record ----------------------------------------------------------------------------------

    @property
    def default_metric(self) -> str:
        return self.metrics[0]

    def metric_text(self, metric: str, value: Any, ci95: Any = None, digits: int = 2) -> str:
        """A dev metric as the commands print it — a run's score, a majority reference alike: a fraction ×100 with
        ``digits`` decimals ("81.23"), one of ``in_units`` (an error in the user's units: RMSE, MAE) as it is, to
        ``digits`` + 2 significant figures ("1.342"); with ``ci95``, "± half-width" likewise; "—" for none. The one
        place a metric is put on the 0–100 scale for reading."""
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            return "—"
        shown = (lambda v: f"{v:.{digits + 2}g}") if metric in self.in_units else (lambda v: f"{100 * v:.{digits}f}")
        return shown(value) + (f" ± {shown(ci95)}" if isinstance(ci95, (int, float)) else "")

    def metric_range(self, metric: str) -> Range | None:
        """The range of ``metric``'s values as the kind declares it (None for a metric it does not report)."""
        return self.metric_ranges.get(metric)

    def applies(self, metric: str, num_labels: int | None) -> bool:
        """Whether ``metric`` is reported by default for a task of ``num_labels`` outputs."""
        return True

    def check(self, record: Any, where: str) -> None:
        """Raise ``TaskRecordError`` for a bad value of one of ``fields``."""

    # --- the rows ------------------------------------------------------------------------------------

    def row_columns(self, record: Any, path: str, names: Callable[[], Sequence[str]]) -> list[str] | None:
        """The columns a row of ``path`` reads (``names()``: every column the file has, read when asked); None: every
        column, the kind finding its own among them (one read of the file, not its header and then its rows)."""
        return [*record.text, record.label]

    def label_columns(self, record: Any, path: str, names: Callable[[], Sequence[str]]) -> list[str]:
        """The train file's columns the label set is read from ([]: none, ``label_names`` needs no file)."""
        return [record.label]

    def texts(self, record: Any, cols: Any) -> tuple[list, list | None] | None:
        """Each row's sequences as (first segments, second segments or None) when the kind reads them itself — a row
        of several sequences: a list of each (``per_candidate``); None: the record's text columns, read alike for
        every kind (``tasks/rows.py``)."""
        return None

    def label_texts(self, record: Any, cols: Any) -> list | None:
        """Per row, the text each label stands for (a multiple-choice row: its candidates), checked; None for a
        kind whose labels are names (``pals-predict``'s ``<task>_text`` column)."""
        return None

    def label_names(self, record: Any, cols: Any = None) -> tuple[str, ...]:
        """The label set in output order. ``cols``: the train file's label column, read by the caller
        (``pals_core.tasks.rows.read_label_names``) unless the record declares its labels."""
        return ()

    def check_label_names(self, record: Any, names: tuple[str, ...]) -> None:
        """Raise ``TaskDataError`` when the label set read from the train file does not fit the record."""

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list:
        raise NotImplementedError

    def label_array(self, labels: Sequence[Any], num_labels: int):
        import numpy as np

        return np.asarray(labels, dtype=np.int64)

    def scale(self, train_labels: Any) -> dict | None:
        """The targets' standardisation learned from the train rows, kept in the run's config.json (``data.<task>.
        scale``) so that evaluation, ``pals-predict`` and the exports give the user's units (None: trained as read)."""
        return None

    def scale_problem(self, scale: Any) -> str | None:
        """What a run's recorded ``scale`` should be when it is not what ``scale`` writes (None: it is): by default
        the standardisation's numbers."""
        if isinstance(scale, dict) and all(is_number(scale.get(k)) for k in ("mean", "std")):
            return None
        return "an object with numbers mean and std"

    def unscale(self, preds: Any, scale: dict | None) -> Any:
        """The dev metrics' predictions (``module.reduce``'s, gathered) in the user's units."""
        return preds

    # --- the head ------------------------------------------------------------------------------------

    def num_outputs(self, names: Sequence[str]) -> int:
        return len(names)

    def sequences(self, task: Any) -> int:
        """How many sequences one row of ``task`` (a ``budget.tasks.Task``) is read as: what a row costs the trunk,
        the pooler and the head (the batch size counts rows)."""
        return 1

    def head_params(self, family: Any, m: Any, num_labels: int, paper: bool) -> int:
        """The exact parameters of one task's head: the family's sequence head (``pricing.family``) on C_t outputs."""
        return family.head_params(m, num_labels, paper)

    def head_flops(self, family: Any, m: Any, num_labels: int, seq: int) -> int:
        """Forward FLOPs of one task's head on a row of ``seq`` tokens (pooled: the head runs once a row)."""
        return family.head_flops(m, num_labels)

    def logits_floats(self, batch: int, seq: int, num_labels: int) -> int:
        """Floats of one batch's logits of a task with C_t = ``num_labels`` outputs (pooled: one vector a row)."""
        return batch * num_labels

    def module(self) -> Any:
        """The kind's torch part (``module.py``)."""
        return import_module(f"pals_core.kinds.{self.name}.module")

    # --- the outputs ---------------------------------------------------------------------------------

    def decode(
        self, task: str, names: Sequence[str], logits: Any, keep: bool = True, scale: dict | None = None
    ) -> TaskOutputs:
        raise NotImplementedError

    def columns(self, probs: bool) -> list[str]:
        """The prediction columns' ``what``s: ``label`` (the task's own column), ``prob`` (``<task>_prob``),
        ``probs`` (``<task>_prob_<label>`` for every label)."""
        return ["label", "probs"] if probs else ["label"]

    def joined(self, record: Any, value: list) -> str:
        """A row's list of labels in one CSV/TSV cell (``pals-predict``): joined by the record's ``label_sep``."""
        return (record.label_sep or ",").join(value)

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        raise NotImplementedError

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: int | None) -> tuple:
        """``({split: predictions}, C_t)``: the trivial reference's predictions on every dev set."""
        raise NotImplementedError

    def distribution(self, train_y: Any, dev_ys: Mapping[str, Any], names: Sequence[str]) -> tuple[dict, dict]:
        """The profile's label statistics of train and of the dev sets together."""
        raise NotImplementedError

    def profile_lines(self, profile: dict, table) -> list[str]:
        """``pals-tasks``'s label table of a profile (``table(header, rows)`` lays it out)."""
        raise NotImplementedError

    def baseline_text(self, profile: dict) -> str:
        """What the trivial reference predicts, in words."""
        raise NotImplementedError

    def distribution_text(self, profile: dict) -> str:
        """The label statistics in a line of markdown, shown beside the chart (``chart``), or instead of it where
        the kind charts nothing ("": the counts are charted, one bar a label, and say it all)."""
        return ""

    def chart(self, profile: dict) -> dict | None:
        """What the explorer charts of a profile, train and dev side by side: ``{"counts": {split: {bar: count}},
        "of": {split: total}, "unit": what is counted}`` — each bar its count's share of its split's total; None:
        nothing to chart (``distribution_text`` says it in words). By default the rows of each label, of all rows
        (the counts ``distribution`` gives, as ``pals-tasks``' label table prints them)."""
        return None if self.distribution_text(profile) else rows_chart(profile)

    # --- the export ----------------------------------------------------------------------------------

    def pipeline_arguments(self, max_len: int, stride: int | None = None) -> dict[str, Any]:
        """``pipeline(pipeline_task, …)``'s settings that reproduce ``pals-predict``: rows cut at the run's max length
        as the run cut them (``truncation=True``: pairs longest first — the text-classification pipeline does not cut
        by default), then ``pipeline_scores``; ``stride``: the run's windows (``RunInfo.stride``) for a kind whose
        long rows are read in windows."""
        return {"truncation": True, "max_length": max_len, **self.pipeline_scores}

    def card_code(
        self, folder: str, max_len: int, stride: int, scale: dict | None, load: str | None = None
    ) -> str | None:
        """The model card's Python for a kind that no transformers pipeline serves (None: ``pipeline_call``'s)."""
        return None

    def export_refusal(self, fmt: str) -> str | None:
        """Why a task of this kind cannot be exported to ``fmt`` ("onnx", "peft": peft and merged transformers
        folders), in one line; None when it can (``pals-export`` then refuses with it, exit 2)."""
        return None


def rows_chart(profile: dict) -> dict:
    """``Kind.chart`` of the rows of each label (the counts ``distribution`` gives), of all rows, train and dev."""
    dist = profile["distribution"]
    return {
        "counts": {s: dict(dist[s]) for s in ("train", "dev")},
        "of": {"train": profile["train_rows"], "dev": profile["dev_rows"]},
        "unit": "rows",
    }


def counts_table(profile: dict, table, what: str) -> list[str]:
    """Rows of each label, train and dev, with their shares (a kind with named labels)."""
    dist = profile["distribution"]
    n = {"train": profile["train_rows"], "dev": profile["dev_rows"]}
    rows = [
        [name]
        + [
            f"{dist[s][name]:,} ({100 * dist[s][name] / n[s]:.1f} %)" if n[s] else f"{dist[s][name]:,} (0.0 %)"
            for s in ("train", "dev")
        ]
        for name in profile["labels"]
    ]
    return table([what, "train", "dev"], rows)


__all__ = ["OUTPUTS_AXIS", "Kind", "TaskOutputs", "check_lengths", "counts_table", "is_number", "rows_chart"]
