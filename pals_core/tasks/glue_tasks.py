"""GLUE, built in: the one place that knows the GLUE tasks (Stickland & Murray 2019, Section 4; Table 3).

Each ``GlueTask`` says where its columns are in the official TSV files (the layout ``download_glue_data.py``
writes; see the GLUE folder's ``SOURCES.md``) and in the Hugging Face ``nyu-mll/glue`` dataset, its label
order (the hub's ``ClassLabel`` order, so both sources give the same labels), its metrics and the one metric
that enters the paper's dev average (Table 3: accuracy for every task, CoLA MCC, STS-B Pearson; MRPC and QQP
count with their accuracy). ``glue_record(name)`` is the task as a ``TaskRecord``, of the same kind as a task
of one's own; everything past this module reads records.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kinds import DEFAULT_KIND
from .record import TaskRecord

Column = str | int  # a header name, or a 0-based index for files without a header


@dataclass(frozen=True)
class GlueTask:
    name: str  # "cola", "sst2", ...
    folder: str  # "CoLA", "SST-2", ... (official folder name)
    text_a: Column
    text_b: Column | None
    label: Column
    classes: tuple[str, ...] | None  # label strings in class-index order; None = a number per row (STS-B)
    metrics: tuple[str, ...]  # reported on dev
    main: str  # the metric of the paper's dev average (Table 3)
    dev_files: tuple[tuple[str, str], ...] = (("", "dev.tsv"),)  # (split suffix, file name)
    header: bool = True
    columns: int | None = None  # field count of a headerless file
    drop_short_rows: bool = False  # QQP: truncated rows are dropped and counted
    hub_config: str = ""
    hub_columns: tuple[str, str | None] = ("sentence", None)
    hub_dev_splits: tuple[tuple[str, str], ...] = (("", "validation"),)
    train_file: str = "train.tsv"
    range: tuple[float, float] | None = None  # a number per row: the targets' declared range
    kind: str = DEFAULT_KIND  # the task's kind (``pals_core.kinds``)

    @property
    def num_labels(self) -> int:
        """C_t: classes, or 1 for STS-B's score."""
        return 1 if self.classes is None else len(self.classes)

    @property
    def dev_splits(self) -> tuple[str, ...]:
        """Suffixes of the dev sets: ``("",)``, or ``("m", "mm")`` for MNLI matched / mismatched."""
        return tuple(s for s, _ in self.dev_files)

    def files(self, train: bool = True) -> list[str]:
        """Relative paths of the files this task needs, e.g. ``["RTE/train.tsv", "RTE/dev.tsv"]``."""
        names = ([self.train_file] if train else []) + [f for _, f in self.dev_files]
        return [f"{self.folder}/{n}" for n in names]

    def record(self) -> TaskRecord:
        """This task as a record: rows from the GLUE folder, columns named as on the hub."""
        text = tuple(c for c in self.hub_columns if c)
        return TaskRecord(
            name=self.name,
            kind=self.kind,
            text=text,
            label="label",
            labels=self.classes,
            metric=self.main,
            metrics=self.metrics,
            range=self.range,
            glue=self.name,
        )


GLUE_TASKS: dict[str, GlueTask] = {
    t.name: t
    for t in (
        GlueTask(
            "cola",
            "CoLA",
            text_a=3,
            text_b=None,
            label=1,
            classes=("0", "1"),
            metrics=("mcc",),
            main="mcc",
            header=False,
            columns=4,
            hub_config="cola",
            hub_columns=("sentence", None),
        ),
        GlueTask(
            "sst2",
            "SST-2",
            text_a="sentence",
            text_b=None,
            label="label",
            classes=("0", "1"),
            metrics=("accuracy",),
            main="accuracy",
            hub_config="sst2",
            hub_columns=("sentence", None),
        ),
        GlueTask(
            "mrpc",
            "MRPC",
            text_a="#1 String",
            text_b="#2 String",
            label="Quality",
            classes=("0", "1"),
            metrics=("f1", "accuracy"),
            main="accuracy",
            hub_config="mrpc",
            hub_columns=("sentence1", "sentence2"),
        ),
        GlueTask(
            "stsb",
            "STS-B",
            text_a="sentence1",
            text_b="sentence2",
            label="score",
            classes=None,
            metrics=("pearson", "spearman"),
            main="pearson",
            hub_config="stsb",
            hub_columns=("sentence1", "sentence2"),
            range=(0.0, 5.0),
            kind="regression",
        ),  # STS-B similarity scores: 0 (unrelated) … 5 (equivalent)
        GlueTask(
            "qqp",
            "QQP",
            text_a="question1",
            text_b="question2",
            label="is_duplicate",
            classes=("0", "1"),
            metrics=("f1", "accuracy"),
            main="accuracy",
            drop_short_rows=True,
            hub_config="qqp",
            hub_columns=("question1", "question2"),
        ),
        GlueTask(
            "mnli",
            "MNLI",
            text_a="sentence1",
            text_b="sentence2",
            label="gold_label",
            classes=("entailment", "neutral", "contradiction"),
            metrics=("accuracy",),
            main="accuracy",
            dev_files=(("m", "dev_matched.tsv"), ("mm", "dev_mismatched.tsv")),
            hub_config="mnli",
            hub_columns=("premise", "hypothesis"),
            hub_dev_splits=(("m", "validation_matched"), ("mm", "validation_mismatched")),
        ),
        GlueTask(
            "qnli",
            "QNLI",
            text_a="question",
            text_b="sentence",
            label="label",
            classes=("entailment", "not_entailment"),
            metrics=("accuracy",),
            main="accuracy",
            hub_config="qnli",
            hub_columns=("question", "sentence"),
        ),
        GlueTask(
            "rte",
            "RTE",
            text_a="sentence1",
            text_b="sentence2",
            label="label",
            classes=("entailment", "not_entailment"),
            metrics=("accuracy",),
            main="accuracy",
            hub_config="rte",
            hub_columns=("sentence1", "sentence2"),
        ),
    )
}
"""The paper's eight GLUE tasks (MNLI is one task with two dev sets, matched and mismatched)."""

PAPER_TASKS: tuple[str, ...] = tuple(GLUE_TASKS)
"""The eight GLUE tasks of Stickland & Murray (2019), Table 3, in its order."""

PRICED_NOT_TRAINED: dict[str, int] = {"wnli": 2}
"""GLUE tasks the calculator prices (name → outputs) but the trainer does not train: the paper leaves WNLI out of its
eight tasks (Table 3), so it has no files here and no run of it exists to measure."""
GLUE_LABELS: dict[str, int] = {**{n: t.num_labels for n, t in GLUE_TASKS.items()}, **PRICED_NOT_TRAINED}
"""GLUE tasks and their number of outputs (STS-B is a regression)."""

_ALIASES = {"sst-2": "sst2", "sts-b": "stsb", "mnli-m": "mnli", "mnli-mm": "mnli"}


def glue_name(name: str) -> str | None:
    """The canonical GLUE name of ``name`` ("SST-2" → "sst2"), or None for a name GLUE does not have."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    return key if key in GLUE_LABELS else None


def get_task(name: str) -> GlueTask:
    """A task by name (``"rte"``, ``"SST-2"``, ``"mnli-m"`` …); ``ValueError`` naming the known tasks."""
    key = glue_name(name)
    if key in PRICED_NOT_TRAINED:
        raise ValueError(f"task {key!r} is priced by pals-budget, not trained: the paper leaves {key.upper()} out")
    if key not in GLUE_TASKS:
        raise ValueError(
            f"unknown task {name!r} (GLUE tasks here: {', '.join(GLUE_TASKS)}; your own tasks: --tasks-file)"
        )
    return GLUE_TASKS[key]


def glue_record(name: str) -> TaskRecord:
    """The built-in record of a GLUE task."""
    return get_task(name).record()


def parse_task_list(spec: str | list[str]) -> list[str]:
    """``"rte,mrpc"`` or a list → canonical GLUE names, in the given order, each once."""
    names = [p.strip() for p in spec.split(",")] if isinstance(spec, str) else [str(p).strip() for p in spec]
    names = [n for n in names if n]
    if not names:
        raise ValueError("no tasks given")
    out: list[str] = []
    for n in names:
        key = get_task(n).name
        if key in out:
            raise ValueError(f"task {key!r} is listed twice")
        out.append(key)
    return out
