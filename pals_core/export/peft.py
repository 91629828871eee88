"""A run's LoRA / IA³ tasks as peft adapters (``--format peft``) and as merged transformers models (``--format hf``)
(docs/design.md "Using a trained run"): what someone who already serves Hugging Face models can load without this
project.

``export_peft(model, DIR)`` writes ``DIR/base`` — the trunk as trained (fine-tuned or frozen): a plain transformers
folder (config, safetensors, tokenizer) — and per task ``DIR/<task>``, a peft adapter folder (``adapter_config.json``,
``adapter_model.safetensors``) whose ``modules_to_save`` hold the task's head, so that

    PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(DIR/base, num_labels=C), DIR/<task>)

computes the run's logits for that task, and so does ``AutoPeftModelForSequenceClassification.from_pretrained(".")``
run inside ``DIR/<task>``: the adapter names its base relative to its folder (``../base``; when the tasks' label sets
differ, ``base``: the task's own copy of the trunk, whose ``config.json`` builds its head — ``num_labels``,
``id2label``), so a moved or copied export keeps it; the folder holds the tokenizer and a model card naming that base.
Every tokenizer written says the run's max length (``model_max_length``).

``export_hf(model, DIR)`` writes per task ``DIR/<task>``, one
``AutoModelForSequenceClassification`` folder with the adapter merged into the weights (LoRA's B·A added, IA³'s
scales folded into the rows / columns they scale), the task's label names (``id2label``), its ``problem_type`` and the
tokenizer. A task trained on standardised targets (a regression: ``Kind.scale``) has its scale folded into its head's
last Linear in both formats (W·std, b·std + mean): transformers alone gives the value in the task's own units.

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
from ..kinds import DEFAULT_KIND, get_kind
from ..methods.registry import get_method
from . import ExportFailed, ExportRefused, save_tokenizer

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


def _head(model, task: str, prefix: str) -> Head:
    """The task's head in transformers' names: the family's sequence head, or its token head (a per-word task)."""
    family = model.trunk.family
    if task in model.per_word:
        return TOKEN_HEADS.get(family, _token_head)(model, task, prefix)
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


def _problem_type(record) -> str:
    return get_kind(record.kind).problem_type


def task_config(model, task: str):
    """The trunk's transformers config for ``task``'s ``…ForSequenceClassification``: C_t outputs named by the
    task's labels (a kind without named labels: the task's name), its kind's ``problem_type``."""
    info = _run(model)
    names = info.labels[task] or (task,)
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
    scale = _run(model).scales.get(task)
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
    ids = torch.randint(0, model.trunk.vocab_size, (2, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask}
    if getattr(exported.config, "type_vocab_size", 0) > 1:
        inputs["token_type_ids"] = torch.randint(0, 2, ids.shape, generator=g)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            want = model(task, **{k: v.to(device) for k, v in inputs.items()}).float().cpu()
            got = exported(**inputs).logits.float()
        if want.ndim == 3:  # a tagging task: every token's logits, the padding's aside
            keep = inputs["attention_mask"].bool()
            want, got = want[keep], got[keep]
        scale = _run(model).scales.get(task)
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


@contextmanager
def _quiet() -> Iterator[None]:
    """No transformers progress bars ("Writing model shards") while exporting: the CLI reports what it wrote."""
    from transformers.utils import logging

    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            logging.enable_progress_bar()


def _save_with_tokenizer(model, module, task: str | None = None) -> Callable[[str], None]:
    def fill(folder: str) -> None:
        module.save_pretrained(folder)
        save_tokenizer(_run(model), folder, task)

    return fill


def _labels(model, task: str) -> dict:
    """The config fields that make ``AutoModelForSequenceClassification`` build ``task``'s head: its labels (their
    count is ``num_labels``) and problem type."""
    config = task_config(model, task)
    return {"id2label": config.id2label, "label2id": config.label2id, "problem_type": config.problem_type}


def _trained_from(model) -> str:
    info = _run(model)
    pretrained = info.config.get("model") or "the embedded MiniLM"
    frozen = model.config.freeze_trunk
    return (
        f"the pretrained {pretrained}, frozen (not trained by the run)"
        if frozen
        else f"{pretrained} as the run fine-tuned it (not the pretrained checkpoint)"
    )


def _model_card(model, task: str, base: str) -> str:
    """The adapter folder's README.md: the base it was trained on (the exported trunk), how to load it."""
    info = _run(model)
    method = {"lora": "LoRA", "ia3": "IA³"}[model.config.method]
    auto = f"AutoPeftModelFor{get_kind(info.records[task].kind).hf_head}"
    return (
        "---\n"
        f"base_model: {base}\n"
        "library_name: peft\n"
        f"tags:\n- {model.config.method}\n- pals-export\n"
        "---\n\n"
        f"# {task}\n\n"
        f"A {method} adapter and the head of task `{task}` ({info.records[task].kind}, "
        f"{model.tasks[task]} output{'s' if model.tasks[task] != 1 else ''}), step {info.step} of the pals-train run "
        f"`{info.path}`.\n\n"
        f"Base model: `{base}` (relative to this folder) — the trunk the run trained this adapter on: "
        f"{_trained_from(model)}.\n\n"
        "```python\n"
        f"from peft import {auto}\n"
        "from transformers import AutoTokenizer\n\n"
        "# peft resolves the base path against the working directory: run this from inside this folder\n"
        f'model = {auto}.from_pretrained(".")\n'
        f'tokenizer = AutoTokenizer.from_pretrained(".")  # truncates to the run\'s max length, {info.max_len}\n'
        "```\n"
    )


def export_peft(model, out: PathLike) -> Path:
    """``out/base`` (the trained trunk, plain transformers, with the tokenizer) and one peft adapter folder per task
    ``out/<task>`` (module docstring). ``ExportRefused`` for a design peft cannot express."""
    check_exportable(model)
    _run(model)
    out = Path(out)
    base = out / "base"
    if "base" in model.tasks:
        raise ValueError(f"a task named 'base' would overwrite {base} (the trunk): use --format hf or onnx")
    labels = {t: _labels(model, t) for t in model.tasks}
    first = next(iter(labels.values()))
    shared = all(v == first for v in labels.values())
    trunk = copy.deepcopy(model.bert.config)
    if shared:  # every task's head: DIR/base's config says its labels (AutoPeftModel… builds the head from it)
        trunk.update(first)
    with _quiet():
        _write_dir(base, _save_with_tokenizer(model, _with_config(model.bert, trunk)))
        for task in model.tasks:  # one task's model in memory at a time (each holds a copy of the trunk)
            pm = peft_model(model, task)
            check_logits(model, task, pm, "peft")
            # the base as a path relative to the adapter folder (a moved or copied export keeps it): DIR/base when
            # every task's head has the same labels, else the task's own base beside its adapter (DIR/<task>/base)
            rel = "../base" if shared else "base"
            pm.peft_config[ADAPTER].base_model_name_or_path = rel

            def fill(folder: str, pm=pm, task=task, rel=rel) -> None:
                with warnings.catch_warnings():  # peft looks for the base from the working directory: not here
                    warnings.filterwarnings("ignore", message="Could not find a config file in")
                    pm.save_pretrained(folder)
                if not shared:
                    own = copy.deepcopy(model.bert.config)
                    own.update(labels[task])
                    _save_with_tokenizer(model, _with_config(model.bert, own), task)(os.path.join(folder, rel))
                save_tokenizer(_run(model), folder, task)
                Path(folder, "README.md").write_text(_model_card(model, task, rel), encoding="utf-8")

            _write_dir(out / task, fill)
    return out


class _with_config:
    """``module`` saved with another config (its weights as they are): ``save_pretrained`` only."""

    def __init__(self, module, config) -> None:
        self.module, self.config = module, config

    def save_pretrained(self, folder: str) -> None:
        kept = self.module.config
        self.module.config = self.config
        try:
            self.module.save_pretrained(folder)
        finally:
            self.module.config = kept


def export_hf(model, out: PathLike) -> Path:
    """One merged ``AutoModelForSequenceClassification`` folder per task, ``out/<task>`` (with the tokenizer).
    ``ExportRefused`` for a design peft cannot express."""
    check_exportable(model)
    _run(model)
    out = Path(out)
    with _quiet():
        for task in model.tasks:
            merged = peft_model(model, task, head=False).merge_and_unload()
            check_logits(model, task, merged, "hf")
            _write_dir(out / task, _save_with_tokenizer(model, merged, task))
    return out


__all__ = [
    "HEADS",
    "PEFT_METHODS",
    "TOKEN_HEADS",
    "PLACES",
    "Places",
    "check_exportable",
    "export_hf",
    "export_peft",
    "peft_config",
    "peft_model",
    "task_config",
]
