"""Memory of a design on the machine that trains or serves it, in bytes (SPEC section 9). Pure Python.

Training, one step of one task's path (``model(task=t, …)``) on B sequences of n tokens, fp32, AdamW:

    weights     = 4 · N_total
    gradients   = 4 · N_trained                         (frozen trunk / CA-MTL's frozen layers excluded)
    optimizer   = 2 · 4 · N_trained + 4 · (trainable parameter tensors)     AdamW's exp_avg, exp_avg_sq and a
                  float32 ``step`` per tensor, for every trainable parameter (every task having taken a step)
    activations = bytes autograd saves during the training-mode forward (``activations.Trace``: each storage
                  once, parameters excluded; the model's own dropout, train mode, inputs without padding)
    total       = their sum

Serving (``memory_infer``): weights + the activation bytes live at the peak of ``predict_all`` in inference
mode — the hidden states every task reads (the shared prefix's output) plus the largest working set of one
layer (attention: its input, q, k, v and the context, with the B·h·n² scores twice under eager attention; FFN:
its input, the attention output and two B·n·d_ff tensors) plus the logits — an estimate (the allocator's
temporaries are not modelled): 0.73–1.06 of the peak ``memory_probe.inference_peak_bytes`` measures on small
configurations (eager attention lowest); no test holds it to a tolerance yet. Adapted layers keep
four more (B, n, d) tensors alive through their FFN (the Python copy of the layer holds q, k, v, the context, y).

bf16 / mixed precision (``precision="bf16"``): an estimate. Autocast keeps fp32 master weights, gradients
and AdamW state; matmul outputs, and so most saved activations, are bf16 (2 bytes) while LayerNorm
statistics and softmax stay fp32 — estimated as activations at 2 bytes per element; serving in bf16 halves
the weights too.
"""
from __future__ import annotations

import json

from dataclasses import asdict, dataclass
from typing import Optional

from .activations import INT64, ActivationHooks, Conditions, Sym, Trace
from .poly import Poly, S

PRECISIONS = ("fp32", "bf16")
FP32 = 4
BASE_LAYER_TENSORS = 16  # Q, K, V, O, FFN in, FFN out (weight + bias each), two LayerNorms (γ, β)
EMBEDDING_TENSORS = 5  # word, position, token-type tables, LayerNorm γ, β
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


# ----------------------------------------------------------------------------------- the BERT forward

def bert_layer(tr: Trace, m, i, h: Sym, trains: bool, hooks: ActivationHooks) -> Sym:
    """One layer as the family's trunk runs it (``pals_core/trunks``: BERT's layer; DistilBERT's has no dropout after
    the attention output) with the adapter's hooks (identity hooks: the HF layer)."""
    c, d, f = tr.cond, m.hidden, m.intermediate
    q = hooks.adapt_query(i, h, tr.linear(h, d, trains))
    k = hooks.adapt_key(i, h, tr.linear(h, d, trains))
    v = hooks.adapt_value(i, h, tr.linear(h, d, trains))
    ctx = tr.attention(q, k, v, d, m.heads, c.attention_dropout, mask_grad=hooks.attention_mask_grad(i))
    y = tr.linear(ctx, d, trains)
    if m.family != "distilbert":
        y = tr.dropout(y, c.hidden_dropout)
    y = hooks.adapt_attention_output(i, y)
    a = hooks.attention_norm(i, tr.add(y, h), trains)
    g = hooks.adapt_ffn_activation(i, tr.activation(tr.linear(a, f, trains), m.option("hidden_act", "gelu")))
    z = tr.add(hooks.adapt_ffn_output(i, tr.dropout(tr.linear(g, d, trains), c.hidden_dropout)), a)
    z = tr.add(z, hooks.parallel_branch(i, h))
    return hooks.adapt_layer_output(i, hooks.output_norm(i, z, trains))


def embeddings(tr: Trace, m, emb: bool) -> Sym:
    """The family's embedding layer: the int64 ids each lookup keeps (BERT, ELECTRA: the caller's token types and a
    view of the (1, P) position buffer, 8·P bytes; RoBERTa: positions computed from the ids, token types gathered from
    its buffer, B·n each; DistilBERT: no token types), LayerNorm, dropout, ELECTRA's E → d projection."""
    c, e = tr.cond, m.width
    ids = tr.new(tr.tokens, False, item_bytes=INT64)
    x = tr.embedding(ids, e, emb, m.vocab)
    if m.family != "distilbert":
        x = tr.add(x, tr.embedding(tr.new(tr.tokens, False, item_bytes=INT64), e, emb, m.token_types))
    positions = tr.tokens if m.family == "roberta" else m.positions
    x = tr.add(x, tr.embedding(tr.new(positions, False, item_bytes=INT64), e, emb, m.positions))
    h = tr.dropout(tr.layer_norm(x, emb), c.hidden_dropout)
    if e != m.hidden:  # ELECTRA's embeddings_project
        h = tr.linear(h, m.hidden, emb)
    return h


def classify(tr: Trace, m, h: Sym, pooler_trains: bool) -> Sym:
    """Pooler families: head(dropout(tanh(dense(h[:, 0])))); DistilBERT: out(dropout(ReLU(dense(h[:, 0])))); ELECTRA:
    out(dropout(GELU(dense(dropout(h[:, 0]))))) — the dense layers of the last two are the task's own."""
    c, d = tr.cond, m.hidden
    if m.family in ("bert", "roberta"):
        pooled = tr.saves_output(tr.linear(h, d, pooler_trains, rows=tr.batch))  # dense on h[:, 0] (a view of h), tanh
        return tr.linear(tr.dropout(pooled, c.head_dropout), 1, True, rows=tr.batch)
    if m.family == "electra":
        first = h if c.head_dropout == 0 else tr.dropout(Sym(Poly.of(tr.batch * d * c.float_bytes), h.grad), c.head_dropout)
        x = tr.gelu(tr.linear(first, d, True, rows=tr.batch))  # h[:, 0] is a view of h: without dropout, h is kept
    else:
        x = tr.saves_output(tr.linear(h, d, True, rows=tr.batch))  # ReLU keeps its output
    return tr.linear(tr.dropout(x, c.head_dropout), 1, True, rows=tr.batch)


FAMILIES = ("bert", "roberta", "distilbert", "electra")  # the families whose forward is replayed here


def bert_forward(tr: Trace, m, hooks: ActivationHooks, *, freeze_trunk: bool, pooler_trains: bool) -> Sym:
    """``MultiTaskModel.forward`` on one task: embeddings, every layer, the top stack, the family's head."""
    if m.family not in FAMILIES:
        raise ValueError(f"memory and step time are modelled for {', '.join(FAMILIES)} models, not {m.family!r}")
    h = hooks.adapt_embeddings(embeddings(tr, m, hooks.embeddings_train() and not freeze_trunk))
    plain = ActivationHooks(tr, m, hooks.cfg, (), None)
    for i in range(m.layers):
        h = bert_layer(tr, m, i, h, hooks.layer_trains(i) and not freeze_trunk, hooks if i in hooks.layers else plain)
    return classify(tr, m, hooks.adapt_top(h), pooler_trains)


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
    bert_forward(tr, ds.model, hooks, freeze_trunk=ds.config.freeze_trunk, pooler_trains=pooler_trains)
    return tr


def activation_bytes(ds, batch: int, cond: Conditions) -> Poly:
    """Bytes autograd saves in one training-mode forward of ``ds``'s first task, as a polynomial in d_s."""
    return trace_forward(ds, batch, cond).total


# ----------------------------------------------------------------------------------- parameters

def trainable_tensors(ds) -> int:
    """Trainable parameter tensors (AdamW keeps one float32 ``step`` per tensor)."""
    m, cfg = ds.model, ds.config
    per_task, shared = ds.method.tensors(m, ds.layers, cfg) if ds.method.tensors else (0, 0)
    pooler = m.family in ("bert", "roberta")
    head = LINEAR_TENSORS * (1 if pooler else 2)  # DistilBERT / ELECTRA heads hold their own dense layer
    heads = head + (LINEAR_TENSORS if cfg.per_task_pooler and pooler else 0)
    adapters = shared + len(ds.tasks) * (per_task + heads)
    if cfg.freeze_trunk:
        return adapters
    embedding = EMBEDDING_TENSORS - (1 if m.family == "distilbert" else 0) + (LINEAR_TENSORS if m.width != m.hidden else 0)
    base = embedding + m.layers * BASE_LAYER_TENSORS + (LINEAR_TENSORS if pooler else 0)
    if cfg.per_task_pooler and pooler:
        base -= LINEAR_TENSORS
    frozen_layers = ds.method.frozen_layers(m, cfg) if ds.method.frozen_layers else 0
    if frozen_layers:
        base -= embedding + frozen_layers * BASE_LAYER_TENSORS
    return base + adapters


def memory_train(ds, s: Optional[int], cost, *, batch: int, cond: Conditions) -> MemoryTrain:
    """The training memory of ``ds`` at size ``s`` (``cost`` = ``evaluate(ds, s)``: its parameter counts)."""
    weights = FP32 * cost.params_total
    gradients = FP32 * cost.params_trained
    optimizer = 2 * FP32 * cost.params_trained + FP32 * trainable_tensors(ds)
    activations = activation_bytes(ds, batch, cond)(s or 0)
    return MemoryTrain(weights, gradients, optimizer, activations, weights + gradients + optimizer + activations)


def inference_activation_bytes(ds, batch: int, cond: Conditions) -> int:
    """The activations live at the peak of ``predict_all`` in inference mode (an estimate, see the module docstring):
    the (B, n, d) hidden states every task reads, plus the largest working set of one layer — attention: its input,
    q, k, v and the context (eager: + the B·h·n² scores twice); FFN: its input, the attention output and the two
    (B, n, d_ff) tensors (+ 4 (B, n, d) tensors in adapted layers) — plus the logits of every task (an estimate,
    compared with ``memory_probe.inference_peak_bytes`` by hand, not by a test)."""
    m, n = ds.model, ds.seq_len
    tokens, fb = batch * n, cond.float_bytes
    attention = 5 * tokens * m.hidden + (2 * batch * m.heads * n * n if cond.attention == "eager" else 0)
    ffn = 2 * tokens * m.hidden + 2 * tokens * m.intermediate
    if ds.layers:  # an adapted layer (a Python copy of the HF layer) keeps q, k, v, the context and y alive to its end
        ffn += 4 * tokens * m.hidden
    logits = batch * sum(t.num_labels for t in ds.tasks)
    return fb * (tokens * m.hidden + max(attention, ffn) + logits)


def memory_infer(ds, s: Optional[int], cost, *, batch: int, cond: Conditions) -> int:
    """Serving memory of ``predict_all`` over the T tasks on B × n: weights (at the activations' precision) + the
    activations live at its peak."""
    return (cond.float_bytes * cost.params_total) + inference_activation_bytes(ds, batch, cond)
