"""Parameter cost of a run, from the calculator (``pals_core.budget``), checked against the module.

    total          N_total = N_base + Σ_t (adapter_t + head_t + pooler_t)      (exact convention)
    task_specific  N_total − N_base
    per_task       {t: adapter_t + head_t + pooler_t}
    trained        what the optimiser updates (the module's ``requires_grad`` parameters)

The calculator's numbers are the report; the instantiated model must hold exactly ``total`` parameters
and each task exactly its ``per_task`` count, else the run stops before training (the calculator and
the modules disagree — a bug to fix, not to train through).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace

from ..base_model import model_shape
from ..budget.costs import Cost, design
from ..budget.methods import label_of
from ..budget.solver import Budget, at_size, solve
from ..budget.tasks import Task
from ..data.load import TaskSplits, describe_data, read_tasks
from ..families.registry import get_family
from ..kinds import DEFAULT_KIND
from ..methods.registry import get_method
from ..pricing.config import AdapterConfig
from ..pricing.shape import BaseModel
from .config import data_differences
from .extend import added_task_names, base_config, base_data, check_design


def design_cost(shape: BaseModel, tasks: Sequence[Task], adapter: AdapterConfig, budget: Budget | None = None) -> Cost:
    """The calculator's cost of this design (exact convention), checked against ``budget`` when one is given."""
    return at_size(design(shape, list(tasks), adapter), adapter.d_s, budget)


def solve_d_s(shape: BaseModel, tasks: Sequence[Task], adapter: AdapterConfig, budget: Budget) -> int | None:
    """The calculator's largest d_s within ``budget`` (exact convention); None for sizeless methods.
    ``ValueError`` if even the smallest size does not fit."""
    probe = AdapterConfig.from_dict({**adapter.as_dict(), "d_s": None})
    ds = design(shape, list(tasks), probe, check_size=False)
    cost = solve(ds, budget)
    if not cost.feasible:
        raise ValueError(
            f"the budget {budget.describe(ds.n_base, n_embedding=ds.n_embedding)} does not fit {label_of(probe)} on this model and these "
            f"tasks: its smallest design already needs {cost.ratio:.4f}×"
        )
    return cost.d_s


def run_params(
    model,
    shape: BaseModel,
    tasks: Sequence[Task],
    adapter: AdapterConfig,
    trained_tasks: Sequence[str] | None = None,
) -> dict:
    """The ``params`` block of summary.json; raises ``RuntimeError`` if the module disagrees. ``trained_tasks``: a run
    adding tasks to another trains only theirs (``extend.py``): Σ of their per-task counts."""
    cost = design_cost(shape, tasks, adapter)
    names = [t.name for t in tasks]
    per_task = dict(zip(names, (int(x) for x in cost.params_per_task)))
    module_total = sum(p.numel() for p in model.parameters())
    if module_total != cost.params_total:
        raise RuntimeError(
            f"the model holds {module_total:,} parameters, the calculator counts {cost.params_total:,} "
            f"for {adapter.method} d_s={adapter.d_s}"
        )
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if (
        getattr(model, "shared_adapter", None) is None
    ):  # methods with modules shared by all tasks split them differently
        for t in names:
            held = sum(p.numel() for _, p in model.named_task_parameters(t))
            if held != per_task[t]:
                raise RuntimeError(
                    f"task {t!r} holds {held:,} parameters in the model, the calculator counts {per_task[t]:,}"
                )
    expected = cost.params_trained if trained_tasks is None else sum(per_task[t] for t in trained_tasks)
    if trained != expected:
        raise RuntimeError(f"the optimiser would train {trained:,} parameters, the calculator expects {expected:,}")
    return {
        "total": int(cost.params_total),
        "task_specific": int(cost.params_task_specific),
        "per_task": per_task,
        "trained": int(trained),
        "ratio": float(cost.ratio),
        "d_s": adapter.d_s,
    }


def run_tasks(cfg) -> list[Task]:
    """The calculator's tasks of a resolved run: each task's name and C_t, as its data says."""
    return [
        Task(t, cfg.data[t]["num_labels"], (cfg.data[t].get("record") or {}).get("kind", DEFAULT_KIND))
        for t in cfg.tasks
    ]


def read_run_rows(cfg, records=None) -> dict[str, TaskSplits]:
    """Every task's rows as a run reads them (``read_tasks``: GLUE's missing files named first, then every row
    checked): a run adding tasks (``--from``) reads the base run's tasks as the base run did (its seed), and only the
    dev rows it measures again."""
    trained = added_task_names(cfg)
    kept = [t for t in cfg.tasks if t not in trained]  # --from: the base run's tasks
    base_seed = base_config(cfg.from_run).get("seed", cfg.seed) if cfg.from_run else cfg.seed
    return read_tasks(
        cfg.records() if records is None else records,
        glue_dir=cfg.glue_dir,
        source=cfg.glue_source,
        seed=cfg.seed,
        seeds={t: base_seed for t in kept},
        dev_only=kept,
    )


def resolve(cfg, *, rows: bool = False):
    """A validated copy of ``cfg`` (a ``TrainConfig``) with d_s taken from its budget (if one is given), checked
    against the calculator on the model the run will build. ``ValueError`` names the problem (unknown task or
    method, d_s not divisible, a design over its budget, …). Torch-free: the explorer calls it before launching.

    ``rows`` (a run about to start: ``train``, ``pals-train``): every task's rows are read first (``read_run_rows``;
    a bad file or row is named before the design is priced, since a task's C_t comes from its rows) and the run's
    data described from that read — each file's sha256 is the one of the bytes its rows come from, label names not
    declared are those rows' — and the rows are handed on to the trainer's ``check_data``: a run opens each data
    file once. Without, the files are hashed (remembered per file change) and nothing else is read."""
    cfg = copy.deepcopy(_without_rows(cfg))
    records = cfg.validate()
    read = read_run_rows(cfg, records) if rows else None
    trained = set(added_task_names(cfg))
    refused = [r.kind_of for r in records if r.name in trained and r.kind_of.entropy_sampling is None]
    if cfg.sampling == "mt_uncertainty" and refused:
        raise ValueError(refused[0].entropy_refusal)
    if cfg.from_run:  # the base run's tasks as it recorded them (their files checked); the added ones described now
        base = base_data(cfg)
        own = [r for r in records if r.name not in trained and r.glue is None and r.name in base]
        changed = data_differences(
            {r.name: base[r.name] for r in own},
            describe_data(own, glue_dir=cfg.glue_dir, source=cfg.glue_source, rows=read),
        )
        if changed:  # their dev scores are measured again at the end: on the rows the base run was trained for
            raise ValueError(
                f"--from {cfg.from_run}: the base run's task files changed since it trained ({'; '.join(changed)}): "
                "put them back as they were"
            )
        cfg.data = {
            **{t: d for t, d in base.items() if t in cfg.tasks},
            **describe_data(
                [r for r in records if r.name in trained], glue_dir=cfg.glue_dir, source=cfg.glue_source, rows=read
            ),
        }
        missing = [r for r in records if r.name not in cfg.data]  # a base run made before records were recorded
        cfg.data.update(
            describe_data(missing, glue_dir=cfg.glue_dir, source=cfg.glue_source, rows=read) if missing else {}
        )
        cfg.data = {t: cfg.data[t] for t in cfg.tasks}
    else:
        cfg.data = describe_data(records, glue_dir=cfg.glue_dir, source=cfg.glue_source, rows=read)
    shape = model_shape(cfg.model)
    tasks = run_tasks(cfg)
    method = get_method(cfg.adapter.method)
    if cfg.budget is not None and method.sized:
        d_s = solve_d_s(shape, tasks, cfg.adapter, cfg.budget)
        if cfg.adapter.d_s is not None and cfg.adapter.d_s != d_s:
            raise ValueError(
                f"give d_s or a budget, not both (the budget {cfg.budget.describe()} gives d_s = {d_s}, "
                f"not {cfg.adapter.d_s})"
            )
        cfg.adapter = replace(cfg.adapter, d_s=d_s)
    if cfg.from_run:
        check_design(design(shape, tasks, cfg.adapter))
    cost = design_cost(shape, tasks, cfg.adapter, cfg.budget)  # raises ValueError for an invalid design
    if not cost.feasible:
        raise ValueError(
            f"{label_of(cfg.adapter)} needs {cost.ratio:.4f}× the base model "
            f"({cost.params_task_specific:,} task-specific parameters), over the budget {cfg.budget.describe()}"
        )
    try:
        get_family(shape.family).check_seq_len(shape, cfg.max_len)
    except ValueError as e:
        raise ValueError(f"max_len: {e}") from None
    check_memory(cost.params_total)
    cfg._resolved = _resolved_key(cfg)
    if read is not None:
        cfg._rows = read
    return cfg


def _without_rows(cfg):
    """``cfg`` without the rows ``resolve`` handed on (a copy need not hold them)."""
    if getattr(cfg, "_rows", None) is None:
        return cfg
    out = copy.copy(cfg)
    del out._rows
    return out


def take_rows(cfg) -> dict[str, TaskSplits] | None:
    """The rows ``resolve(cfg, rows=True)`` read, once (then let go: the set-up tokenises them and the run does not
    hold them); None for a config resolved without them, or changed since."""
    held = getattr(cfg, "_rows", None)
    if held is None:
        return None
    del cfg._rows
    return held if is_resolved(cfg) else None


def is_resolved(cfg) -> bool:
    """Whether ``cfg`` is what ``resolve`` returned, unchanged since: a caller that resolved a run's config (to refuse
    it before anything else) hands it on, and the trainer does not resolve it again (its files hashed again)."""
    return getattr(cfg, "_resolved", None) == _resolved_key(cfg)


def _resolved_key(cfg) -> str:
    import json

    return json.dumps(cfg.as_dict(), sort_keys=True, default=str)


BYTES_PER_TRAINED_PARAM = 16  # fp32 weight, gradient and AdamW's two moments


def check_memory(params: int) -> None:
    """Refuse a model whose training state (16 bytes a parameter) exceeds this machine's memory, naming both."""
    import os

    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    need = BYTES_PER_TRAINED_PARAM * params
    if ram > 0 and need > ram:
        raise ValueError(
            f"the model has {params:,} parameters: training needs about {need / 2**30:,.1f} GiB "
            f"(weights, gradients and AdamW state), this machine has {ram / 2**30:,.1f} GiB"
        )
