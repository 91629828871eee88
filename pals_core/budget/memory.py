"""Memory of a design on the machine that trains or serves it, in bytes (SPEC section 9). Pure Python.

Training, one step of one task's path (``model(task=t, …)``) on B sequences of n tokens, fp32, AdamW:

    weights     = 4 · N_total
    gradients   = 4 · N_reached                         N_reached = N_trained (frozen trunk / CA-MTL's frozen layers
                                                        excluded) less the family's idle parameters, which no
                                                        forward reaches (``Replay.idle_params``: DeBERTa's relative
                                                        table / LayerNorm without c2p or p2c): no gradient, no state
    optimizer   = 2 · 4 · N_reached + 4 · (trainable parameter tensors reached)     AdamW's exp_avg, exp_avg_sq and
                  a float32 ``step`` per tensor (every task having taken a step)
    activations = bytes autograd saves during the training-mode forward (``activations.Trace``: each storage
                  once, parameters excluded; the model's own dropout, train mode, inputs without padding)
    total       = their sum

Serving (``memory_infer``): weights + the activation bytes live at the peak of ``predict_all`` in inference
mode — the hidden states every task reads (the shared prefix's output) plus the largest working set of one
layer as its family's ``Replay.inference_layer`` counts it (BERT: attention: its input, q, k, v and the context,
with the B·h·n² scores twice under eager attention; FFN: its input, the attention output and two B·n·d_ff tensors)
plus the logits — an estimate (the allocator's temporaries are not modelled): 0.73–1.06 of the peak
``memory_probe.inference_peak_bytes`` measures on small BERT configurations (eager attention lowest), 0.67–1.17 on
small DeBERTa-v3 and ModernBERT ones; no test holds it to a tolerance yet. Adapted layers keep four more (B, n, d)
tensors alive through their FFN (the Python copy of the layer holds q, k, v, the context, y).

The forward is the family's: ``families/<family>.py`` holds its ``Replay`` (embeddings, layer i with an adapter's
hooks, what follows the last layer, the head, and the trainable tensors each part holds); ``replay_forward`` below
runs it for one task's path. A family without a ``Replay`` has no memory or step time (the rows say "—").

bf16 / mixed precision (``precision="bf16"``): an estimate. Autocast keeps fp32 master weights, gradients
and AdamW state; matmul outputs, and so most saved activations, are bf16 (2 bytes) while LayerNorm
statistics and softmax stay fp32 — estimated as activations at 2 bytes per element; serving in bf16 halves
the weights too.
"""
from __future__ import annotations

import json

from dataclasses import asdict, dataclass
from typing import Optional

from .activations import ActivationHooks, Conditions, Sym, Trace
from .poly import Poly, S

PRECISIONS = ("fp32", "bf16")
FP32 = 4
LINEAR_TENSORS = 2  # weight + bias


@dataclass
class MemoryTrain:
    """``memory_train`` of a JSON row (bytes)."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    total: int

    def as_dict(self) -> dict:
        return asdict(self)


# ----------------------------------------------------------------------------------- the forward

def replay_of(m):
    """The family's ``Replay`` (``families/<family>.py``); ``ValueError`` where the family has none."""
    from .families import FAMILIES, get_family

    replay = get_family(m.family).replay
    if replay is None:
        modelled = ", ".join(name for name, f in FAMILIES.items() if f.replay is not None)
        raise ValueError(f"memory and step time are modelled for {modelled} models, not {m.family!r}")
    return replay


def replay_forward(tr: Trace, m, hooks: ActivationHooks, *, freeze_trunk: bool, pooler_trains: bool) -> Sym:
    """``MultiTaskModel.forward`` on one task: the family's embeddings, every layer, what follows the last layer, the
    top stack, the family's head — as its ``Replay`` says."""
    replay = replay_of(m)
    h = hooks.adapt_embeddings(replay.embeddings(tr, m, hooks.embeddings_train() and not freeze_trunk))
    replay.prepare(tr, m, not freeze_trunk)
    for i in range(m.layers):
        trains = hooks.layer_trains(i) and not freeze_trunk
        h = replay.layer(tr, m, i, h, trains, hooks) if i in hooks.layers else plain_layer(tr, m, replay, i, h, trains)
    h = replay.finish(tr, m, h, not freeze_trunk)
    return replay.classify(tr, m, hooks.adapt_top(h), pooler_trains)


def plain_layer(tr: Trace, m, replay, i: int, h: Sym, trains: bool) -> Sym:
    """Layer i without an adapter: replayed once per kind of layer, input and trainability (``_LAYERS``), then its
    record is applied — the same saved sizes and work, fresh storages for what it creates, the input and the forward's
    shared tensors kept as themselves (so a storage two ops keep still counts once)."""
    key = (m, tr.cond, tr.batch, tr.seq_len, replay.layer_kind(m, i), h.grad, h.nbytes, trains)
    record = _LAYERS.get(key)
    if record is None:
        sub = Trace(tr.batch, tr.seq_len, tr.cond)
        sub.shared = tr.shared
        out = replay.layer(sub, m, i, h, trains, ActivationHooks(sub, m, None, (), None))
        shared = {id(v): k for k, v in tr.shared.items()}
        kept = tuple(("input",) if t is h.storage else ("output",) if t is out.storage else
                     ("shared", shared[id(t)]) if id(t) in shared else ("new", t.nbytes) for t in sub.saved.values())
        if out.base is not None:
            raise ValueError("a layer's output must be a new tensor, not a view")
        record = _LAYERS.setdefault(key, (kept, tuple(sub.work), out.nbytes, out.grad))
        if len(_LAYERS) > 4096:
            _LAYERS.clear()
    kept, work, nbytes, grad = record
    out = Sym(nbytes, grad)
    tr.work.extend(work)
    for item in kept:
        tr.save(h if item[0] == "input" else out if item[0] == "output" else
                tr.shared[item[1]] if item[0] == "shared" else Sym(item[1], True))
    return out


_LAYERS: dict[tuple, tuple] = {}


def trace_forward(ds, batch: int, cond: Conditions) -> Trace:
    """The symbolic training-mode forward of ``ds``'s first task on ``batch`` sequences (memory and time read it).

    Symbolic in d_s, so one trace serves every size of a design: kept (read-only) per design, batch and conditions."""
    design_key = json.dumps({**ds.config.as_dict(), "d_s": None}, sort_keys=True, default=str)
    key = (ds.model, ds.method.name, ds.layers, ds.seq_len, ds.tasks[0], design_key, batch, cond)
    if key not in _TRACES:
        if len(_TRACES) > 4096:
            _TRACES.clear()
        _TRACES[key] = _trace_forward(ds, batch, cond)
    return _TRACES[key]


_TRACES: dict[tuple, Trace] = {}


def _trace_forward(ds, batch: int, cond: Conditions) -> Trace:
    tr = Trace(batch, ds.seq_len, cond)
    make = ds.method.activations or ActivationHooks
    size = S if ds.method.sized else None
    hooks = make(tr, ds.model, ds.config, ds.layers, size)
    pooler_trains = ds.config.per_task_pooler or not ds.config.freeze_trunk
    replay_forward(tr, ds.model, hooks, freeze_trunk=ds.config.freeze_trunk, pooler_trains=pooler_trains)
    return tr


def activation_bytes(ds, batch: int, cond: Conditions) -> Poly:
    """Bytes autograd saves in one training-mode forward of ``ds``'s first task, as a polynomial in d_s."""
    return trace_forward(ds, batch, cond).total


# ----------------------------------------------------------------------------------- parameters

def trainable_tensors(ds) -> int:
    """Trainable parameter tensors (AdamW keeps one float32 ``step`` per tensor), as the family's ``Replay`` counts
    them: the embedding layer, each layer, what follows the last one, the pooler (2), each task's head and adapter."""
    from .families import get_family

    m, cfg = ds.model, ds.config
    replay, pooler = replay_of(m), get_family(m.family).pooler
    per_task, shared = ds.method.tensors(m, ds.layers, cfg) if ds.method.tensors else (0, 0)
    heads = replay.head_tensors(m) + (LINEAR_TENSORS if cfg.per_task_pooler and pooler else 0)
    adapters = shared + len(ds.tasks) * (per_task + heads)
    if cfg.freeze_trunk:
        return adapters
    embedding = replay.embedding_tensors(m)
    layers = [replay.layer_tensors(m, i) for i in range(m.layers)]
    base = embedding + sum(layers) + replay.final_tensors(m) + (LINEAR_TENSORS if pooler and not cfg.per_task_pooler else 0)
    frozen_layers = ds.method.frozen_layers(m, cfg) if ds.method.frozen_layers else 0
    if frozen_layers:
        base -= embedding + sum(layers[:frozen_layers])
    return base + adapters


def memory_train(ds, s: Optional[int], cost, *, batch: int, cond: Conditions) -> MemoryTrain:
    """The training memory of ``ds`` at size ``s`` (``cost`` = ``evaluate(ds, s)``: its parameter counts)."""
    weights = FP32 * cost.params_total
    trunk_trains = not ds.config.freeze_trunk and not (ds.method.frozen_layers and ds.method.frozen_layers(ds.model, ds.config))
    reached = cost.params_trained - (replay_of(ds.model).idle_params(ds.model) if trunk_trains else 0)
    gradients = FP32 * reached
    optimizer = 2 * FP32 * reached + FP32 * trainable_tensors(ds)
    activations = activation_bytes(ds, batch, cond)(s or 0)
    return MemoryTrain(weights, gradients, optimizer, activations, weights + gradients + optimizer + activations)


def inference_activation_bytes(ds, batch: int, cond: Conditions) -> int:
    """The activations live at the peak of ``predict_all`` in inference mode (an estimate, see the module docstring):
    the (B, n, d) hidden states every task reads, plus the largest working set of one layer (attention or FFN, as the
    family's ``Replay.inference_layer`` counts it: BERT's is ``families.base.bert_inference_layer``), plus the logits
    of every task (an estimate, compared with ``memory_probe.inference_peak_bytes`` by hand, not by a test)."""
    m, n = ds.model, ds.seq_len
    attention, ffn = replay_of(m).inference_layer(m, batch, n, cond.attention == "eager", bool(ds.layers))
    logits = batch * sum(t.num_labels for t in ds.tasks)
    return cond.float_bytes * (batch * n * m.hidden + max(attention, ffn) + logits)


def memory_infer(ds, s: Optional[int], cost, *, batch: int, cond: Conditions) -> int:
    """Serving memory of ``predict_all`` over the T tasks on B × n: weights (at the activations' precision) + the
    activations live at its peak."""
    return (cond.float_bytes * cost.params_total) + inference_activation_bytes(ds, batch, cond)
