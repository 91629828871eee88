"""A trained run, read back for use: its design, tasks, records, label names, tokenizer, max length and the
checkpoint to load (the best by default) — what ``MultiTaskModel.from_run`` and ``pals-predict`` need.

Texts go through the one forward path over rows that the trainer's evaluation takes (``forward``: tokenised as the
run's rows were, sorted by length, the run's ``eval_batch_size``, padded per batch), so a run's dev file predicted
here scores exactly what summary.json says.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .atomic import read_json
from .base_model import model_shape
from .budget.methods import check_config
from .data.load import load_tokenizer, tokenizer_path
from .data.windows import window_stride
from .forward import ByRow, PerQuestion, PerWord, encode_questions, encode_texts, forward_rows
from .kinds import get_kind
from .kinds.base import is_number
from .outputs import Decoded
from .pricing.config import AdapterConfig
from .pricing.units import check_positive_int
from .tasks import records_of_config
from .tasks.record import TaskRecord


@dataclass
class RunInfo:
    """What a run folder says about the model it trained."""

    path: Path
    config: dict  # config.json (a TrainConfig)
    checkpoint: Path  # the weights loaded
    step: int
    records: dict[str, TaskRecord]
    labels: dict[str, tuple[str, ...]]  # label names per task, in output order (() for a kind without)
    num_labels: dict[str, int]
    scales: dict[str, dict] = field(default_factory=dict)  # a task's target scale (config.json data.<t>.scale)

    @property
    def max_len(self) -> int:
        return int(self.config["max_len"])

    @property
    def stride(self) -> int | None:
        """The tokens two windows of a tagging row longer than ``max_len`` share; None: such a row is cut at ``max_len``
        (``data.windows.window_stride``)."""
        return window_stride(self.config)

    @property
    def eval_batch_size(self) -> int:
        return int(self.config.get("eval_batch_size") or 128)

    def tokenizer(self):
        if not hasattr(self, "_tokenizer"):
            self._tokenizer = load_tokenizer(tokenizer_path(self.config.get("model")))
        return self._tokenizer

    @property
    def adapter(self) -> AdapterConfig:
        """The run's design (built into a model with its weights by ``MultiTaskModel.from_run``)."""
        return AdapterConfig.from_dict(self.config["adapter"])


def read_run(run_dir: str | os.PathLike, step: int | None = None) -> RunInfo:
    """The run in ``run_dir`` (a single ``pals-train`` run: config.json and checkpoints/), at its best checkpoint
    or at ``step``; ``ValueError`` in one line for anything else."""
    from .checkpoint import Checkpoints, step_dir_name  # late: loads torch

    root = Path(run_dir)
    config_file = root / "config.json"
    if not config_file.is_file():
        hint = (
            " (a --seeds or separate-models folder: give one of its runs, e.g. seed-0/ or task-<name>/)"
            if (root / "seeds.json").is_file() or (root / "separate.json").is_file()
            else ""
        )
        raise ValueError(f"{root} holds no pals-train run (no config.json){hint}")
    try:
        config = read_json(config_file)  # the guarded reader: a FIFO named config.json is refused, never opened
    except (OSError, ValueError, RecursionError) as e:
        raise ValueError(f"{config_file} cannot be read ({type(e).__name__})") from None
    if not isinstance(config, dict) or "adapter" not in config or "tasks" not in config:
        raise ValueError(f"{config_file} is not a pals-train configuration")
    try:
        records, labels, counts, scales = _read_config(config)
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # a hand-edited config.json: wrong types
        raise ValueError(f"{config_file} is not a pals-train configuration: {' '.join(str(e).split())[:200]}") from None
    ckpts = Checkpoints(root / "checkpoints")
    if step is None:
        best = ckpts.best()
        if not best:
            raise ValueError(f"{root} has no evaluated checkpoint yet (checkpoints/best.json)")
        folder, step = root / "checkpoints" / best["dir"], int(best["step"])
    else:
        folder = root / "checkpoints" / step_dir_name(step)
    if not (folder / "shared.safetensors").is_file():
        kept = sorted(p.name for p in (root / "checkpoints").glob("step-*"))
        raise ValueError(f"{root} keeps no checkpoint of step {step} (kept: {', '.join(kept) or 'none'})")
    return RunInfo(root, config, folder, int(step), records, labels, counts, scales)


def _read_config(config: dict) -> tuple[dict, dict, dict, dict]:
    """The records, label names and label counts of a run's config.json, every field read checked for its type
    (the file may have been edited by hand); ``TypeError`` / ``ValueError`` naming the field otherwise."""
    tasks = config["tasks"]
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) and t for t in tasks):
        raise TypeError(f"tasks must be a list of task names, got {tasks!r}")
    if not isinstance(config["adapter"], dict):
        raise TypeError(f"adapter must be an object, got {config['adapter']!r}")
    adapter = AdapterConfig.from_dict(config["adapter"])
    check_positive_int("max_len", config.get("max_len"))
    if config.get("eval_batch_size") is not None:
        check_positive_int("eval_batch_size", config["eval_batch_size"])
    if config.get("model") is not None and not isinstance(config["model"], str):
        raise TypeError(f"model must be a path, 'tiny' or null, got {config['model']!r}")
    try:
        shape = model_shape(config.get("model"))
    except (OSError, ValueError):  # the model itself is read, and its absence named, when the model is built
        shape = None
    if shape is not None:
        check_config(shape, adapter)  # the design's fields (d_s, heads, location, …) as the trainer checked them
    data = config.get("data") or {}
    if not isinstance(data, dict):
        raise TypeError(f"data must be an object (task → its record and labels), got {data!r}")
    for t in tasks:
        entry = data.get(t) or {}
        if not isinstance(entry, dict):
            raise TypeError(f"data.{t} must be an object, got {entry!r}")
        if entry.get("record") is not None and not isinstance(entry["record"], dict):
            raise TypeError(f"data.{t}.record must be an object, got {entry['record']!r}")
        names = entry.get("labels")
        if names is not None and (not isinstance(names, list) or not all(isinstance(x, str) for x in names)):
            raise TypeError(f"data.{t}.labels must be a list of label names, got {names!r}")
    records = {t: r.check() for t, r in records_of_config(config).items()}
    labels, counts, scales = {}, {}, {}
    for t, r in records.items():
        scale = (data.get(t) or {}).get("scale")
        if scale is not None:
            problem = get_kind(r.kind).scale_problem(scale)
            if problem:
                raise TypeError(f"data.{t}.scale must be {problem}, got {scale!r}")
            scales[t] = {k: float(v) if is_number(v) else v for k, v in scale.items()}  # numbers as floats
        names = tuple((data.get(t) or {}).get("labels") or r.labels or ())
        kind = get_kind(r.kind)
        labels[t] = names if kind.has_labels else ()
        counts[t] = kind.num_outputs(labels[t])
    return records, labels, counts, scales


def predict_texts(
    model,
    texts: str | Sequence[str],
    pairs: Sequence[str] | None = None,
    *,
    tasks: Sequence[str] | None = None,
    task_of: Sequence[str] | None = None,
    batch_size: int | None = None,
    progress=None,
    keep: bool = True,
) -> dict:
    """Every task's (``tasks``') outputs on ``texts``: {task: TaskOutputs}, one ``predict_all`` per batch (the trunk
    once), through the one forward path over rows (``forward.forward_rows``: tokenised, sorted and batched as the
    run's evaluation made them). ``task_of`` given (a task per row): each row through its own task only, rows of
    several tasks sharing each batch (``forward_mixed``), {task: (its row indices, TaskOutputs)}. ``progress(n)``
    is told of each batch's rows. Each batch is decoded as it comes (``outputs.Decoded``); ``keep=False`` keeps
    labels and their probabilities only, not every label's logit and probability (n × C numbers)."""
    info: RunInfo | None = getattr(model, "run", None)
    if info is None:
        raise ValueError("predicting texts needs a run's model (MultiTaskModel.from_run): its tokenizer and labels")
    texts = [texts] if isinstance(texts, str) else list(texts)
    if pairs is not None and len(pairs) != len(texts):
        raise ValueError(f"{len(pairs)} second texts for {len(texts)} texts")
    names = list(model.tasks) if tasks is None else [model._check_task(t) for t in tasks]
    # a task whose row is several sequences (multiple choice): texts[i] / pairs[i] are the lists of its row's
    # sequences' first and second segments (pairs None, or pairs[i] None: each read alone)
    several = {t for t in names if get_kind(info.records[t].kind).per_candidate}
    wants_pair = [t for t in names if info.records[t].pair and t not in several]
    if wants_pair and pairs is None:
        raise ValueError(f"task(s) {', '.join(wants_pair)} read a pair of texts: give the second texts")
    size = batch_size or info.eval_batch_size
    device = next(model.parameters()).device
    decoded = {
        t: Decoded(t, info.records[t].kind, info.labels[t], model.tasks[t], keep=keep, scale=info.scales.get(t))
        for t in names
    }
    per_word = {t for t in names if get_kind(info.records[t].kind).per_word}
    spans = {t for t in names if get_kind(info.records[t].kind).span_head}
    if spans and task_of is not None:
        raise ValueError(
            f"task(s) {', '.join(sorted(spans))} answer questions from their own rows: predict them without "
            "--task-column"
        )

    def rows_done(data, part: float = 1.0):  # ``progress`` told rows: a long tagging row is several sequences
        return None if progress is None else (lambda k, f=part * data.rows / max(len(data), 1): progress(k * f))

    def sinks(group, data) -> dict:  # a per-word task's rows decoded word by word, a sentence task's by row
        return {
            t: PerWord(decoded[t], data) if t in per_word else ByRow(decoded[t], data) if data.per_word else decoded[t]
            for t in group
        }

    if task_of is not None:  # each row its own task, with its second text where that task reads one
        data = encode_texts(
            info,
            texts,
            pairs,
            [info.records[t].pair or t in several for t in task_of],
            [t in per_word for t in task_of],
            [t in several for t in task_of],
        )
        forward_rows(
            model, data, sinks(names, data), batch_size=size, device=device, row_tasks=task_of, progress=rows_done(data)
        )
        rows_of = {t: np.array([i for i, x in enumerate(task_of) if x == t], dtype=np.int64) for t in names}
        return {t: (rows_of[t], decoded[t].outputs()) for t in names}
    # tasks of one text, pair tasks and per-word tasks see their own tokens (a pair task's second text is never given
    # to the others; a per-word task's words are tokenised as words); within each group one predict_all per batch runs
    # the trunk once for all of its tasks
    for t in [t for t in names if t in spans]:  # a span task's questions in its windows, decoded question by question
        data = encode_questions(info, texts, pairs, info.records[t].kind)
        sink = PerQuestion(decoded[t], data, info.records[t].kind)
        share = rows_done(data, 1 / len(names))
        forward_rows(model, data, {t: sink}, batch_size=size, device=device, per_task=True, progress=share)
    wants_pair = [t for t in wants_pair if t not in spans]
    single = [t for t in names if t not in wants_pair and t not in per_word and t not in several and t not in spans]
    groups = [single, wants_pair, [t for t in names if t in per_word]] + [[t] for t in names if t in several]
    for group in groups:
        if not group:
            continue
        if group[0] in several:  # its rows' candidates, kept together (one score each, joined per row)
            data = encode_texts(info, texts, pairs, [True] * len(texts), None, [True] * len(texts))
        elif group[0] in per_word:
            data = encode_texts(info, texts, None, None, [True] * len(texts))
        else:
            data = encode_texts(info, texts, pairs if group is wants_pair else None)
        share = rows_done(data, len(group) / len(names))
        forward_rows(model, data, sinks(group, data), batch_size=size, device=device, progress=share)
    return {t: decoded[t].outputs() for t in names}
