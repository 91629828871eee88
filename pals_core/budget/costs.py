"""Parameter and FLOP cost of a whole multi-task model (docs/design.md "Base models, exact", "Two counting conventions",
"FLOPs", "Budgets and the solver").

N_total = N_base + Σ_t (head_t + pooler_t + adapter_t(d_s))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from ..families.registry import get_family
from ..kinds import get_kind
from ..pricing.config import AdapterConfig, format_location
from ..pricing.method import Method, Part, linear
from ..pricing.poly import Poly
from ..pricing.shape import BaseModel
from .methods import check_config, label_of, resolve_trunk, trunk_text
from .tasks import Task

CONVENTIONS = ("exact", "paper")
DEFAULT_SEQ_LEN = 128


def default_seq_len(longest: int) -> int:
    """The n a question that names none is priced at: ``DEFAULT_SEQ_LEN``, or the model's longest sequence
    (``Family.max_tokens``) when that is shorter."""
    return min(DEFAULT_SEQ_LEN, longest)


TRAIN_STEP_FACTOR = 3  # a training step (forward + backward) costs about 3× the forward


def _paper(convention: str) -> bool:
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r} (exact or paper)")
    return convention == "paper"


@lru_cache(maxsize=512)
def base_params(m: BaseModel, convention: str = "exact") -> int:
    """N_base, the parameters of ``AutoModel.from_config`` for the model's family (``families``); for BERT
    (V + P + Y)·d + 2d + L·(4d² + 2·d·d_ff + 9d + d_ff) + d² + d (with pooler)."""
    return _base_params(m, _paper(convention))


@lru_cache(maxsize=512)
def _base_params(m: BaseModel, paper: bool) -> int:
    return get_family(m.family).base_params(m, paper)  # a sum over the layers: computed once per shape


def embedding_params(m: BaseModel, convention: str = "exact") -> int:
    """The parameters of the embeddings (every lookup table, its norm and projection): N_base minus them is
    the non-embedding count a ``--budget-of non-embedding`` ratio is taken against."""
    return get_family(m.family).embedding_params(m, _paper(convention))


@lru_cache(maxsize=4096)
def head_params(m: BaseModel, task: Task, convention: str = "exact") -> int:
    """One task's head as the family's ``…ForSequenceClassification`` has it: BERT d·C_t + C_t on the pooled [CLS];
    families without a pooler add their per-task dense layer."""
    return get_kind(task.kind).head_params(get_family(m.family), m, task.num_labels, _paper(convention))


@lru_cache(maxsize=512)
def pooler_params(m: BaseModel, convention: str = "exact") -> int:
    """A per-task pooler: d² + d."""
    return linear(m.hidden, m.hidden, paper=_paper(convention)).c


@lru_cache(maxsize=512)
def layer_flops(m: BaseModel, n: int) -> tuple[int, ...]:
    """Forward FLOPs of each layer on n tokens (BERT: 2n·(4d² + 2·d·d_ff) + 4n²·d each); computed once per shape."""
    family = get_family(m.family)
    return tuple(family.layer_flops(m, i, n) for i in range(m.layers))


def base_flops(m: BaseModel, n: int) -> int:
    """Forward FLOPs of the encoder on n tokens: embeddings (ELECTRA's projection) + Σ_i layer_i."""
    return get_family(m.family).embedding_flops(m, n) + sum(layer_flops(m, n))


@dataclass(frozen=True)
class Design:
    """A design resolved against a base model: the polynomials every count is read from."""

    model: BaseModel
    tasks: tuple[Task, ...]
    config: AdapterConfig
    method: Method
    layers: tuple[int, ...]
    convention: str
    seq_len: int
    adapter: Poly  # per task
    adapter_parts: tuple[Part, ...]
    adapter_flops: Poly  # extra forward FLOPs on one task's path
    adapter_flop_parts: tuple[Part, ...]
    heads: tuple[int, ...]  # per task: head (+ pooler) parameters
    n_base: int
    shared: Poly = Poly()  # adapter parameters shared by all tasks (counted once)
    shared_parts: tuple[Part, ...] = ()
    frozen: int = 0  # base-model parameters kept frozen (not trained)
    n_embedding: int = 0  # the embeddings' parameters (a ratio of the non-embedding parameters reads it)

    @property
    def location(self) -> str | None:
        if not self.method.within:
            return None
        return format_location(self.config.location)

    @property
    def extra(self) -> Poly:
        """N_total − N_base over all tasks, as a polynomial in d_s."""
        return self.shared + self.adapter * len(self.tasks) + sum(self.heads)

    @property
    def step(self) -> int:
        """Valid sizes are multiples of this (h_s for attention methods)."""
        return self.config.heads if self.method.attention else 1


def design(
    m: BaseModel,
    tasks: Sequence[Task],
    cfg: AdapterConfig,
    *,
    convention: str = "exact",
    seq_len: int | None = None,
    check_size: bool = True,
) -> Design:
    """Resolve ``cfg`` against model and tasks. ``check_size=False`` skips the d_s checks (solver). ``seq_len``
    None = ``default_seq_len`` (128, or the model's longest when shorter); a longer n than the model takes is
    refused (``Family.check_seq_len``), never priced."""
    cfg = resolve_trunk(cfg)  # freeze_trunk None: the method's own (``Method.trunk``), priced as it trains
    paper = _paper(convention)
    family = get_family(m.family)
    seq_len = default_seq_len(family.max_tokens(m)) if seq_len is None else seq_len
    family.check_seq_len(m, seq_len)
    if not tasks:
        raise ValueError("no tasks given")
    method, layers = check_config(m, cfg, check_size=check_size)
    parts = tuple(method.params(m, layers, cfg, paper))
    flop_parts = tuple(method.flops(m, layers, cfg, seq_len))
    shared_parts = tuple(method.shared_params(m, layers, cfg, paper)) if method.shared_params else ()
    pool = pooler_params(m, convention) if cfg.per_task_pooler else 0
    # a per-task pooler for each pooled task (a tagging or span task's head reads every token, no pooler)
    heads = tuple(head_params(m, t, convention) + (0 if get_kind(t.kind).every_token else pool) for t in tasks)
    n_base = base_params(m, convention)
    if cfg.per_task_pooler and not get_family(m.family).pooler:
        raise ValueError(
            f"{get_family(m.family).title} has no pooler: its task head already holds a per-task dense "
            "layer (drop per_task_pooler)"
        )
    if cfg.freeze_trunk:
        frozen = n_base
    else:
        frozen = method.frozen_base(m, cfg, paper) if method.frozen_base else 0
        if cfg.per_task_pooler:  # the trunk's own pooler stays in N_base but nothing reads it: it does not train
            frozen += pooler_params(m, convention)
    return Design(
        m,
        tuple(tasks),
        cfg,
        method,
        layers,
        convention,
        seq_len,
        sum((p.count for p in parts), Poly()),
        parts,
        sum((p.count for p in flop_parts), Poly()),
        flop_parts,
        heads,
        n_base,
        sum((p.count for p in shared_parts), Poly()),
        shared_parts,
        frozen,
        embedding_params(m, convention),
    )


@dataclass
class Cost:
    """Everything the calculator says about one design at one d_s (the ``rows`` of ``--json``)."""

    method: str
    location: str | None
    d_s: int | None
    d_s_unconstrained: float | None
    params_task_specific: int  # Σ_t (adapter_t + head_t + pooler_t) = N_total − N_base
    params_total: int
    ratio: float  # N_total / N_base (same convention)
    flops_per_seq: int  # one row through the first task's path: a sequence of n tokens (a choice row: k of them)
    flops_base_per_seq: int  # the same through the plain model (trunk, pooler, head)
    flops_all_tasks_per_seq: int  # every task on one input, sharing what can be shared
    feasible: bool
    params_adapter_per_task: int = 0
    params_adapter_shared: int = 0  # conditional modules shared by all tasks (CA-MTL), counted once
    params_trained: int = 0  # params_total minus frozen base parameters
    params_per_task: list = field(default_factory=list)  # head + pooler + adapter, per task
    flops_train_step_per_seq: int = 0
    slack: float | None = None  # budget left over (parameters); None without a budget
    layers: list = field(default_factory=list)
    # on a machine (docs/design.md "Memory (bytes)", "Time", ``budget.machine``): bytes of one training step, of
    # serving, seconds of a step
    memory_train: dict | None = None  # {weights, gradients, optimizer, activations, total}
    memory_infer: int | None = None
    time_step_s: float | None = None
    time_ratio: float | None = None  # step time / the base model's with one task head
    # what sets d_s (params, or a constraint record's name: memory, time, memory_infer), or what a fixed design breaks
    binding: str | None = None
    adds_tasks_later: bool = False  # a task can join a trained run without changing the others (adding_tasks_refused)
    trunk: str = ""  # 'frozen' / 'fine-tuned' (``methods.trunk_text``): the base model as trained (params_trained)

    @property
    def largest_task_share(self) -> float:
        """The largest task's own head + adapter plus its 1/T share of the modules shared by all tasks
        (CA-MTL): what a per-task cap p bounds (docs/design.md "Budgets and the solver")."""
        return max(self.params_per_task) + self.params_adapter_shared / len(self.params_per_task)

    def as_row(self) -> dict:
        return asdict(self)


def flops_ratio(cost: Cost) -> float:
    """Forward FLOPs of one task's path over the plain model's: 1.0 = no overhead (docs/design.md "FLOPs")."""
    return cost.flops_per_seq / cost.flops_base_per_seq


def adds_tasks_later(ds: Design) -> bool:
    """A task can be added to a trained run of this design without changing another task's outputs: nothing the
    tasks share trains — the trunk is frozen (all of N_base) and no module is shared by all tasks (CA-MTL's
    conditional modules, ``Design.shared``). ``adding_tasks_refused`` says why not."""
    return ds.frozen >= ds.n_base and ds.shared.is_zero


def adding_tasks_refused(ds: Design) -> str | None:
    """Why a task cannot be added to a trained run of this design without changing another task's outputs, or None
    when it can (``adds_tasks_later``; ``pals-train --from RUN --add-tasks F``: only the new tasks' parts train).
    Every part but the trunk and the modules shared by all tasks — adapter, head, pooler — is a task's own."""
    if adds_tasks_later(ds):
        return None
    name = label_of(ds.config)
    if ds.frozen < ds.n_base:
        trained = "all" if ds.frozen == 0 else f"{ds.n_base - ds.frozen:,}"
        return (
            f"{name} trains the shared trunk ({trained} of its {ds.n_base:,} parameters): a new "
            "task would change every other task's outputs; train all tasks together, or choose a design that "
            "freezes the trunk (--freeze-trunk)"
        )
    if not ds.shared.is_zero:
        return (
            f"{name} has modules shared by all tasks (conditional layers and the task-embedding network): a new "
            "task would change every other task's outputs; train all tasks together"
        )
    return None


def shared_depth(method: Method, layers: Sequence[int], num_layers: int) -> int:
    """Layers every task computes identically when all tasks run on one input (the paper's shared operations,
    docs/design.md "FLOPs"): those below the lowest adapted layer; all of them for top methods and methods that adapt
    no layer; none for methods that condition the input embeddings on the task (CA-MTL).
    ``forward_flops`` prices ``predict_all`` with it and ``MultiTaskBert.predict_all`` runs it."""
    if method.conditions_input:
        return 0
    if method.within and layers:
        return layers[0]
    return num_layers


@lru_cache(maxsize=1024)
def _plain_flops(
    m: BaseModel, n: int, labels: tuple[tuple[int, str], ...]
) -> tuple[tuple[int, ...], int, int, tuple[int, ...], int]:
    """(each layer, the embeddings, the pooler, each task's head, what the layers compute once per forward whatever
    the batch) forward FLOPs on n tokens, as the model's family counts them and each task's kind runs its head
    (``labels``: (C_t, kind) per task). Fixed by the shape alone, so computed once per shape (plots evaluate
    thousands of sizes)."""
    family = get_family(m.family)
    return (
        tuple(layer_flops(m, n)),
        family.embedding_flops(m, n),
        family.pooler_flops(m),
        tuple(get_kind(kind).head_flops(family, m, c, n) for c, kind in labels),
        sum(family.fixed_flops(m, i) for i in range(m.layers)),
    )


def forward_flops(ds: Design, s: int) -> tuple[int, int, int]:
    """(first task's path, plain model, all tasks with shared operations) forward FLOPs per row: one sequence, or
    the k sequences of a task whose row is several (``Kind.sequences``: a multiple-choice row's candidates).

    Shared operations (docs/design.md "FLOPs"): layers below the lowest adapted layer run once; the rest,
    the adapters, the pooler and the head run once per task. Top methods share the whole trunk.
    Methods that condition the input embeddings on the task (CA-MTL) share no layer.
    The ``shared`` method with a shared pooler runs even the pooler once. A task whose row is several
    sequences reads sequences of its own: it shares nothing with the others, its k sequences each run its whole
    path (``pals-predict`` runs it so).
    """
    m, n = ds.model, ds.seq_len
    layers, embed, pooler, heads, fixed = _plain_flops(m, n, tuple((t.num_labels, t.kind) for t in ds.tasks))
    trunk = embed + sum(layers)
    extra = ds.adapter_flops(s) if ds.method.sized else ds.adapter_flops.c
    poolers = [0 if get_kind(t.kind).every_token else pooler for t in ds.tasks]  # a per-token head reads none
    seqs = [get_kind(t.kind).sequences(t) for t in ds.tasks]

    once = ds.method.fixed_flops(m, ds.layers, ds.config) if ds.method.fixed_flops else 0

    def rows_of(k: int, path: int, fixed: int) -> int:  # k sequences in one forward: what runs once a forward, once
        return k * path - (k - 1) * fixed

    plain = rows_of(seqs[0], trunk + poolers[0] + heads[0], fixed)
    first = plain + rows_of(seqs[0], extra, once)
    lowest = shared_depth(ds.method, ds.layers, m.layers)
    per_task_trunk = sum(layers[lowest:])
    shared_trunk = embed + sum(layers[:lowest])  # the embeddings (ELECTRA's projection) run once
    alike = [i for i, k in enumerate(seqs) if k == 1]  # the tasks that read the same one sequence
    own = sum(rows_of(k, trunk + extra + poolers[i] + heads[i], fixed + once) for i, k in enumerate(seqs) if k != 1)
    if not alike:
        all_tasks = 0
    elif ds.method.name == "shared" and not ds.config.per_task_pooler:
        all_tasks = trunk + max(poolers[i] for i in alike) + sum(heads[i] for i in alike)
    else:
        all_tasks = shared_trunk + sum(per_task_trunk + extra + poolers[i] + heads[i] for i in alike)
    return first, plain, all_tasks + own


def evaluate(
    ds: Design,
    s: int | None,
    *,
    limit: float | None = None,
    per_task_limit: float | None = None,
    unconstrained: float | None = None,
) -> Cost:
    """The cost of design ``ds`` at size ``s`` (None for sizeless methods)."""
    per_adapter = ds.adapter(s) if s is not None else ds.adapter.c
    shared = ds.shared(s) if s is not None else ds.shared.c
    per_task = [per_adapter + h for h in ds.heads]
    extra = shared + sum(per_task)
    total = ds.n_base + extra
    first, plain, all_tasks = forward_flops(ds, s if s is not None else 0)
    cost = Cost(
        method=ds.method.name,
        location=ds.location,
        d_s=s,
        d_s_unconstrained=unconstrained,
        params_task_specific=extra,
        params_total=total,
        ratio=total / ds.n_base,
        flops_per_seq=first,
        flops_base_per_seq=plain,
        flops_all_tasks_per_seq=all_tasks,
        feasible=True,
        params_adapter_per_task=per_adapter,
        params_adapter_shared=shared,
        params_trained=total - ds.frozen,
        params_per_task=per_task,
        flops_train_step_per_seq=TRAIN_STEP_FACTOR * first,
        slack=None,
        layers=list(ds.layers),
        adds_tasks_later=adds_tasks_later(ds),
        trunk=trunk_text(ds.config, ds.model),
    )
    if limit is not None:
        cost.feasible, cost.slack = extra <= limit, limit - extra
    if per_task_limit is not None:
        worst = cost.largest_task_share  # modules shared by all tasks (CA-MTL) count by their 1/T share
        cost.feasible = cost.feasible and worst <= per_task_limit
        cost.slack = per_task_limit - worst if cost.slack is None else min(cost.slack, per_task_limit - worst)
    return cost


def breakdown(ds: Design, s: int | None) -> list[dict]:
    """Where one task's parameters go: one row per part (name, layer, params, shared), head and pooler last.

    Parts shared by all tasks (CA-MTL's conditional modules) come first with ``shared=True``."""
    rows = [{"part": p.name, "layer": p.layer, "params": p.count(s or 0), "shared": True} for p in ds.shared_parts]
    rows += [{"part": p.name, "layer": p.layer, "params": p.count(s or 0), "shared": False} for p in ds.adapter_parts]
    rows.append(
        {
            "part": "task head",
            "layer": None,
            "params": head_params(ds.model, ds.tasks[0], ds.convention),
            "shared": False,
        }
    )
    if ds.config.per_task_pooler:
        rows.append(
            {"part": "pooler", "layer": None, "params": pooler_params(ds.model, ds.convention), "shared": False}
        )
    return rows
