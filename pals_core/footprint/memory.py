"""Memory of a design on the machine that trains or serves it, in bytes (docs/design.md "Memory (bytes)"). Pure Python.

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
``tests/memory_probe.py:inference_peak_bytes`` measures on small BERT configurations (eager attention lowest), 0.67–1.17 on
small DeBERTa-v3 and ModernBERT ones (tests/test_constraints.py holds small BERTs to 0.6–1.2).
Evaluation (``train.evaluate``: one task's ``forward`` per batch) and prediction (``run_info.predict_texts``,
``pals-predict``), one path over rows (``forward.forward_rows``), reduce each batch's logits to what they keep (the class, the value, the label and its
probability) before the next batch runs, so they too hold one batch's logits at a time, as priced here at their
batch size, never a dev set's n × C (tests/test_bounded_evaluation.py). Adapted layers keep four more (B, n, d)
tensors alive through their FFN (the Python copy of the layer holds q, k, v, the context, y).

The forward is the family's: ``pals_core/families/<f>/description.py`` holds its ``Replay`` (embeddings, layer i
with an adapter's hooks, what follows the last layer, the head, and the trainable tensors each part holds);
``replay_forward`` below runs it for one task's path. A family without a ``Replay`` has no memory or step time (the rows say "—").

bf16 / mixed precision (``precision="bf16"``): an estimate. Autocast keeps fp32 master weights, gradients
and AdamW state; matmul outputs, and so most saved activations, are bf16 (2 bytes) while LayerNorm
statistics and softmax stay fp32 — estimated as activations at 2 bytes per element; serving in bf16 halves
the weights too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..families.registry import get_family, replay_of
from ..kinds import get_kind
from ..pricing.activations import ActivationHooks, Conditions, Sym, Trace
from ..pricing.poly import Poly, S

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


def replay_forward(
    tr: Trace,
    m,
    hooks: ActivationHooks,
    *,
    freeze_trunk: bool,
    pooler_trains: bool,
    records: bool = True,
    per_word: bool = False,
    per_candidate: bool = False,
    span: bool = False,
) -> Sym:
    """``MultiTaskModel.forward`` on one task: the family's embeddings, every layer, what follows the last layer, the
    top stack, the family's head — as its ``Replay`` says.

    ``records``: the embeddings, each layer, what follows the last one and the head are each replayed once per kind
    and input (``Record``), then applied wherever they recur — a plain layer everywhere, an adapted layer wherever its
    method's hooks do the same (``ActivationHooks.layer_key``) — so the per-layer work is derived once per model ×
    method and summed per location. ``records=False`` replays every op in place: the reference the records are held
    to (``tests/test_fast_path.py``). ``per_word``: a tagging task's head on every token (``Replay.tag``);
    ``per_candidate``: a multiple-choice task's head on each candidate's sequence (``Replay.choose``, else
    ``classify``; the trace's batch is then the candidates' sequences); ``span``: an extractive-QA task's head on
    every token (``Replay.span``)."""
    replay = replay_of(m)
    book = _book(tr, m) if records else None
    emb_trains = hooks.embeddings_train() and not freeze_trunk
    if book is None:
        h = replay.embeddings(tr, m, emb_trains)
    else:
        h = recorded(tr, book, ("embeddings", emb_trains), None, lambda sub: replay.embeddings(sub, m, emb_trains))
    h = hooks.adapt_embeddings(h)
    replay.prepare(tr, m, not freeze_trunk)
    design = None if book is None else (type(hooks), _config_key(hooks.cfg), hooks.size)
    for i in range(m.layers):
        trains = hooks.layer_trains(i) and not freeze_trunk
        if book is None:
            h = replay.layer(
                tr, m, i, h, trains, hooks if i in hooks.layers else ActivationHooks(tr, m, None, (), None)
            )
        elif i in hooks.layers:
            h = adapted_layer(tr, book, m, replay, i, h, trains, hooks, design)
        else:
            h = plain_layer(tr, book, m, replay, i, h, trains)
    if book is None:
        h = replay.finish(tr, m, h, not freeze_trunk)
    else:
        h = recorded(tr, book, ("finish", not freeze_trunk), h, lambda sub: replay.finish(sub, m, h, not freeze_trunk))
    h = hooks.adapt_top(h)
    if span:
        if book is None:
            return replay.span(tr, m, h)
        return recorded(tr, book, ("span",), h, lambda sub: replay.span(sub, m, h))
    if per_word:
        if book is None:
            return replay.tag(tr, m, h)
        return recorded(tr, book, ("tag",), h, lambda sub: replay.tag(sub, m, h))
    head, key = replay.classify, "classify"
    if per_candidate and replay.choose is not None:
        head, key = replay.choose, "choose"
    if book is None:
        return head(tr, m, h, pooler_trains)
    return recorded(tr, book, (key, pooler_trains), h, lambda sub: head(sub, m, h, pooler_trains))


class Record:
    """One part of the forward (a layer, the embeddings, what follows the last layer, the head) replayed once on a
    trace of its own, for every place it recurs: the storages it keeps — ``("input",)`` its input, ``("output",)``
    its output, ``("shared", name)`` a tensor of the forward's ``Trace.shared``, ``("new", bytes)`` one it creates —
    the work of its ops (``work``), its output's bytes and grad, and the tensors it adds to ``Trace.shared`` for the
    parts after it (``makes``: name, bytes, grad; MPNet's position bias, made with the embeddings). ``fresh``: the
    bytes of the "new" storages (nothing outside the part can reach them, so they are counted without being looked
    up), ``links`` the other kept items.
    ``times``: its step time's coefficients (a, b, c) per device profile and precision (``footprint.timing.step_poly``,
    on first use)."""

    __slots__ = ("kept", "work", "nbytes", "grad", "makes", "fresh", "links", "times")

    def __init__(self, kept: tuple, work: tuple, nbytes: Poly, grad: bool, makes: tuple = ()) -> None:
        self.kept, self.work, self.nbytes, self.grad, self.makes = kept, work, nbytes, grad, makes
        self.fresh = sum((item[1] for item in kept if item[0] == "new"), Poly())
        self.links = tuple(item for item in kept if item[0] != "new")
        self.times: dict = {}


def _book(tr: Trace, m) -> dict:
    """The records of one model on the trace's batch, length and conditions (looked up once per forward)."""
    key = (m, tr.cond, tr.batch, tr.seq_len)
    book = _BOOKS.get(key)
    if book is None:
        if len(_BOOKS) >= 256:
            _BOOKS.clear()
        book = _BOOKS[key] = {}
    elif len(book) >= 4096:
        book.clear()
    return book


_BOOKS: dict[tuple, dict] = {}


def recorded(tr: Trace, book: dict, key: tuple, h: Sym | None, run) -> Sym:
    """``run(sub)`` — a part of the forward reading ``h`` (None: no input) — as its ``Record`` in ``book``: replayed
    once per ``key``, input and shared tensors, then applied to ``tr``: the same saved sizes and work, fresh storages
    for what it creates, the input and the forward's shared tensors kept as themselves (so a storage two parts keep
    still counts once). A part whose output is a view of another tensor is not recorded: it runs in place."""
    full = (
        key,
        None if h is None else (h.grad, h.nbytes),
        tuple((k, v.grad, v.nbytes) for k, v in tr.shared.items()) if tr.shared else (),
    )
    record = book.get(full)
    if record is None:
        sub = Trace(tr.batch, tr.seq_len, tr.cond)
        sub.shared = dict(tr.shared)
        out = run(sub)
        made = {k: v for k, v in sub.shared.items() if tr.shared.get(k) is not v}
        if out.base is not None or any(v.base is not None or v.param for v in made.values()):
            return run(tr)  # a view's storage is another tensor's: not a record's to make
        shared = {id(v): k for k, v in sub.shared.items()}
        inp = None if h is None else h.storage
        kept = tuple(
            ("input",)
            if t is inp
            else ("output",)
            if t is out.storage
            else ("shared", shared[id(t)])
            if id(t) in shared
            else ("new", t.nbytes)
            for t in sub.saved.values()
        )
        record = book[full] = Record(
            kept, tuple(sub.work), out.nbytes, out.grad, tuple((k, v.nbytes, v.grad) for k, v in made.items())
        )
    out = Sym(record.nbytes, record.grad)
    tr.work.append(("block", record))
    for name, nbytes, grad in record.makes:
        tr.shared[name] = Sym(nbytes, grad, name)
    tr.keep_fresh(record.fresh)
    for item in record.links:
        tr.save(h if item[0] == "input" else out if item[0] == "output" else tr.shared[item[1]])
    return out


def plain_layer(tr: Trace, book: dict, m, replay, i: int, h: Sym, trains: bool) -> Sym:
    """Layer i without an adapter, as its ``Record`` (one per kind of layer, input and trainability)."""
    return recorded(
        tr,
        book,
        ("layer", replay.layer_kind(m, i), trains),
        h,
        lambda sub: replay.layer(sub, m, i, h, trains, ActivationHooks(sub, m, None, (), None)),
    )


def adapted_layer(
    tr: Trace, book: dict, m, replay, i: int, h: Sym, trains: bool, hooks: ActivationHooks, design: tuple
) -> Sym:
    """Layer i with the design's hooks: as its ``Record`` — one for every adapted layer of a kind where the hooks say
    they do the same (``layer_key``; ``design``: the hooks' class, settings less location and size, and the size) —
    or replayed in place where they give no key."""
    what = hooks.layer_key(i)
    if what is None:
        return replay.layer(tr, m, i, h, trains, hooks)

    def run(sub: Trace) -> Sym:
        hooks.trace = sub  # the hooks act on the record's own trace, then on the forward's again
        try:
            return replay.layer(sub, m, i, h, trains, hooks)
        finally:
            hooks.trace = tr

    return recorded(tr, book, ("adapted", replay.layer_kind(m, i), trains, design, what), h, run)


def _config_key(cfg, *, location: bool = False) -> tuple:
    """A design's settings but its size (and its location unless ``location``), as a hashable key (``repr`` where a
    value is not hashable)."""
    key = tuple(v for k, v in vars(cfg).items() if k != "d_s" and (location or k != "location"))
    try:
        hash(key)
    except TypeError:
        return (repr(key),)
    return key


def trace_forward(ds, batch: int, cond: Conditions, *, records: bool = True) -> Trace:
    """The symbolic training-mode forward of ``ds``'s first task on ``batch`` rows (memory and time read it): B·k
    sequences for a task whose row is k (``Kind.sequences``: a multiple-choice row's candidates).

    Symbolic in d_s, so one trace serves every size of a design: kept (read-only) per design, batch and conditions.
    ``records=False``: every op replayed in place (the reference; never kept)."""
    if not records:
        return _trace_forward(ds, batch, cond, records=False)
    key = (
        ds.model,
        ds.method.name,
        ds.layers,
        ds.seq_len,
        ds.tasks[0],
        _config_key(ds.config, location=True),
        batch,
        cond,
    )
    tr = _TRACES.get(key)
    if tr is None:
        if len(_TRACES) > 4096:
            _TRACES.clear()
        tr = _TRACES[key] = _trace_forward(ds, batch, cond)
    return tr


_TRACES: dict[tuple, Trace] = {}


def _trace_forward(ds, batch: int, cond: Conditions, *, records: bool = True) -> Trace:
    kind = get_kind(ds.tasks[0].kind)
    tr = Trace(batch * kind.sequences(ds.tasks[0]), ds.seq_len, cond)
    make = ds.method.activations or ActivationHooks
    size = S if ds.method.sized else None
    hooks = make(tr, ds.model, ds.config, ds.layers, size)
    pooler_trains = ds.config.per_task_pooler or not ds.config.freeze_trunk
    replay_forward(
        tr,
        ds.model,
        hooks,
        freeze_trunk=ds.config.freeze_trunk,
        pooler_trains=pooler_trains,
        records=records,
        per_word=kind.per_word,
        per_candidate=kind.per_candidate,
        span=kind.span_head,
    )
    return tr


def activation_bytes(ds, batch: int, cond: Conditions) -> Poly:
    """Bytes autograd saves in one training-mode forward of ``ds``'s first task on ``batch`` rows, as a polynomial in
    d_s."""
    return trace_forward(ds, batch, cond).total


# ----------------------------------------------------------------------------------- parameters


def trainable_tensors(ds) -> int:
    """Trainable parameter tensors (AdamW keeps one float32 ``step`` per tensor), as the family's ``Replay`` counts
    them: the embedding layer, each layer, what follows the last one, the pooler (2), each task's head and adapter."""
    m, cfg = ds.model, ds.config
    replay, pooler = replay_of(m), get_family(m.family).pooler
    per_task, shared = ds.method.tensors(m, ds.layers, cfg) if ds.method.tensors else (0, 0)
    heads = replay.head_tensors(m) + (LINEAR_TENSORS if cfg.per_task_pooler and pooler else 0)
    tags = replay.token_head_tensors(m)  # a tagging or span task's head: no pooler of its own
    adapters = shared + sum(per_task + (tags if get_kind(t.kind).every_token else heads) for t in ds.tasks)
    if cfg.freeze_trunk:
        return adapters
    embedding = replay.embedding_tensors(m)
    layers = [replay.layer_tensors(m, i) for i in range(m.layers)]
    base = (
        embedding
        + sum(layers)
        + replay.final_tensors(m)
        + (LINEAR_TENSORS if pooler and not cfg.per_task_pooler else 0)
    )
    frozen_layers = ds.method.frozen_layers(m, cfg) if ds.method.frozen_layers else 0
    if frozen_layers:
        base -= embedding + sum(layers[:frozen_layers])
    return base + adapters


def memory_train(ds, s: int | None, cost, *, batch: int, cond: Conditions) -> MemoryTrain:
    """The training memory of ``ds`` at size ``s`` (``cost`` = ``evaluate(ds, s)``: its parameter counts)."""
    weights = FP32 * cost.params_total
    trunk_trains = not ds.config.freeze_trunk and not (
        ds.method.frozen_layers and ds.method.frozen_layers(ds.model, ds.config)
    )
    reached = cost.params_trained - (replay_of(ds.model).idle_params(ds.model) if trunk_trains else 0)
    gradients = FP32 * reached
    optimizer = 2 * FP32 * reached + FP32 * trainable_tensors(ds)
    activations = activation_bytes(ds, batch, cond)(s or 0)
    return MemoryTrain(weights, gradients, optimizer, activations, weights + gradients + optimizer + activations)


def inference_activation_bytes(ds, batch: int, cond: Conditions) -> int:
    """The activations live at the peak of ``predict_all`` in inference mode (an estimate, see the module docstring):
    the (B, n, d) hidden states every task reads, plus the largest working set of one layer (attention or FFN, as the
    family's ``Replay.inference_layer`` counts it: BERT's is ``pricing.family.bert_inference_layer``), plus the logits
    of every task (an estimate, compared with ``tests/memory_probe.py:inference_peak_bytes`` by hand, not by a test)."""
    m, n = ds.model, ds.seq_len
    seqs = batch * max(get_kind(t.kind).sequences(t) for t in ds.tasks)  # a task's B rows: B·k sequences (choice)
    attention, ffn = replay_of(m).inference_layer(m, seqs, n, cond.attention == "eager", bool(ds.layers))
    logits = sum(get_kind(t.kind).logits_floats(batch, n, t.num_labels) for t in ds.tasks)
    return cond.float_bytes * (seqs * n * m.hidden + max(attention, ffn) + logits)


def memory_infer(ds, s: int | None, cost, *, batch: int, cond: Conditions) -> int:
    """Serving memory of ``predict_all`` over the T tasks on B × n: weights (at the activations' precision) + the
    activations live at its peak."""
    return (cond.float_bytes * cost.params_total) + inference_activation_bytes(ds, batch, cond)
