"""ONNX for every design: a trained run as ONE graph that runs the trunk once and gives every task's logits, its
tokenizer beside it and ``export.json`` describing the tasks — a folder ``pals-predict`` (``OnnxRunner``) or any
onnxruntime user can serve from alone, without this package's torch modules.

    DIR/model.onnx        inputs  input_ids, attention_mask (int64, [batch, sequence]) and token_type_ids where the
                                  family reads them (BERT, ELECTRA); outputs: one float32 logits output per task, named
                                  after the task, with the axes its kind declares (``Kind.output_axes``): [batch, C_t]
                                  for a sentence task (C_t = 1: a regression score), [batch, sequence, C_t] for a
                                  tagging task (every token's; a word's tag is its first sub-token's), [batch, 1] for a
                                  multiple-choice task (one score per input row, each input row one (context,
                                  candidate) sequence, a row's k candidates k consecutive input rows:
                                  ``sequences_per_row`` in export.json; the softmax is over each k)
    DIR/tokenizer*.json … the run's tokenizer (``save_pretrained``); truncate to ``max_len``, pairs longest-first
    DIR/words_tokenizer/  a tagging task's tokenizer where it reads words otherwise (byte-level BPE: saved with
                          ``add_prefix_space=True``, ``data/words.py``); absent where the run's reads words as it is
    DIR/export.json       what the graph needs around it: tasks (kind, label names, text columns, the output's
                          ``axes``, and a trained target scale: a regression's value is output·std + mean), max_len,
                          inputs

The graph is ``MultiTaskModel.predict_all`` traced by torch's TorchScript-based exporter (``dynamo=False``: the one
that exports every method and family here, data-dependent Python branches included) with dynamic batch and sequence
axes; a ``--method separate`` folder (one full model per task) becomes one graph holding every task's model. Every
export is checked before it is published (``check``): onnxruntime against torch on a few dev rows of each task plus
one row of ``max_len`` tokens, logits within 1e-4 (relative to their size above 1). The folder is written under a
temporary name beside ``out`` and renamed into place: a reader sees a whole export or none.

onnx and onnxruntime are imported only when exporting or serving.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np

from ..atomic import atomic_write_json, read_json_file
from ..data.load import load_tokenizer, raw_splits
from ..data.words import marks_word_starts
from ..forward import encode_texts
from ..kinds import DEFAULT_KIND, get_kind
from ..kinds.base import OUTPUTS_AXIS
from ..run_info import RunInfo, predict_texts
from ..tasks.readers import column_names, read_columns
from ..tasks.record import TaskRecord
from ..train.separate import SeparatePlan
from . import ExportFailed, ExportRefused, save_tokenizer

MODEL_FILE = "model.onnx"
META_FILE = "export.json"
WORDS_DIR = "words_tokenizer"  # a tagging task's tokenizer, where it is not the sentence tasks' (word starts marked)
FORMAT = "pals-export/onnx"
VERSION = 1
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
INPUT_AXES = ("batch", "sequence")  # every input's axes, both dynamic
DEFAULT_OPSET = 17
MIN_OPSET = 17
TOLERANCE = 1e-4  # largest |onnxruntime − torch| logit difference an export may have (times max(1, |logit|))
CHECK_ROWS = 8  # dev rows per task the check compares
SAMPLE_TEXTS = (
    "the service was quick and friendly",
    "where is my refund for the last invoice?",
    "It rained all day, so the match was moved to Sunday.",
)

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class OnnxExport:
    """What ``export_onnx`` wrote and how it checked."""

    path: Path
    inputs: list[str]
    outputs: list[str]
    opset: int
    files: list[str]
    max_abs_diff: float | None = None  # onnxruntime vs torch (None: not checked)
    check_rows: int = 0
    check_source: str = ""
    meta: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------- which models


def load_models(run_dir: PathLike, step: int | None = None, device: str = "cpu") -> list:
    """The model of a ``pals-train`` run (at its best checkpoint or ``step``), or — a ``--method separate`` folder —
    each task's own model (each at its own best checkpoint). ``ValueError`` in one line otherwise."""
    from ..model import MultiTaskModel  # late: loads torch

    root = Path(run_dir)
    if not root.is_dir():
        raise ValueError(f"{root}: no such run folder")
    if SeparatePlan.held_in(root):
        if step is not None:
            raise ValueError(
                f"{root} is a separate-models folder: each task's run keeps its own best checkpoint, "
                "--step does not apply (export one task's run, task-<name>/, for another step)"
            )
        plan = SeparatePlan.read(root)
        models = []
        for t in plan.template.tasks:
            sub = Path(plan.task_dir(t))
            if not (sub / "config.json").is_file():
                raise ValueError(f"{root}: task {t!r} has no run yet ({sub.name}/): finish or resume the training")
            models.append(MultiTaskModel.from_run(sub, device=device))
        return models
    return [MultiTaskModel.from_run(root, step=step, device=device)]


def _as_models(model) -> list:
    models = list(model) if isinstance(model, (list, tuple)) else [model]
    if not models:
        raise ValueError("nothing to export: no model")
    for m in models:
        if getattr(m, "run", None) is None:
            raise ValueError("exporting needs a run's model (MultiTaskModel.from_run): its tokenizer, tasks and labels")
    names = [t for m in models for t in m.tasks]
    if len(set(names)) != len(names):
        raise ValueError(f"the models share task names ({', '.join(names)}): one graph needs each task once")
    clash = sorted(set(names) & set(INPUT_NAMES))
    if clash:
        raise ExportRefused(
            f"task {clash[0]!r} is named like a graph input ({', '.join(INPUT_NAMES)}): ONNX needs "
            "distinct names; rename the task"
        )
    for m in models:
        for t in m.tasks:
            why = _kind(models, t).export_refusal("onnx")
            if why:
                raise ExportRefused(f"task {t!r}: {why}")
    if len({m.run.max_len for m in models}) != 1:
        raise ValueError("the models were trained with different max lengths: one graph cannot tokenise for all")
    if len({m.run.stride for m in models}) != 1:
        raise ValueError("the models read long sentences in different windows (stride): one folder cannot say both")
    return models


# ------------------------------------------------------------------------------------------------ the graph


def _graph_module(models):
    """An ``nn.Module`` whose forward is every model's ``predict_all`` (the trunk once per model): a tuple of logits,
    one per task, in the order of ``[t for m in models for t in m.tasks]``."""
    from torch import nn

    class Graph(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.models = nn.ModuleList(models)
            self.names = [list(m.tasks) for m in models]

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = []
            for m, names in zip(self.models, self.names):
                logits = m.predict_all(input_ids, attention_mask, token_type_ids, tasks=names, per_row=False)
                out.extend(logits[t] for t in names)
            return tuple(out)

    return Graph().eval()


def _sample_batch(model, max_len: int | None = None) -> dict:
    """The batch the exporter traces: two rows, one of ``max_len`` tokens (default: the run's) and one padded. No
    module branches on the sequence length in Python (CA-MTL's attention bias pads, then slices), so the graph holds
    at every length the model takes, longer than the traced one too (tests/test_export_anywhere.py). A model
    that is not a run's (no tokenizer) traces token ids of its vocabulary, ``max_len`` (default 128) at most its
    position table."""
    import torch

    info: RunInfo | None = getattr(model, "run", None)
    if info is not None:
        n = max_len or info.max_len
        return encode_texts(info, [" ".join(["word"] * (2 * n)), SAMPLE_TEXTS[0]]).batch([0, 1])
    config = model.base_config
    positions = getattr(config, "max_position_embeddings", None)
    n = max_len or (min(128, positions - 2) if positions else 128)
    ids = (torch.arange(2 * n).reshape(2, n) % (model.trunk.vocab_size - 3)) + 3  # clear of pad / special ids 0–2
    mask = torch.ones_like(ids)
    mask[1, n // 2 :] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def _block_diag(g, tensors):
    """``aten::block_diag`` (CA-MTL's attention bias), which the TorchScript exporter lacks: each block padded to
    the full width at its column offset, the rows concatenated. The blocks' shapes are static (parameters)."""
    import torch
    from torch.onnx import symbolic_helper

    blocks = symbolic_helper._unpack_list(tensors)
    shapes = [symbolic_helper._get_tensor_sizes(b) for b in blocks]
    if any(s is None or len(s) != 2 or None in s for s in shapes):
        raise ExportFailed("block_diag of blocks without static 2-D shapes")
    width, offset, rows = sum(s[1] for s in shapes), 0, []
    for b, (_, c) in zip(blocks, shapes):
        pads = g.op("Constant", value_t=torch.tensor([0, offset, 0, width - offset - c], dtype=torch.int64))
        rows.append(g.op("Pad", b, pads))
        offset += c
    return g.op("Concat", *rows, axis_i=0)


def check_opset(opset: int) -> int:
    """``opset`` if this torch exports it and it is at least ``MIN_OPSET``; ``ValueError`` in one line otherwise."""
    from torch.onnx import _constants

    top = int(getattr(_constants, "ONNX_MAX_OPSET", DEFAULT_OPSET))
    if isinstance(opset, bool) or not isinstance(opset, int) or not MIN_OPSET <= opset <= top:
        raise ValueError(f"--opset must be an integer from {MIN_OPSET} to {top} (torch's newest), got {opset!r}")
    return opset


def dynamic_axes(kind) -> dict[int, str]:
    """The dynamic axes of a task's logits output, as the exporter takes them: every named axis its kind declares
    (``Kind.output_axes``) but C, the task's fixed number of outputs (a size, such as a choice task's 1, is fixed)."""
    return {i: a for i, a in enumerate(kind.output_axes) if isinstance(a, str) and a != OUTPUTS_AXIS}


def shapes_text(meta: dict) -> str:
    """Every output with its axes, as ``pals-export`` prints them: ``intent [batch, C=3] · ner [batch, sequence, C=5]``;
    a multiple-choice task's ``swag [batch, 1] (4 input rows a row, one score a candidate)``."""
    parts = []
    for t, d in meta["tasks"].items():
        axes = d.get("axes") or ("batch", OUTPUTS_AXIS)
        shown = [f"{a}={d['num_labels']}" if a == OUTPUTS_AXIS else str(a) for a in axes]
        k = d.get("sequences_per_row")  # a choice row: its k candidates k consecutive input rows
        parts.append(f"{t} [{', '.join(shown)}]" + (f" ({k} input rows a row, one score a candidate)" if k else ""))
    return " · ".join(parts)


def _kind(models: Sequence, task: str):
    """The kind of ``task`` (its run's record; a model without a run: the default kind), which names its output axes."""
    for m in models:
        info = getattr(m, "run", None)
        if info is not None and task in info.records:
            return get_kind(info.records[task].kind)
    return get_kind(DEFAULT_KIND)


def write_graph(
    models: Sequence, path: Path, opset: int = DEFAULT_OPSET, *, max_len: int | None = None
) -> tuple[list[str], list[str]]:
    """Trace ``models`` (see ``_graph_module``; runs' models or any ``MultiTaskModel``) to ``path``; returns the
    graph's (inputs, outputs). An input the family never reads (token_type_ids of RoBERTa, DistilBERT, …) is left
    out of the graph by the exporter. ``max_len``: the traced length (see ``_sample_batch``)."""
    import torch
    from torch.onnx import symbolic_helper

    check_opset(opset)
    graph = _graph_module(list(models))
    batch = _sample_batch(models[0], max_len)
    outputs = [t for names in graph.names for t in names]
    args = tuple(batch[k] for k in INPUT_NAMES)
    axes = {k: dict(enumerate(INPUT_AXES)) for k in INPUT_NAMES} | {t: dynamic_axes(_kind(models, t)) for t in outputs}
    torch.onnx.register_custom_op_symbolic("aten::block_diag", symbolic_helper.parse_args("v")(_block_diag), opset)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer warnings about Python branches: the check below is the judge
            torch.onnx.export(
                graph,
                args,
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=list(INPUT_NAMES),
                output_names=outputs,
                dynamic_axes=axes,
                do_constant_folding=True,
                export_params=True,
            )
    except Exception as e:  # an operator torch cannot express in this opset, a tracing failure
        raise ExportFailed(
            f"torch cannot export this design to ONNX (opset {opset}): "
            f"{' '.join(str(e).split())[:300] or type(e).__name__}"
        ) from None
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::block_diag", opset)
        graph.eval()  # the exporter restores the mode it found; keep every model in eval mode
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    return [i.name for i in proto.graph.input], [o.name for o in proto.graph.output]


def _words_tokenizer(models: Sequence) -> str | None:
    """A tagging task of the export whose tokenizer reads words otherwise than the run's tokenizer reads a text (a
    byte-level BPE one marks each word's start: ``data.words.words_tokenizer``), else None."""
    words = [t for m in models for t in m.tasks if get_kind(m.run.records[t].kind).per_word]
    return words[0] if words and marks_word_starts(models[0].run.tokenizer()) else None


def describe(models: Sequence, inputs: list[str], outputs: list[str], opset: int, run_dir: Path | None) -> dict:
    """``export.json``: what a server needs around the graph (deterministic: no times, no check figures)."""
    first = models[0]
    info: RunInfo = first.run
    tasks = {}
    for m in models:
        for t in m.tasks:
            r = m.run.records[t]
            tasks[t] = {
                "kind": r.kind,
                "labels": list(m.run.labels[t]),
                "num_labels": int(m.tasks[t]),
                "text": list(r.text),
                "pair": r.pair,
                "step": int(m.run.step),
                "axes": list(get_kind(r.kind).output_axes),
                "record": r.as_dict(),
            }
            if t in m.run.scales:  # the graph gives z: the value in the task's units is z·std + mean
                tasks[t]["scale"] = dict(m.run.scales[t])
            if t in getattr(m, "per_candidate", ()):  # a row's k candidates: k consecutive input rows, a score each
                tasks[t]["sequences_per_row"] = int(m.tasks[t])
    steps = {m.run.step for m in models}
    return {
        "format": FORMAT,
        "version": VERSION,
        "graph": MODEL_FILE,
        "opset": opset,
        "inputs": inputs,
        "outputs": outputs,
        "dynamic_axes": {a: i for i, a in enumerate(INPUT_AXES)},
        "max_len": info.max_len,
        "eval_batch_size": info.eval_batch_size,
        "tokenizer": "tokenizer files beside the graph (AutoTokenizer.from_pretrained(DIR)); truncate to max_len, "
        "pairs longest-first; pad on the right (any id) where attention_mask is 0",
        "stride": info.stride,
        "words_tokenizer": WORDS_DIR if _words_tokenizer(models) else None,
        "words": "a tagging task's row of words: is_split_into_words=True, each word's start marked "
        f"(add_prefix_space=True for a byte-level BPE tokenizer: the one in {WORDS_DIR}/ where export.json's "
        "words_tokenizer names it); a row longer than max_len read in windows of max_len "
        "sharing `stride` tokens (return_overflowing_tokens=True, stride=stride; null: cut at max_len), each word "
        "predicted from its first sub-token in the window where it has the most context",
        "run": str(Path(run_dir if run_dir is not None else info.path).resolve()),
        "step": steps.pop() if len(steps) == 1 else None,
        "method": "separate" if len(models) > 1 else first.config.method,
        "family": first.family,
        "model": info.config.get("model"),
        "tasks": tasks,
    }


# ------------------------------------------------------------------------------------------------ the check


def check_rows(record, max_len: int, n: int = CHECK_ROWS) -> tuple[list[str], list[str] | None, str]:
    """A few of a task's own rows (its dev file; its train file when the dev rows are drawn from it; GLUE's dev
    TSV) as (texts, second texts or None, where from), plus one row longer than ``max_len`` tokens (truncated to
    it); the sample sentences when the files cannot be read any more."""
    kind = get_kind(record.kind)
    if kind.own_texts:  # a kind reading its rows' sequences itself: its own rows, and one of max_len tokens
        return _own_rows(record, max_len, n)
    texts: list[str] = []
    pairs: list[str] | None = [] if record.pair else None
    source = "sample sentences"
    try:
        if record.glue is not None:
            splits, _ = raw_splits(record, train=False)
            dev = next(iter(splits.values()))
            texts, pairs = list(dev.text_a[:n]), (list(dev.text_b[:n]) if record.pair else None)
            source = "dev rows"
        else:
            path = record.dev or record.train
            cols = read_columns(path, list(record.text)).values
            column = cols[record.text[0]]
            keep = [i for i, v in enumerate(column) if (isinstance(v, str) and v.strip()) or isinstance(v, list)][:n]
            texts = [cols[record.text[0]][i] for i in keep]
            if record.pair:
                pairs = [str(cols[record.text[1]][i] or "-") for i in keep]
            source = "dev rows" if record.dev else "train rows"
    except Exception:  # noqa: BLE001 — files moved, GLUE not here: the sample sentences check the graph as well
        texts, pairs = [], [] if record.pair else None
    if not texts:
        texts = list(SAMPLE_TEXTS)
        pairs = list(reversed(SAMPLE_TEXTS)) if record.pair else None
    long = " ".join(["word"] * (2 * max_len))  # the row of max_len tokens
    texts.append(texts[0] if kind.span_head else long)  # a span task: a short question, a long context
    if pairs is not None:
        pairs.append(long)
    return texts, pairs, source


def _own_rows(record, max_len: int, n: int) -> tuple[list, list | None, str]:
    """``check_rows`` of a task whose kind reads its rows' sequences itself (``Kind.texts``: a multiple-choice row's
    (context, candidate) pairs): a few of its rows, and the first again with a context of ``max_len`` tokens."""
    kind = get_kind(record.kind)
    path = record.dev or record.train
    wanted = kind.row_columns(record, path, lambda: column_names(path, record.format))
    cols = read_columns(path, wanted, record.format)
    firsts, seconds = kind.texts(record, cols)
    firsts, seconds = list(firsts[:n]), None if seconds is None else list(seconds[:n])
    long = " ".join(["word"] * (2 * max_len))
    firsts.append([long] * len(firsts[0]))
    if seconds is not None:
        seconds.append(list(seconds[0]))
    else:
        firsts[-1] = [f"{long} {c}" for c in firsts[0]]
    return firsts, seconds, "dev rows" if record.dev else "train rows"


def _flat(logits: np.ndarray, kind=None) -> np.ndarray:
    """Every logit of a task's rows in one float array: (n, C), a per-word task's rows of (words, C) joined, a span
    task's questions' windows' start and end logits joined (``kind.window_logits``)."""
    if kind is not None and kind.span_head:
        return kind.window_logits(logits)
    if logits.dtype == object:
        return np.concatenate([np.asarray(r, dtype=np.float64).reshape(-1) for r in logits] or [np.zeros(0)])
    return logits


def compare(models: Sequence, runner: OnnxRunner, n: int = CHECK_ROWS) -> tuple[float, float, int, str]:
    """onnxruntime (``runner``) against torch (``models``) on ``check_rows`` of every task: (max |Δ logit|, the
    allowed limit, rows compared, where the rows came from)."""
    worst, scale, rows, sources = 0.0, 0.0, 0, set()
    for m in models:
        for t in m.tasks:
            texts, pairs, source = check_rows(m.run.records[t], m.run.max_len, n)
            kind = get_kind(m.run.records[t].kind)
            ref = _flat(predict_texts(m, texts, pairs, tasks=[t])[t].logits, kind)
            got = _flat(predict_texts(runner, texts, pairs, tasks=[t])[t].logits, kind)
            worst = max(worst, float(np.nanmax(np.abs(got - ref))))  # NaN: a word no token predicts, in both
            scale = max(scale, float(np.nanmax(np.abs(ref))))
            rows += len(texts)
            sources.add(source)
    return worst, TOLERANCE * max(1.0, scale), rows, " and ".join(sorted(sources))


# ---------------------------------------------------------------------------------------------- the folder


def check_out(out: PathLike) -> Path:
    """``out`` may be new or an empty folder; ``ValueError`` in one line otherwise. A symbolic link is followed (the
    folder it names is what is checked, and written), one that names nothing is refused."""
    out = Path(out)
    if out.is_symlink():
        if not out.exists():
            raise ValueError(f"--out {out} is a symbolic link to {os.readlink(out)}, which does not exist")
        out = out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(
            f"--out {out} exists and is {'not a folder' if not out.is_dir() else 'not empty'}: give a new folder"
        )
    return out


def publish(tmp: Path, out: Path) -> None:
    """Move the finished folder ``tmp`` to ``out`` (new, or an empty folder: replaced) in one rename."""
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 → what mkdir would have given
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    os.replace(tmp, out)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def export_onnx(
    model, out: PathLike, *, opset: int = DEFAULT_OPSET, check: bool = True, run_dir: PathLike | None = None
) -> OnnxExport:
    """Export ``model`` (a ``MultiTaskModel.from_run``, or the list ``load_models`` gives for a separate-models
    folder) to the folder ``out`` (new or empty): ``model.onnx``, the tokenizer and ``export.json``. With ``check``
    (default) onnxruntime's logits are compared with torch's first and nothing is published when they differ by
    more than ``TOLERANCE`` (``ExportFailed``)."""
    models = _as_models(model)
    out = check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        inputs, outputs = write_graph(models, tmp / MODEL_FILE, opset)
        save_tokenizer(models[0].run, tmp)
        if words := _words_tokenizer(models):  # a tagging task's tokenizer, word starts marked: saved beside it
            save_tokenizer(models[0].run, tmp / WORDS_DIR, words)
        meta = describe(models, inputs, outputs, opset, Path(run_dir) if run_dir is not None else None)
        atomic_write_json(tmp / META_FILE, meta)
        result = OnnxExport(out, inputs, outputs, opset, sorted(p.name for p in tmp.iterdir()), meta=meta)
        if check:
            worst, limit, rows, source = compare(models, OnnxRunner(tmp, prune=False))
            if not worst <= limit:
                raise ExportFailed(
                    f"onnxruntime's logits differ from torch's by {worst:.3g} (> {limit:.3g}) on {rows} "
                    f"{source}: the export is not published"
                )
            result.max_abs_diff, result.check_rows, result.check_source = worst, rows, source
        publish(tmp, out)
        return result
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --------------------------------------------------------------------------------------------- serving


def is_onnx_export(folder: PathLike) -> bool:
    """``folder`` holds an ``export_onnx`` export (``model.onnx`` and ``export.json``)."""
    p = Path(folder)
    return (p / MODEL_FILE).is_file() and (p / META_FILE).is_file()


def read_export(folder: PathLike) -> dict:
    """``export.json`` of an ONNX export, checked; ``ValueError`` in one line otherwise."""
    p = Path(folder)
    if not (p / MODEL_FILE).is_file():
        raise ValueError(f"{p} holds no ONNX export (no {MODEL_FILE}): pals-export RUN --format onnx --out {p}")
    meta = read_json_file(p / META_FILE, "ONNX export description")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("tasks"), dict):
        raise ValueError(f"{p / META_FILE} is not a pals-export ONNX description")
    if int(meta.get("version", 0)) > VERSION:
        raise ValueError(f"{p / META_FILE} is of a newer pals-export (version {meta['version']}): update pals_core")
    return meta


class ExportedRun(RunInfo):
    """A ``RunInfo`` read from an ONNX export: the run's tasks, labels and max length; the tokenizer beside the
    graph; no torch weights."""

    def tokenizer(self):
        if not hasattr(self, "_tokenizer"):
            self._tokenizer = load_tokenizer(str(self.path))
        return self._tokenizer


def exported_run(folder: Path, meta: dict) -> ExportedRun:
    tasks = meta["tasks"]
    records = {t: TaskRecord.from_dict(d["record"]) for t, d in tasks.items()}
    config = {
        "max_len": int(meta["max_len"]),
        "stride": meta.get("stride"),  # absent (an export written before windows): long rows cut at max_len
        "truncate": meta.get("stride") is None,
        "eval_batch_size": int(meta.get("eval_batch_size") or 128),
        "tasks": list(tasks),
        "model": meta.get("model"),
        "adapter": {"method": meta.get("method")},
    }
    step = meta.get("step")
    return ExportedRun(
        folder,
        config,
        folder / MODEL_FILE,
        int(step) if step is not None else -1,
        records,
        {t: tuple(d["labels"]) for t, d in tasks.items()},
        {t: int(d["num_labels"]) for t, d in tasks.items()},
        {t: dict(d["scale"]) for t, d in tasks.items() if d.get("scale")},
    )


class OnnxRunner:
    """An ONNX export served by onnxruntime with a run's model's predict interface: ``tasks``, ``run`` (an
    ``ExportedRun``), ``runner(task=…)`` / ``predict_all`` / ``forward_mixed`` on token tensors, ``predict`` / ``predict_texts`` on texts
    (tokenised and batched as the run evaluated its dev sets, by the same code as the torch model's).

    onnxruntime runs every node of a graph whatever outputs are asked for, so a request for some of the tasks
    (``--tasks``, or the one-text and the pair tasks, which see different tokens) runs on a session of the graph cut
    down to those outputs (``prune``): the trunk and those tasks' parts only, as ``predict_all(tasks=…)`` does in
    torch. Sessions are built on first use, one per set of tasks, at most ``MAX_SESSIONS`` (then the whole graph's)."""

    MAX_SESSIONS = 4

    def __init__(
        self, folder: PathLike, *, device: str = "cpu", threads: int | None = None, prune: bool = True
    ) -> None:
        import onnx
        import onnxruntime as ort

        self.path = Path(folder)
        self.meta = read_export(self.path)
        self.graph = self.path / str(self.meta.get("graph") or MODEL_FILE)
        available = ort.get_available_providers()
        if device == "cuda" and "CUDAExecutionProvider" not in available:
            raise ValueError("--device cuda: this onnxruntime has no CUDA provider (onnxruntime-gpu serves on GPUs)")
        gpu = device in ("cuda", "auto") and "CUDAExecutionProvider" in available
        self.providers = (["CUDAExecutionProvider"] if gpu else []) + ["CPUExecutionProvider"]
        self.options = ort.SessionOptions()
        self.options.log_severity_level = 3
        if threads:
            self.options.intra_op_num_threads = threads
        self.prune = prune
        try:
            proto = onnx.load(str(self.graph), load_external_data=False)
        except Exception as e:  # a damaged or foreign file: onnx's own message, on one line
            raise ValueError(f"{self.graph} is not an ONNX graph: {' '.join(str(e).split())[:300]}") from None
        self.inputs = [i.name for i in proto.graph.input]
        self.outputs = [o.name for o in proto.graph.output]
        del proto
        self.run = exported_run(self.path, self.meta)
        self.tasks: dict[str, int] = dict(self.run.num_labels)
        missing = [t for t in self.tasks if t not in self.outputs]
        if missing:
            raise ValueError(f"{self.graph} has no output for task(s) {', '.join(missing)}")
        self._sessions: dict[tuple[str, ...], object] = {}  # built on first use: only the ones asked for
        import torch

        self._device = torch.zeros(0)  # the tensors fed in live on the CPU, whatever the provider

    def session(self, outputs: Sequence[str]):
        """The onnxruntime session for ``outputs``: the whole graph, or (``prune``) the graph cut down to them."""
        key = tuple(o for o in self.outputs if o in set(outputs))
        if key not in self._sessions and (not self.prune or len(self._sessions) >= self.MAX_SESSIONS):
            key = tuple(self.outputs)
        if key not in self._sessions:
            self._sessions[key] = self._load(key)
        return self._sessions[key]

    def _load(self, outputs: tuple[str, ...]):
        import onnxruntime as ort

        source: str | bytes = str(self.graph)
        if outputs != tuple(self.outputs):
            import onnx
            from onnx.utils import Extractor

            try:
                cut = Extractor(onnx.load(str(self.graph))).extract_model(self.inputs, list(outputs))
                source = cut.SerializeToString()
            except Exception:  # noqa: BLE001 — over protobuf's 2 GB, or a graph onnx cannot cut: the whole one serves
                source = str(self.graph)
        try:
            return ort.InferenceSession(source, self.options, providers=self.providers)
        except Exception as e:  # a damaged or foreign file: onnxruntime's own message, on one line
            raise ValueError(
                f"{self.graph} cannot be loaded by onnxruntime: {' '.join(str(e).split())[:300]}"
            ) from None

    @property
    def device_label(self) -> str:
        return "onnxruntime " + ("CUDA" if self.providers[0] == "CUDAExecutionProvider" else "CPU")

    def parameters(self):
        """For code that reads a model's device from its parameters: the inputs are CPU tensors."""
        return iter((self._device,))

    def eval(self) -> OnnxRunner:
        return self

    def _check_task(self, task: str) -> str:
        if task not in self.tasks:
            raise ValueError(f"unknown task {task!r} (tasks: {', '.join(self.tasks) or 'none'})")
        return task

    def logits(
        self, input_ids, attention_mask=None, token_type_ids=None, tasks: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """{task: (B, C_t) float32 logits} of one batch (torch tensors or arrays; attention_mask default: all ones,
        token_type_ids: zeros)."""
        names = list(self.tasks) if tasks is None else [self._check_task(t) for t in tasks]
        ids = _array(input_ids)
        given = {
            "input_ids": ids,
            "attention_mask": _array(attention_mask) if attention_mask is not None else np.ones_like(ids),
            "token_type_ids": _array(token_type_ids) if token_type_ids is not None else np.zeros_like(ids),
        }
        session = self.session(names)
        out = session.run(names, {i.name: given[i.name] for i in session.get_inputs()})
        return dict(zip(names, out))

    def __call__(self, task: str, input_ids, attention_mask=None, token_type_ids=None):
        """As ``MultiTaskModel(task=…)``: one task's logits tensor of a batch (what evaluation and a span task's
        questions run: the task's own path, as the run's dev scores were computed)."""
        import torch

        return torch.from_numpy(self.logits(input_ids, attention_mask, token_type_ids, [task])[task])

    def predict_all(
        self, input_ids, attention_mask=None, token_type_ids=None, tasks: Sequence[str] | None = None
    ) -> dict:
        """As ``MultiTaskModel.predict_all``: {task: logits tensor} of a batch; texts in: ``predict_texts``."""
        import torch

        if isinstance(input_ids, str) or (
            isinstance(input_ids, (list, tuple)) and input_ids and isinstance(input_ids[0], str)
        ):
            return self.predict_texts(input_ids, attention_mask, tasks=tasks)
        out = self.logits(input_ids, attention_mask, token_type_ids, tasks)
        k = {t: self.tasks[t] for t in out if get_kind(self.run.records[t].kind).per_candidate}
        return {t: torch.from_numpy(v.reshape(-1, k[t]) if t in k else v) for t, v in out.items()}

    def forward_mixed(self, input_ids, attention_mask=None, token_type_ids=None, *, tasks: Sequence[str]) -> list:
        """As ``MultiTaskModel.forward_mixed``: row i's logits for its own task ``tasks[i]`` (a multiple-choice task's
        row: one candidate's sequence, its score (1,))."""
        import torch

        if len(tasks) != len(input_ids):
            raise ValueError(f"{len(tasks)} task names for {len(input_ids)} rows")
        wanted = list(dict.fromkeys(self._check_task(t) for t in tasks))
        out = self.logits(input_ids, attention_mask, token_type_ids, wanted)
        return [torch.from_numpy(out[t][i]) for i, t in enumerate(tasks)]

    def predict(self, texts, task: str, text_pair=None, *, batch_size: int | None = None):
        return self.predict_texts(texts, text_pair, tasks=[task], batch_size=batch_size)[self._check_task(task)]

    def predict_texts(
        self, texts, text_pair=None, *, tasks: Sequence[str] | None = None, batch_size: int | None = None
    ) -> dict:
        return predict_texts(self, texts, text_pair, tasks=tasks, batch_size=batch_size)


def _array(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x, dtype=np.int64))


__all__ = [
    "CHECK_ROWS",
    "DEFAULT_OPSET",
    "ExportFailed",
    "ExportedRun",
    "INPUT_NAMES",
    "META_FILE",
    "MODEL_FILE",
    "OnnxExport",
    "OnnxRunner",
    "TOLERANCE",
    "check_opset",
    "check_out",
    "compare",
    "export_onnx",
    "is_onnx_export",
    "load_models",
    "read_export",
    "write_graph",
]
