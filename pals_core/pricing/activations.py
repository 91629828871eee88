"""What autograd saves for backward in one training-mode forward, replayed symbolically (docs/design.md "Memory
(bytes)"). Pure Python.

A ``Trace`` follows the forward of one task's path op by op, as the torch modules run it (each family's ``Replay`` in
``pals_core/families/<f>/description.py`` says the order), with symbolic tensors (``Sym``: a storage — or a view of one, which keeps its
base's whole storage — its size in bytes as a ``Poly`` in d_s, and whether it requires grad). Each op
records the storages its backward formula keeps, by the rules of torch's derivatives (checked against
``torch.autograd.graph.saved_tensors_hooks`` by ``tests/test_memory.py``):

- ``linear(x, W)``: x if W requires grad; W if x requires grad and W is not a parameter (PALs' fused Q,K,V).
- ``layer_norm``: its input and the per-row mean and 1/σ (2 floats per row) whenever anything requires grad,
  plus weight/bias when they are computed tensors (CA-MTL's conditional LayerNorm).
- ``gelu``: its input; ``tanh``, ``sigmoid``, ``softmax``: their output; ``add`` and scalar products: nothing;
  a model's own activation (``hidden_act`` …): what ``ACTIVATIONS`` says for its name;
  ``mul(x, s)``: x if s requires grad, s if x does (parameters never count).
- ``dropout`` (train mode, p > 0): the mask — a float tensor on CPU (``input * noise``), a bool tensor on
  CUDA (``native_dropout``) — and a new output; p = 0 returns its input.
- attention, ``F.scaled_dot_product_attention``: with no dropout the CPU flash kernel keeps q, k, v, its output
  and the log-sum-exp (B·h·n floats); with dropout (trunk attention in train mode) the CPU math kernel keeps the
  scaled q and kᵀ, the softmax, the dropout mask, the dropped probabilities and v (B·h·n² floats three times);
  eager attention keeps the same as the math kernel. Copies from ``matmul`` happen when a (B, h, n, d_h) view
  cannot be flattened (B, h, n > 1).
- embeddings: the int64 ids when the table trains (the position ids are a view of the (1, P) buffer: its whole
  storage, 8·P bytes).
- ``bmm(a, b)``: a if b requires grad, b if a does; ``gather(x, index)``: x and the int64 index; ``x / s`` with a
  computed 0-dim tensor s: s (4 bytes); ``masked_fill(x, mask)``: the mask; ``contiguous`` copies and ``repeat``:
  nothing (DeBERTa's disentangled attention).

Every storage counts once (a tensor two ops save is counted once); parameters never count. Inputs with
no grad and frozen weights save nothing, so a frozen prefix saves nothing at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from .poly import Number, Poly

INT64 = 8

# What each activation of transformers (``ACT2FN[name]``, transformers 5.24) keeps for backward when its input requires
# grad, measured with saved_tensors_hooks (tests/test_unseen_configs.py holds every entry to torch): "in" its input,
# "out" its output, "new" one more tensor of the input's shape (a step of the forms written as several torch ops:
# gelu_new = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), quick_gelu = x·σ(1.702·x), …). No entry keeps nothing but
# ``linear``, the identity (its output is its input). Each "new" is one more elementwise kernel for the time model.
_GELU_TANH_PY = ("in", "new", "new", "new")
ACTIVATIONS: dict[str, tuple[str, ...]] = {
    "gelu": ("in",),
    "gelu_pytorch_tanh": ("in",),
    "silu": ("in",),
    "swish": ("in",),
    "mish": ("in",),
    "hardswish": ("in",),
    "relu6": ("in",),
    "leaky_relu": ("in",),
    "relu": ("out",),
    "tanh": ("out",),
    "sigmoid": ("out",),
    "sqrtsoftplus": ("in", "out"),
    "gelu_new": _GELU_TANH_PY,
    "gelu_python_tanh": _GELU_TANH_PY,
    "gelu_accurate": _GELU_TANH_PY,
    "gelu_fast": ("in",) + ("new",) * 6,
    "gelu_python": ("new",) * 3,
    "gelu_10": ("in", "new"),
    "quick_gelu": ("in", "new"),
    "laplace": ("new",),
    "relu2": ("new",),
    "linear": (),
}
# Activations that hold parameters of their own (one module per use): refused, the counts would miss them.
PARAMETRISED_ACTIVATIONS = ("prelu", "xielu")


def check_activation(name, field: str, where: str) -> str:
    """``name`` if the calculator knows what it keeps (``ACTIVATIONS``); else ``ValueError``, one line naming ``field``."""
    if isinstance(name, str) and name in ACTIVATIONS:
        return name
    why = (
        "holds parameters of its own, which the counts do not include"
        if name in PARAMETRISED_ACTIVATIONS
        else f"is not an activation the calculator models (supported: {', '.join(ACTIVATIONS)})"
    )
    raise ValueError(f"{where}: {field} {name!r} {why}")


@dataclass(frozen=True, eq=False)
class Sym:
    """A symbolic tensor of ``nbytes`` bytes; ``grad``: requires grad. Its storage is the object itself, or ``base``'s
    for a view (a chunk of a fused projection, the first token of the hidden states): saving a view keeps its base's
    whole storage."""

    nbytes: Poly
    grad: bool
    name: str = ""
    base: Sym | None = None
    param: bool = False  # a parameter: never counted

    @property
    def storage(self) -> Sym:
        return self.base if self.base is not None else self


@dataclass(frozen=True)
class Conditions:
    """The conditions the activation figure is exact for (docs/design.md "Memory (bytes)").

    Train mode with the model's dropout probabilities (``hidden`` after embeddings, attention output and FFN;
    ``attention`` on the attention probabilities; ``classifier`` before the head), the trunk's attention
    implementation (``sdpa`` or ``eager``), the backend (``cpu``: float dropout masks, math-kernel attention
    under dropout; ``cuda``: bool masks and the memory-efficient kernel, an estimate), ``float_bytes`` per
    activation element (4 = fp32, exact; 2 = bf16 autocast, an estimate)."""

    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    classifier_dropout: float | None = None  # None = hidden_dropout (transformers' rule)
    attention: str = "sdpa"
    backend: str = "cpu"
    float_bytes: int = 4
    train: bool = True  # False: eval mode with grad (every dropout off, the adapters' too)
    extra: tuple = ()  # the family's other dropout rates, sorted (name, p) pairs (ModernBERT's embedding_dropout, …)

    def __post_init__(self) -> None:
        if self.attention not in ("sdpa", "eager"):
            raise ValueError(f"attention implementation {self.attention!r} is not sdpa or eager")
        if self.backend not in ("cpu", "cuda"):
            raise ValueError(f"backend {self.backend!r} is not cpu or cuda")
        for name in ("hidden_dropout", "attention_dropout"):
            p = getattr(self, name)
            if not 0.0 <= p < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {p!r}")

    def rate(self, name: str, default: float = 0.0) -> float:
        """A family dropout rate from ``extra``."""
        return dict(self.extra).get(name, default)

    @property
    def head_dropout(self) -> float:
        return self.hidden_dropout if self.classifier_dropout is None else self.classifier_dropout


class Trace:
    """The storages saved so far by a symbolic forward over ``batch`` sequences of ``seq_len`` tokens."""

    def __init__(self, batch: int, seq_len: int, cond: Conditions) -> None:
        self.batch, self.seq_len, self.cond = batch, seq_len, cond
        self.tokens = batch * seq_len
        self.saved: dict[int, Sym] = {}
        self.shared: dict = {}  # tensors a family computes once per forward and its layers read (``Replay.prepare``)
        self.work: list[tuple] = []  # what each op computes, for the time model (``footprint.timing``)
        self._total = [0, 0, 0]  # Σ of the saved storages' bytes (a, b, c of a Poly), kept as they are saved
        self.times: dict = {}  # its step time per (device profile, precision) (``footprint.timing.step_poly``)

    def log(self, kind: str, *args) -> None:
        """One op's work: ("mm", rows, x_bytes, out, dx, dw) · ("ew", bytes, fwd passes, bwd passes, grad)
        · ("special", bytes, grad) · ("rng", bytes) · ("attn", kernel, heads, width, grad)
        · ("embed", table_rows, width, trains) · ("block", record): a recorded part of the forward replayed
        (``footprint.memory.Record``), its ops in ``record.work``."""
        self.work.append((kind, *args))

    # --- bookkeeping -------------------------------------------------------------------------------
    def new(self, elements: Number, grad: bool, *, item_bytes: int | None = None, name: str = "") -> Sym:
        size = self.cond.float_bytes if item_bytes is None else item_bytes
        if type(elements) is int:
            return Sym(Poly(0, 0, elements * size), grad, name)
        return Sym(elements * size, grad, name)

    def tokens_by(self, width: Number, grad: bool, name: str = "") -> Sym:
        """A (B, n, width) float tensor."""
        return self.new(width * self.tokens, grad, name=name)

    def save(self, *tensors: Sym | None) -> None:
        for t in tensors:
            if t is not None:
                root = t if t.base is None else t.base
                if not root.param and id(root) not in self.saved:
                    self.saved[id(root)] = root
                    n, total = root.nbytes, self._total
                    total[0] += n.a
                    total[1] += n.b
                    total[2] += n.c

    def param(self, elements: Number, trains: bool) -> Sym:
        """A parameter handed to an op as an input (DeBERTa's relative embeddings): kept by reference, never counted."""
        return Sym(Poly.of(elements) * 4, trains, param=True)

    def view(self, x: Sym, elements: Number) -> Sym:
        """A view of ``x`` with ``elements`` float elements (its storage stays ``x``'s)."""
        return Sym(Poly.of(elements) * self.cond.float_bytes, x.grad, base=x.storage)

    def elementwise(self, nbytes: Poly, fwd: int, bwd: int, grad: bool) -> None:
        """The work of an elementwise op that keeps nothing (a copy, a cat, a scale by a constant)."""
        self.log("ew", nbytes, fwd, bwd if grad else 0, grad)

    def keep_fresh(self, nbytes: Poly) -> None:
        """Count ``nbytes`` of saved storages nothing else can reach (the tensors a replayed ``Record`` creates): they
        are never saved twice, so they are counted without being looked up (nor listed in ``saved``)."""
        total = self._total
        total[0] += nbytes.a
        total[1] += nbytes.b
        total[2] += nbytes.c

    @property
    def total(self) -> Poly:
        """The bytes of every storage saved (each once), as a polynomial in d_s."""
        return Poly(*self._total)

    # --- ops -------------------------------------------------------------------------------------
    def linear(
        self,
        x: Sym,
        out: Number,
        trains: bool,
        *,
        weight: Sym | None = None,
        rows: int | None = None,
        name: str = "",
    ) -> Sym:
        """y = x Wᵀ + b with ``out`` output features over ``rows`` rows (default B·n). ``weight``: a computed
        (non-parameter) weight; otherwise W is a parameter that requires grad iff ``trains``."""
        w_grad = weight.grad if weight is not None else trains
        rows = self.tokens if rows is None else rows
        out = out if type(out) is Poly else Poly(0, 0, out)
        self.work.append(("mm", rows, x.nbytes, out, x.grad, w_grad))
        if w_grad:
            self.save(x)
        if weight is not None and x.grad:
            self.save(weight)
        return self.new(out * rows, x.grad or w_grad or trains, name=name)

    def layer_norm(
        self,
        x: Sym,
        trains: bool,
        *,
        rows: int | None = None,
        weight: Sym | None = None,
        bias: Sym | None = None,
    ) -> Sym:
        grad = x.grad or trains or bool(weight and weight.grad) or bool(bias and bias.grad)
        self.log("ew", x.nbytes, 2, 4, grad)
        if grad:
            r = self.tokens if rows is None else rows
            self.save(x, self.new(r, True), self.new(r, True), weight, bias)
        return Sym(x.nbytes, grad)

    def gelu(self, x: Sym) -> Sym:
        return self.activation(x, "gelu")

    def activation(self, x: Sym, name: str) -> Sym:
        """``ACT2FN[name](x)``: keeps what ``ACTIVATIONS[name]`` says (``linear``: x itself, nothing kept)."""
        keeps = ACTIVATIONS[name]
        if not keeps:
            return x
        y = Sym(x.nbytes, x.grad)
        self.log("special", x.nbytes, x.grad)
        for _ in range(keeps.count("new")):
            self.log("ew", x.nbytes, 2, 3, x.grad)
        if x.grad:
            self.save(*(x if k == "in" else y if k == "out" else Sym(x.nbytes, True) for k in keeps))
        return y

    def saves_output(self, x: Sym) -> Sym:
        """tanh, sigmoid, softmax: the output is kept."""
        y = Sym(x.nbytes, x.grad)
        self.log("special", x.nbytes, x.grad)
        if x.grad:
            self.save(y)
        return y

    def add(self, *xs: Sym | None) -> Sym:
        xs = [x for x in xs if x is not None]
        if len(xs) > 1:
            self.log("ew", max((x.nbytes for x in xs), key=lambda p: (p.a, p.b, p.c)), 3, 0, False)
        return Sym(max((x.nbytes for x in xs), key=lambda p: (p.a, p.b, p.c)), any(x.grad for x in xs))

    def mul(self, x: Sym, s: Sym, *, s_is_param: bool = False, out: Poly | None = None) -> Sym:
        """x ⊙ s (broadcast): x kept if s requires grad, s kept (unless a parameter) if x does."""
        self.log("ew", x.nbytes if out is None else out, 3, 3 * (x.grad + s.grad), x.grad or s.grad)
        if s.grad:
            self.save(x)
        if x.grad and not s_is_param:
            self.save(s)
        return Sym(x.nbytes if out is None else out, x.grad or s.grad)

    def dropout(self, x: Sym, p: float) -> Sym:
        if p == 0.0 or not self.cond.train:
            return x
        self.log("rng", x.nbytes)
        self.log("ew", x.nbytes, 6, 3, x.grad)  # mask /= 1 − p, x ⊙ mask; backward: grad ⊙ mask
        if x.grad:
            elements = x.nbytes * 1  # same shape as x
            if self.cond.backend == "cuda":  # bool mask
                self.save(
                    Sym(
                        Poly(
                            elements.a // self.cond.float_bytes,
                            elements.b // self.cond.float_bytes,
                            elements.c // self.cond.float_bytes,
                        ),
                        True,
                    )
                )
            else:
                self.save(Sym(elements, True))
        return Sym(x.nbytes, x.grad)

    def copy(self, x: Sym, times: int = 1) -> Sym:
        """A contiguous copy (``.contiguous()`` of a permuted view; ``times`` > 1: ``.repeat``): keeps nothing."""
        out = x.nbytes * times
        self.elementwise(out, 2, 2, x.grad)
        return Sym(out, x.grad)

    def bmm(self, a: Sym, b: Sym, rows: int, cols: Number) -> Sym:
        """A batched product of ``a`` (``rows`` rows over the batch, its width inner) by ``b`` (inner × ``cols`` per
        batch entry): keeps a if b requires grad, b if a does."""
        self.log("mm", rows, a.nbytes, Poly.of(cols), a.grad, b.grad)
        if b.grad:
            self.save(a)
        if a.grad:
            self.save(b)
        return self.new(Poly.of(cols) * rows, a.grad or b.grad)

    def gather(self, x: Sym, index: Sym, elements: Number) -> Sym:
        """``torch.gather(x, -1, index)`` with ``elements`` outputs: keeps x and the index."""
        out = self.new(elements, x.grad)
        self.elementwise(out.nbytes, 2, 3, x.grad)
        if x.grad:
            self.save(x, index)
        return out

    def divide_by_tensor(self, x: Sym) -> Sym:
        """x / s for a computed 0-dim float tensor s (DeBERTa's √(d_h·f), made anew at each call): keeps s."""
        self.elementwise(x.nbytes, 2, 2, x.grad)
        if x.grad:
            self.save(self.new(1, False, item_bytes=4))
        return Sym(x.nbytes, x.grad)

    def masked_fill(self, x: Sym, mask: Sym) -> Sym:
        """x.masked_fill(mask, value): keeps the mask."""
        self.elementwise(x.nbytes, 2, 2, x.grad)
        if x.grad:
            self.save(mask)
        return Sym(x.nbytes, x.grad)

    def embedding(self, ids: Sym, width: Number, trains: bool, table_rows: int = 0) -> Sym:
        self.log("embed", table_rows, Poly.of(width), trains)
        if trains:
            self.save(ids)
        return self.tokens_by(width, trains)

    def attention(
        self,
        q: Sym,
        k: Sym,
        v: Sym,
        width: Number,
        heads: int,
        dropout: float,
        *,
        mask_grad: bool = False,
        packed: bool = False,
        heads_first: bool = False,
        mask: Sym | None = None,
    ) -> Sym:
        """softmax(q kᵀ/√d_h + mask) v over ``heads`` heads of total ``width``; returns the context (B, n, width)
        as the next linear reads it. ``packed``: v is a view of one fused (B, n, 3·width) projection (q and k too
        unless ``heads_first``); ``heads_first``: q and k are contiguous (B, h, n, d_h) tensors (ModernBERT's RoPE
        outputs: eager matmuls fold them without a copy); ``mask``: a float mask the fused CPU kernel keeps (sdpa
        converts a bool mask, e.g. ModernBERT's sliding window, to a new float tensor per call)."""
        b, n, tr = self.batch, self.seq_len, self
        grad = q.grad or k.grad or v.grad or mask_grad
        dropout = dropout if self.cond.train else 0.0
        math_kernel = self.cond.attention == "eager" or mask_grad or (dropout > 0 and self.cond.backend == "cpu")
        kernel = "flash" if not math_kernel else ("eager" if self.cond.attention == "eager" else "math")
        self.log("attn", kernel, heads, Poly.of(width), grad, dropout)
        if not grad:
            return tr.tokens_by(width, False)
        scores = b * heads * n * n
        if not math_kernel:
            out = tr.tokens_by(width, True)
            if self.cond.backend == "cuda":  # memory-efficient kernel: lse padded to 32 rows (estimate)
                lse = tr.new(b * heads * (-(-n // 32) * 32), True, item_bytes=4)
            else:
                lse = tr.new(b * heads * n, True, item_bytes=4)
            self.save(q, k, v, out, lse, mask)
            return out
        sdpa = self.cond.attention == "sdpa"
        # matmul flattens (B, h, n, d_h) to (B·h, n, d_h): a copy unless that is a view
        folds = b > 1 and heads > 1 and (n > 1 or packed)
        q2 = tr.tokens_by(width, q.grad) if ((folds and not heads_first) or sdpa) else q
        k2 = tr.tokens_by(width, k.grad) if ((folds and not heads_first) or sdpa) else k
        v2 = tr.tokens_by(width, v.grad) if folds else v
        if q2.grad:
            self.save(k2)
        if k2.grad:
            self.save(q2)
        probs = tr.new(scores, True)
        self.save(probs)  # softmax keeps its output
        dropped = probs
        if dropout > 0:  # its work is in the "attn" record
            self.save(Sym(Poly.of(scores) * (1 if self.cond.backend == "cuda" else self.cond.float_bytes), True))
            dropped = Sym(probs.nbytes, True)
        if dropped.grad:
            self.save(v2)
        if v2.grad:
            self.save(dropped)
        return tr.tokens_by(width, True)  # the context: a new storage (bmm output, or its transposed copy)


class ActivationHooks:
    """The symbolic twin of ``pals_core.adapters.TaskAdapter``: the same hooks, in the same places and order,
    acting on ``Sym`` tensors of ``self.trace``. Identity by default; each method's ``cost.py`` overrides what its
    module changes (``Method.activations`` builds it). ``size`` is d_s as a ``Poly`` (S) or None."""

    layer_local = False
    """True when what the hooks do at an adapted layer depends only on the design (less its location) and its size:
    no state carried from one layer to the next, nothing read from ``layers`` but whether it holds i, no tensor made
    outside the layer that two layers share. Every adapted layer of a kind is then replayed once (``layer_key``)."""

    def __init__(self, trace: Trace, model, cfg, layers: tuple[int, ...], size: Poly | None) -> None:
        self.trace, self.model, self.cfg, self.layers, self.size = trace, model, cfg, tuple(layers), size

    def layer_key(self, i: int):
        """What the hooks do at adapted layer i, as a hashable key (``()`` for ``layer_local`` hooks), or None.

        Adapted layers of one kind, input and trainability with the same key are replayed once and the record applied
        at each (``footprint.memory.adapted_layer``: per-layer memory and time derived once per model × method and summed
        per location); None: the layer is replayed in place. A key promises that the hooks act at layer i as at every
        layer of that key, carry no state from one layer to the next, and that any tensor they share between layers is
        in ``trace.shared``. ``tests/test_fast_path.py`` holds the records to the full replay."""
        return () if self.layer_local else None

    # trainability of the base model (``freeze_trunk`` is applied by the caller)
    def embeddings_train(self) -> bool:
        return True

    def layer_trains(self, i: int) -> bool:
        return True

    def adapt_embeddings(self, h: Sym) -> Sym:
        return h

    def adapt_query(self, i: int, h: Sym, q: Sym) -> Sym:
        return q

    def adapt_key(self, i: int, h: Sym, k: Sym) -> Sym:
        return k

    def adapt_value(self, i: int, h: Sym, v: Sym) -> Sym:
        return v

    def attention_mask_grad(self, i: int) -> bool:
        """True when layer i's attention gets a score bias that requires grad (CA-MTL)."""
        return False

    def adapt_attention_output(self, i: int, y: Sym) -> Sym:
        return y

    def attention_norm(self, i: int, x: Sym, trains: bool) -> Sym:
        return self.trace.layer_norm(x, trains)

    def adapt_ffn_activation(self, i: int, g: Sym) -> Sym:
        return g

    def adapt_ffn_output(self, i: int, y: Sym) -> Sym:
        return y

    def parallel_branch(self, i: int, h: Sym) -> Sym | None:
        return None

    def output_norm(self, i: int, x: Sym, trains: bool) -> Sym:
        return self.trace.layer_norm(x, trains)

    def adapt_layer_output(self, i: int, h: Sym) -> Sym:
        return h

    def adapt_top(self, h: Sym) -> Sym:
        return h
