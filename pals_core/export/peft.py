"""A run's LoRA / IA³ tasks as peft adapters (``--format peft``) and as merged transformers models (``--format hf``)
(docs/design.md "Using a trained run"): what someone who already serves Hugging Face models can load without this
project.

``export_peft(model, DIR)`` writes ``DIR/base`` — the trunk as trained (frozen or fine-tuned): a plain transformers
folder (config, safetensors, tokenizer), the one copy of the base weights in the export — and per task ``DIR/<task>``,
a peft adapter folder (``adapter_config.json``, ``adapter_model.safetensors``: the adapter, and the task's head in
``modules_to_save``), the tokenizer and a model card (``cards.peft_card``). The adapter's ``base_model_name_or_path``
is the base the run trained it on (``peft_base``): for a frozen trunk the checkpoint the run started from, as it names
itself (``origin.trunk_origin``: its hub id where it records one, else its absolute path), so that

    AutoPeftModelForSequenceClassification.from_pretrained(DIR/<task>, **settings)

loads it from any working directory wherever that base can be loaded (``settings``: ``load_settings``, the task's
labels — the base has no head); for a fine-tuned trunk, which no checkpoint holds, ``DIR/base`` by its absolute path.
Offline, or with the export moved,

    PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(DIR/base, **settings), DIR/<task>)

computes the run's logits for that task; each folder is loaded so, and compared with the run, before it is put in
place. Every tokenizer written says the run's max length (``model_max_length``).

``export_hf(model, DIR)`` writes per task ``DIR/<task>``, one ``AutoModelFor<head>`` folder (the kind's: ``Kind.hf_head``)
with the adapter merged into the weights (LoRA's B·A added, IA³'s scales folded into the rows / columns they scale),
the task's label names (``id2label``), its ``problem_type``, the tokenizer and a model card (``cards.hf_card``) giving
the ``pipeline(...)`` call that reproduces ``pals-predict``. A task trained on standardised targets (a regression:
``Kind.scale``) has its scale folded into its head's last Linear in both formats (W·std, b·std + mean): transformers
alone gives the value in the task's own units.

How the project's modules map onto peft's (``pals_core/methods/lora``, ``pals_core/methods/ia3``):

- LoRA: ``Q h += (α/d_s)·B_q A_q h`` and the same on V, no dropout, no bias, at the adapted layers →
  ``LoraConfig(r=d_s, lora_alpha=α, lora_dropout=0, bias="none")`` on the family's query and value Linears.
  ModernBERT projects Q, K and V with one Linear (``Wqkv``): there the two updates are one LoRA of rank 2·d_s,
  A = [A_q; A_v], B = [[B_q, 0], [0, 0], [0, B_v]] (the key third untouched), α doubled to keep α/d_s.
- IA³: ``K ← l_k ⊙ (W_k h + b_k)``, ``V ← l_v ⊙ (…)``, ``W_out (l_ff ⊙ g)`` → ``IA3Config`` on the key, value and
  FFN-output Linears, the latter in ``feedforward_modules`` (peft scales a feedforward module's input, any other's
  output — bias included, as the project does).
- The adapted layers (``location``: all / top / bottom / a list) are a regular expression over the full module names
  (``target_modules``), exact where a suffix list would also catch BERT's ``attention.output.dense``.
- The head: the family's ``…ForSequenceClassification`` head in transformers' names (``HEADS``); the project's
  shared pooler + Linear(d, C) of BERT is ``bert.pooler`` + ``classifier`` (the pooler in ``modules_to_save`` only
  when every task has its own), RoBERTa's / MPNet's pooler + Linear is ``classifier.dense`` + ``classifier.out_proj``.

Every other design (PALs, Houlsby, low-rank, LHUC, CA-MTL, the top stacks, shared, …) — and a placement peft would
get wrong (DeBERTa's shared relative-position projections) — raises ``ExportRefused`` naming ONNX instead. Each
exported task is run once on a small batch against the run's own model before it is written: a mismatch is an error,
never a folder.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import torch
from torch import nn

from ..adapters.base import layer_key
from ..budget.methods import trunk_frozen
from ..kinds import DEFAULT_KIND, get_kind
from ..methods.registry import get_method
from . import ExportFailed, ExportRefused, save_tokenizer
from .cards import LOAD_REPORT, hf_card, peft_card
from .origin import trunk_origin

PEFT_METHODS = ("lora", "ia3")
ONNX = "export it with `pals-export --format onnx` instead"
ADAPTER = "default"  # peft's adapter name
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Places:
    """Where the project's hooks act inside one layer of a family's transformers model: module paths relative to
    the layer (``adapt_query`` / ``adapt_key`` / ``adapt_value`` act on these Linears' outputs, ``adapt_ffn_activation``
    on ``ffn_out``'s input)."""

    query: str
    key: str
    value: str
    ffn_out: str
    fused: bool = False  # one Linear projects Q, K and V (ModernBERT's Wqkv): each is a third of its output


BERT_PLACES = Places("attention.self.query", "attention.self.key", "attention.self.value", "output.dense")
PLACES: dict[str, Places] = {
    "bert": BERT_PLACES,
    "roberta": BERT_PLACES,
    "electra": BERT_PLACES,
    "mpnet": Places("attention.attn.q", "attention.attn.k", "attention.attn.v", "output.dense"),
    "distilbert": Places("attention.q_lin", "attention.k_lin", "attention.v_lin", "ffn.lin2"),
    "deberta-v2": Places(
        "attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj", "output.dense"
    ),
    "modernbert": Places("attn.Wqkv", "attn.Wqkv", "attn.Wqkv", "mlp.Wo", fused=True),
}

# families peft cannot express, and why (``check_exportable``)
UNMAPPED: dict[str, str] = {
    "albert": "ALBERT runs one set of layer weights at every layer, so peft would put one adapter on those shared "
    "Linears, applied at every layer alike, while the run trained its own adapter at each adapted layer",
}

Head = tuple[dict[str, nn.Module], list[str]]  # (transformers module name → the project's module, modules_to_save)


def _pooler(model, task: str) -> nn.Module:
    return model.poolers[task] if model.poolers is not None else model.trunk.pooler


def _token_head(model, task: str, prefix: str) -> Head:
    """A tagging task's head: ``…ForTokenClassification``'s ``classifier`` Linear(d, C) on every token (no pooler)."""
    return {"classifier": model.heads[task]}, ["classifier"]


# a tagging task's head in transformers' names, where the family's ``…ForTokenClassification`` differs from
# ``_token_head`` (``Trunk.new_token_head``)
TOKEN_HEADS: dict[str, Callable[..., Head]] = {
    "modernbert": lambda m, t, p: (
        {"head.dense": m.heads[t].dense, "head.norm": m.heads[t].norm, "classifier": m.heads[t].out},
        ["head", "classifier"],
    ),
}


def _span_head(model, task: str, prefix: str) -> Head:
    """A span task's head: ``…ForQuestionAnswering``'s ``qa_outputs`` Linear(d, 2) on every token."""
    return {"qa_outputs": model.heads[task]}, ["qa_outputs"]


# a span task's head in transformers' names, where the family's ``…ForQuestionAnswering`` differs from ``_span_head``
SPAN_HEADS: dict[str, Callable[..., Head]] = {"modernbert": TOKEN_HEADS["modernbert"]}


def _head(model, task: str, prefix: str) -> Head:
    """The task's head in transformers' names: the family's sequence head, its token head (a per-word task), its
    multiple-choice head (a per-candidate task) or its question-answering head (a span task)."""
    family = model.trunk.family
    if task in model.spans:
        return SPAN_HEADS.get(family, _span_head)(model, task, prefix)
    if task in model.per_word:
        return TOKEN_HEADS.get(family, _token_head)(model, task, prefix)
    if task in model.per_candidate:
        return CHOICE_HEADS.get(family, HEADS[family])(model, task, prefix)
    return HEADS[family](model, task, prefix)


def _auto(model, task: str, library: str = "transformers"):
    """transformers' ``AutoModelFor…`` (or peft's ``AutoPeftModelFor…``) class of the task's kind's head."""
    from importlib import import_module

    head = get_kind(_run(model).records[task].kind).hf_head
    return getattr(
        import_module(library), f"AutoModelFor{head}" if library == "transformers" else f"AutoPeftModelFor{head}"
    )


def _bert_head(model, task: str, prefix: str) -> Head:
    """Shared pooler + Linear(d, C): the pooler is the trunk's own (``DIR/base``) unless every task has one."""
    parts = {"classifier": model.heads[task]}
    if model.poolers is not None:
        parts[f"{prefix}.pooler"] = model.poolers[task]
    return parts, list(parts)


def _tanh_head(model, task: str, prefix: str) -> Head:
    """RoBERTa / MPNet: pooler (dense + tanh on the first token) + Linear = the family's classification head."""
    return {"classifier.dense": _pooler(model, task).dense, "classifier.out_proj": model.heads[task]}, ["classifier"]


HEADS: dict[str, Callable[..., Head]] = {
    "bert": _bert_head,
    "roberta": _tanh_head,
    "mpnet": _tanh_head,
    "electra": lambda m, t, p: (
        {"classifier.dense": m.heads[t].dense, "classifier.out_proj": m.heads[t].out},
        ["classifier"],
    ),
    "distilbert": lambda m, t, p: (
        {"pre_classifier": m.heads[t].dense, "classifier": m.heads[t].out},
        ["pre_classifier", "classifier"],
    ),
    "deberta-v2": lambda m, t, p: (
        {"pooler.dense": m.heads[t].dense, "classifier": m.heads[t].out},
        ["pooler", "classifier"],
    ),
    "modernbert": lambda m, t, p: (
        {"head.dense": m.heads[t].dense, "head.norm": m.heads[t].norm, "classifier": m.heads[t].out},
        ["head", "classifier"],
    ),
}


# a multiple-choice task's head in transformers' names, where the family's ``…ForMultipleChoice`` differs from its
# ``HEADS`` entry (``Trunk.new_choice_head``): RoBERTa's and MPNet's keep the base model's pooler + ``classifier``
# Linear(d, 1), ELECTRA's is ``sequence_summary.summary`` + ``classifier``
CHOICE_HEADS: dict[str, Callable[..., Head]] = {
    "roberta": _bert_head,
    "mpnet": _bert_head,
    "electra": lambda m, t, p: (
        {"sequence_summary.summary": m.heads[t].dense, "classifier": m.heads[t].out},
        ["sequence_summary", "classifier"],
    ),
}


# --- what peft can express ---------------------------------------------------------------------------------------


def _deberta_refusal(config, method: str) -> str | None:
    """DeBERTa with ``share_att_key`` projects the relative positions with query_proj (p2c) and key_proj (c2p) too;
    peft would adapt those projections as well, the run adapted the tokens' only."""
    if not getattr(config, "relative_attention", False) or not getattr(config, "share_att_key", False):
        return None
    types = config.pos_att_type
    types = [t.strip() for t in types.lower().split("|")] if isinstance(types, str) else list(types or ())
    proj, kind = {"lora": ("query_proj", "p2c"), "ia3": ("key_proj", "c2p")}[method]
    if kind not in types:
        return None
    return (
        f"this DeBERTa shares {proj} between the tokens and the relative positions (share_att_key, {kind}): "
        f"peft would adapt both, the run adapted the tokens' only"
    )


def check_exportable(model) -> None:
    """``ExportRefused`` (one line: the reason, and ONNX) unless peft can express ``model``'s design exactly."""
    method = model.config.method
    if method not in PEFT_METHODS:
        title = get_method(method).title
        raise ExportRefused(
            f"the {method} design ({title}) has no peft equivalent (peft and merged transformers "
            f"folders carry LoRA and IA³ only): {ONNX}"
        )
    family = model.trunk.family
    if family not in PLACES:
        why = UNMAPPED.get(family, "its layers have no peft mapping here")
        raise ExportRefused(f"the {family} family cannot be exported to peft: {why}: {ONNX}")
    reason = _deberta_refusal(model.bert.config, method) if family == "deberta-v2" else None
    if reason:
        raise ExportRefused(f"{reason}: {ONNX}")
    info = getattr(model, "run", None)
    for task in model.tasks if info is not None else ():
        why = get_kind(info.records[task].kind).export_refusal("peft")
        if why:
            raise ExportRefused(f"task {task!r}: {why}")


def _run(model):
    info = getattr(model, "run", None)
    if info is None:
        raise ValueError("export needs a run's model (MultiTaskModel.from_run): its label names and tokenizer")
    return info


def _layers_path(model) -> str:
    """The trunk's layer list inside its transformers model (``encoder.layer``, ``transformer.layer``, ``layers``)."""
    return next(name for name, module in model.bert.named_modules() if module is model.trunk.layers)


def peft_config(model, task: str, prefix: str, *, head: bool = True):
    """The ``LoraConfig`` / ``IA3Config`` of ``model``'s design for one task (``prefix``: the transformers
    ``…ForSequenceClassification``'s ``base_model_prefix``). ``head``: a ``SEQ_CLS`` adapter that carries the task's
    head in ``modules_to_save``; False: the adapter layers only (what merging needs — peft 0.21's
    ``merge_and_unload`` fails on a head module holding submodules, RoBERTa's ``classifier``)."""
    from peft import IA3Config, LoraConfig

    places = PLACES[model.trunk.family]
    adapter = model.adapters[task]
    scope = rf"{re.escape(prefix)}\.{re.escape(_layers_path(model))}\.({'|'.join(str(i) for i in adapter.layers)})\."

    def modules(*names: str) -> str:
        return scope + "(" + "|".join(re.escape(n) for n in dict.fromkeys(names)) + ")"

    _, save = _head(model, task, prefix)
    info = getattr(model, "run", None)  # a model built in memory (benchmarks/bench_serving.py): the default kind
    task_type = get_kind(info.records[task].kind if info is not None else DEFAULT_KIND).peft_task_type
    common = {"task_type": task_type, "modules_to_save": list(save)} if head else {}
    if model.config.method == "lora":
        s = model.config.d_s
        alpha = float(model.config.lora_alpha if model.config.lora_alpha is not None else s)
        k = 2 if places.fused else 1  # one LoRA of rank 2·d_s on the fused projection (module docstring)
        alpha *= k
        return LoraConfig(
            r=k * s,
            lora_alpha=int(alpha) if alpha.is_integer() else alpha,
            lora_dropout=0.0,
            bias="none",
            fan_in_fan_out=False,
            target_modules=modules(places.query, places.value),
            **common,
        )
    return IA3Config(
        target_modules=modules(places.key, places.value, places.ffn_out),
        feedforward_modules=modules(places.ffn_out),
        fan_in_fan_out=False,
        **common,
    )


# --- building one task's transformers model ------------------------------------------------------------------------


def unit_scale(model, task: str) -> dict | None:
    """The task's target standardisation (a regression's mean and std, ``Kind.scale``) that an export folds into
    its head; None for a task trained on its targets as read, or whose kept scale is no standardisation (a span
    task's: whether "no answer" is a prediction)."""
    scale = _run(model).scales.get(task)
    return scale if scale and "std" in scale else None


def _problem_type(record) -> str:
    return get_kind(record.kind).problem_type


def task_config(model, task: str):
    """The trunk's transformers config for ``task``'s ``…ForSequenceClassification``: C_t outputs named by the
    task's labels (a kind without named labels: the task's name), its kind's ``problem_type``."""
    info = _run(model)
    names = info.labels[task] or get_kind(info.records[task].kind).output_names or (task,)
    if len(names) != model.tasks[task]:
        raise ValueError(f"task {task!r}: {len(names)} label names for {model.tasks[task]} outputs")
    config = copy.deepcopy(model.bert.config)
    config.id2label = dict(enumerate(names))
    config.label2id = {n: i for i, n in enumerate(names)}
    config.problem_type = _problem_type(info.records[task]) or None  # a tagging task: none
    return config


def _hf_model(model, task: str) -> nn.Module:
    """``AutoModelForSequenceClassification`` (a tagging task: ``…ForTokenClassification``) of the task with the
    trunk's and the head's trained weights."""
    hf = _auto(model, task).from_config(task_config(model, task), dtype=torch.float32).eval()
    missing, unexpected = hf.base_model.load_state_dict(model.bert.state_dict(), strict=False)
    unexpected = [k for k in unexpected if not k.startswith("pooler.")]  # the family's head holds its own dense
    if missing or unexpected:
        raise RuntimeError(
            f"the {model.trunk.family} trunk does not fit {type(hf).__name__}: missing "
            f"{missing[:3]}, unexpected {unexpected[:3]}"
        )
    parts, _ = _head(model, task, hf.base_model_prefix)
    for name, module in parts.items():
        hf.get_submodule(name).load_state_dict(module.state_dict())
    scale = unit_scale(model, task)
    if scale:  # trained on standardised targets: the last Linear gives z·std + mean, the value in the task's units
        out = next(hf.get_submodule(n) for n in parts if getattr(hf.get_submodule(n), "out_features", 0) == 1)
        with torch.no_grad():
            out.weight.mul_(scale["std"])
            out.bias.mul_(scale["std"]).add_(scale["mean"])
    return hf


def _set_lora(layer: nn.Module, a: torch.Tensor, b: torch.Tensor) -> None:
    layer.lora_A[ADAPTER].weight.copy_(a)
    layer.lora_B[ADAPTER].weight.copy_(b)


def _set_ia3(layer: nn.Module, scale: torch.Tensor) -> None:
    p = layer.ia3_l[ADAPTER]
    p.copy_(scale.reshape(p.shape))


def _fill_adapter(model, task: str, hf: nn.Module) -> None:
    """Copy the task's LoRA matrices / IA³ vectors into the peft layers injected in ``hf``."""
    places = PLACES[model.trunk.family]
    adapter = model.adapters[task]
    root = f"{hf.base_model_prefix}.{_layers_path(model)}"
    with torch.no_grad():
        for row, i in enumerate(adapter.layers):
            layer = hf.get_submodule(f"{root}.{i}")
            at = layer.get_submodule
            if model.config.method == "lora":
                q, v = adapter.query[layer_key(i)], adapter.value[layer_key(i)]
                if places.fused:
                    d, s = q.B.weight.shape
                    b = q.B.weight.new_zeros(3 * d, 2 * s)
                    b[:d, :s], b[2 * d :, s:] = q.B.weight, v.B.weight
                    _set_lora(at(places.query), torch.cat([q.A.weight, v.A.weight]), b)
                else:
                    _set_lora(at(places.query), q.A.weight, q.B.weight)
                    _set_lora(at(places.value), v.A.weight, v.B.weight)
            else:
                k, v = adapter.key_scales[row], adapter.value_scales[row]
                if places.fused:
                    _set_ia3(at(places.key), torch.cat([torch.ones_like(k), k, v]))
                else:
                    _set_ia3(at(places.key), k)
                    _set_ia3(at(places.value), v)
                _set_ia3(at(places.ffn_out), adapter.ffn_scales[row])


def peft_model(model, task: str, *, head: bool = True):
    """One task as a ``PeftModelForSequenceClassification`` (eval mode) over its transformers model (``head``: see
    ``peft_config``; the transformers model holds the trained head either way)."""
    from peft import get_peft_model

    hf = _hf_model(model, task)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)  # peft 0.21 asks transformers 5 a deprecated name
        pm = get_peft_model(hf, peft_config(model, task, hf.base_model_prefix, head=head))
    config = pm.peft_config[ADAPTER]
    if config.modules_to_save:  # peft appends its own "classifier", "score": keep each name once
        config.modules_to_save = list(dict.fromkeys(config.modules_to_save))
    _fill_adapter(model, task, hf)
    return pm.eval()


def check_logits(model, task: str, exported: nn.Module, what: str) -> None:
    """Run the exported model and the run's model on one small batch (random tokens, a padded row); any difference
    beyond float rounding is a bug in the mapping: ``ExportFailed`` (a ``RuntimeError``; ``pals-export`` exits 1),
    and the task's folder is not written."""
    g = torch.Generator().manual_seed(0)
    shape = (2, model.tasks[task], 12) if task in model.per_candidate else (2, 12)  # (rows, candidates, tokens)
    ids = torch.randint(0, model.trunk.vocab_size, shape, generator=g)
    mask = torch.ones_like(ids)
    mask[1, ..., 8:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask}
    if getattr(exported.config, "type_vocab_size", 0) > 1:
        inputs["token_type_ids"] = torch.randint(0, 2, ids.shape, generator=g)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            want = model(task, **{k: v.to(device) for k, v in inputs.items()}).float().cpu()
            out = exported(**inputs)
            if hasattr(out, "start_logits"):  # a question-answering head: its start and end logits, (B, n, 2)
                got = torch.stack([out.start_logits, out.end_logits], dim=-1).float()
            else:
                got = out.logits.float()
        if want.ndim == 3:  # a tagging or span task: every token's logits, the padding's aside
            keep = inputs["attention_mask"].bool()
            want, got = want[keep], got[keep]
        scale = unit_scale(model, task)
        if scale:  # the export folds the task's target scale into its head: compare in the task's units
            want = want.double() * scale["std"] + scale["mean"]
            got = got.double()
    finally:
        model.train(was_training)
    err = (want - got).abs().max().item()
    if not err <= 1e-4 * max(1.0, want.abs().max().item()):
        raise ExportFailed(f"the {what} export of task {task!r} differs from the run's logits by {err:.2e}")


# --- writing ------------------------------------------------------------------------------------------------------


def _write_dir(path: Path, fill: Callable[[str], None]) -> None:
    """Fill a temporary folder beside ``path``, then put it in ``path``'s place (a reader never sees half a folder;
    a failure leaves the previous one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    old = None
    try:
        fill(tmp)
        if path.exists():
            old = tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent)
            os.replace(path, os.path.join(old, path.name))
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not path.exists():
            os.replace(os.path.join(old, path.name), path)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _no_load_report(record) -> bool:
    return LOAD_REPORT not in record.getMessage()


@contextmanager
def _quiet() -> Iterator[None]:
    """While exporting: no transformers progress bars ("Writing model shards", "Loading weights": the CLI reports
    what it wrote) and no load report (the check below loads each task's head onto a base that holds none, which
    transformers reports MISSING: ``cards.QUIET_LOAD_REPORT``); peft's deprecation notice to transformers 5 aside."""
    from transformers.utils import logging

    shown = logging.is_progress_bar_enabled()
    reports = logging.get_logger("transformers.modeling_utils")
    logging.disable_progress_bar()
    reports.addFilter(_no_load_report)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
            yield
    finally:
        reports.removeFilter(_no_load_report)
        if shown:
            logging.enable_progress_bar()


def _save_with_tokenizer(model, module, task: str | None = None) -> Callable[[str], None]:
    def fill(folder: str) -> None:
        module.save_pretrained(folder)
        save_tokenizer(_run(model), folder, task)

    return fill


def load_settings(model, task: str) -> dict:
    """``from_pretrained``'s settings that build ``task``'s head on a base without one — its labels (``id2label``
    gives ``num_labels``) and problem type — in float32, as the run computed (a checkpoint stored in half precision
    loads in it by default)."""
    config = task_config(model, task)
    out = {"id2label": dict(config.id2label), "label2id": dict(config.label2id)}
    if config.problem_type:
        out["problem_type"] = config.problem_type
    return {**out, "dtype": "float32"}


@dataclass(frozen=True)
class PeftBase:
    """The base every adapter of a peft export names (``base_model_name_or_path``, ``revision``), and its copy in the
    export (``DIR/base``, absolute)."""

    name: str
    revision: str | None
    hub_id: str | None  # the name, where it is a hub id (the model card's ``base_model``)
    copy: Path
    is_checkpoint: bool  # the name is the checkpoint the run started from (else: the copy itself)
    about: str  # what the named base is, in words (the model card says it)


def _same_trunk(model, folder: str) -> bool:
    """Whether the checkpoint ``folder`` holds the run's trunk weight for weight (a frozen trunk: it should; a
    pooler the checkpoint lacks was drawn at random by the run, and then it does not)."""
    from transformers import AutoModel

    try:
        loaded = AutoModel.from_pretrained(folder, dtype=torch.float32, local_files_only=True).state_dict()
    except (OSError, ValueError):  # moved or changed since the run read it: the export's own copy is named
        return False
    ours = model.bert.state_dict()
    return loaded.keys() == ours.keys() and all(torch.equal(loaded[k], ours[k].cpu()) for k in ours)


def peft_base(model, out: Path) -> PeftBase:
    """What a peft export's adapters name as their base: for a frozen trunk, the checkpoint the run started from,
    as it names itself (``origin.trunk_origin``: its hub id and revision where it records them, else its absolute
    path) — after checking it holds the run's trunk; for a fine-tuned trunk (or random weights) the trunk as trained,
    ``out/base``, by its absolute path. Either way ``out/base`` holds the trunk as trained, the one copy in the
    export (the model card's offline call loads it)."""
    copy = out.resolve() / "base"
    origin = trunk_origin(_run(model).config.get("model"))
    if not trunk_frozen(model.config):
        about = "the trunk as this run fine-tuned it, which no checkpoint holds"
    elif origin.path is None:
        about = "the run's randomly initialised trunk (pals-train --model tiny), which no checkpoint holds"
    elif not _same_trunk(model, origin.path):
        about = (
            f"the trunk as the run built it: {origin.path} does not hold it weight for weight (a part the checkpoint "
            "lacks, such as a pooler, was drawn at random; or it changed since)"
        )
    else:
        about = "the checkpoint the run started from: the run kept its trunk frozen, so the adapter was trained on it"
        return PeftBase(origin.name, origin.revision, origin.hub_id, copy, True, about)
    return PeftBase(str(copy), None, None, copy, False, about)


def _check_folder(model, task: str, folder: str, base: Path) -> None:
    """Load the written adapter ``folder`` as the model card's offline call does (``base``: the export's copy of the
    trunk) and compare its logits with the run's (``check_logits``): what is written is what is checked."""
    from peft import PeftModel

    hf = _auto(model, task).from_pretrained(str(base), **load_settings(model, task))
    loaded = PeftModel.from_pretrained(hf, folder).eval()
    if task in model.spans:  # as its card runs it: peft's QUESTION_ANS forward drops token_type_ids
        loaded = loaded.get_base_model()
    check_logits(model, task, loaded, "peft")


def export_peft(model, out: PathLike) -> Path:
    """``out/base`` (the trunk as trained, plain transformers, with the tokenizer: the one copy of the base weights)
    and one peft adapter folder per task ``out/<task>`` (the adapter, the task's head in ``modules_to_save``, the
    tokenizer and a model card: ``cards.peft_card``), each naming its base as ``peft_base`` says and checked by
    loading it back before it is put in place. ``ExportRefused`` for a design peft cannot express."""
    check_exportable(model)
    info = _run(model)
    out = Path(out)
    if "base" in model.tasks:
        raise ValueError(f"a task named 'base' would overwrite {out / 'base'} (the trunk): use --format hf or onnx")
    with _quiet():
        base = peft_base(model, out)
        _write_dir(out / "base", _save_with_tokenizer(model, model.bert))
        for task in model.tasks:  # one task's model in memory at a time (each holds a copy of the trunk)
            pm = peft_model(model, task)
            config = pm.peft_config[ADAPTER]
            config.base_model_name_or_path, config.revision = base.name, base.revision
            config.modules_to_save = _head(model, task, pm.get_base_model().base_model_prefix)[1]  # not peft's "score"
            settings = load_settings(model, task)

            def fill(folder: str, pm=pm, task=task, settings=settings) -> None:
                pm.save_pretrained(folder, save_embedding_layers=False)  # embeddings untouched: no look-up of the base
                save_tokenizer(info, folder, task)
                card = peft_card(model, task, str((out / task).resolve()), base, settings)
                Path(folder, "README.md").write_text(card, encoding="utf-8")
                _check_folder(model, task, folder, base.copy)

            _write_dir(out / task, fill)
            del pm
    return out


def export_hf(model, out: PathLike) -> Path:
    """One merged ``AutoModelFor<head>`` folder per task, ``out/<task>`` (the tokenizer, a model card:
    ``cards.hf_card``), checked by loading it back before it is put in place. ``ExportRefused`` for a design peft
    cannot express."""
    check_exportable(model)
    _run(model)
    out = Path(out)
    with _quiet():
        for task in model.tasks:
            merged = peft_model(model, task, head=False).merge_and_unload()

            def fill(folder: str, merged=merged, task=task) -> None:
                _save_with_tokenizer(model, merged, task)(folder)
                Path(folder, "README.md").write_text(hf_card(model, task, str((out / task).resolve())), "utf-8")
                check_logits(model, task, _auto(model, task).from_pretrained(folder).eval(), "hf")

            _write_dir(out / task, fill)
    return out


__all__ = [
    "CHOICE_HEADS",
    "HEADS",
    "PeftBase",
    "PEFT_METHODS",
    "SPAN_HEADS",
    "TOKEN_HEADS",
    "PLACES",
    "Places",
    "check_exportable",
    "export_hf",
    "export_peft",
    "load_settings",
    "peft_base",
    "peft_config",
    "peft_model",
    "task_config",
    "unit_scale",
]
