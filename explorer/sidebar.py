"""The sidebar: the person's question (base model, tasks, budget, methods, location, settings).

Returns the raw widget values; ``inputs.parse_inputs`` checks them. Widget keys are stable (tests and the
page's address address them): model, model_path, config_upload, task_mode, glue_tasks, task_count,
tasks_file, tasks_example, tasks_upload, budget_kind, budget_ratio / budget_extra / budget_per-task, methods,
location, location_custom, heads, seq_len, convention, per_task_pooler, d_s, n_top, ffn_ratio, and one text field per
machine constraint record (``pals_core.footprint.constraints.CONSTRAINTS``: ``machine_<field>``, e.g. machine_memory,
machine_memory_infer; ``inputs.bound_key``). Every widget reads its value from ``st.session_state`` (filled with
``RawInputs``' defaults, or from a link, before the first draw).
"""

from __future__ import annotations

from dataclasses import fields

import streamlit as st

from pals_core.budget.costs import CONVENTIONS
from pals_core.budget.solver import Budget
from pals_core.footprint.constraints import CONSTRAINTS
from pals_core.methods.registry import METHODS
from pals_core.supervise.roots import runs_root
from pals_core.tasks.glue_tasks import GLUE_LABELS

from .inputs import (
    BUDGET_DEFAULTS,
    BUDGET_KINDS,
    LOCAL,
    LOCATION_CHOICES,
    LOCATION_CUSTOM,
    MODEL_CHOICES,
    SIDEBAR_RANGES,
    TASK_MODES,
    TASKS_FILE,
    TASKS_GLUE,
    TRAINABLE,
    UPLOAD,
    RawInputs,
    bound_key,
    example_tasks_path,
    file_model_widgets,
    one_line,
    save_upload,
)

BUDGET_LABELS = {
    "ratio": "Budget ratio B: N_total ≤ B × N_base",
    "extra": "Extra parameters over all tasks (e.g. 15M, 250k)",
    "per-task": "Cap per task: head + adapter (e.g. 1.9M)",
}
BUDGET_HELP = {
    "ratio": "1.13 means the whole multi-task model may hold at most 13 % more parameters than one base model.",
    "extra": "N_total − N_base ≤ this, summed over every task. Accepts 15M, 1.9M, 250k, 1500000.",
    "per-task": "Every task's own head + adapter must fit under this. Accepts 15M, 1.9M, 250k.",
}
WIDGETS = (
    "model",
    "model_path",
    "task_mode",
    "glue_tasks",
    "task_count",
    "tasks_file",
    "budget_kind",
    "budget_of",
    "methods",
    "location",
    "location_custom",
    "heads",
    "seq_len",
    "convention",
    "per_task_pooler",
    "d_s",
    "n_top",
    "ffn_ratio",
)


def defaults() -> dict:
    """Every sidebar widget's starting value, by key (from ``RawInputs``: declared once)."""
    raw = RawInputs()
    out = {k: getattr(raw, k) for k in WIDGETS if k in {f.name for f in fields(RawInputs)}}
    out.update({f"budget_{kind}": BUDGET_DEFAULTS[kind] for kind in BUDGET_KINDS})
    out["glue_tasks"] = list(out["glue_tasks"])
    out["methods"] = list(out["methods"])
    out.update({bound_key(c): "" for c in CONSTRAINTS})  # no bound
    return out


def init_state(overrides: dict) -> None:
    """Fill ``st.session_state`` once per session: defaults, then what a link sets."""
    for key, value in {**defaults(), **overrides}.items():
        st.session_state.setdefault(key, value)


def _method_label(name: str) -> str:
    m = METHODS.get(name)
    return f"{name} — {m.title}" if m else name


def _model_label(name: str) -> str:
    return name if name in TRAINABLE or name == UPLOAD else f"{name} (shape only)"


def _open_example() -> None:
    st.session_state["tasks_file"] = example_tasks_path()
    st.session_state.pop("_upload_error", None)
    take_file_model()


def take_file_model() -> None:
    """The question's model becomes the one the tasks file names (``model:``), as ``pals-budget --tasks-file`` and
    ``pals-train --tasks-file`` take it; choosing another model afterwards overrides it, as ``--model`` does."""
    st.session_state.update(file_model_widgets(st.session_state.get("tasks_file") or ""))


def _save_upload() -> None:
    """An uploaded tasks file → saved under the runs folder, its path in the path field (or one error line)."""
    up = st.session_state.get("tasks_upload")
    st.session_state.pop("_upload_error", None)
    if up is None:  # the file was removed from the uploader: the path stays
        return
    try:
        path = save_upload(up.getvalue(), runs_root())
    except (ValueError, OSError) as e:
        st.session_state["_upload_error"] = f"{up.name}: {one_line(e)}"
        return
    st.session_state["tasks_file"] = str(path)
    take_file_model()


def _tasks_file(sb, raw: RawInputs) -> None:
    """The tasks-file source: a path, the example, or an upload (saved on the server, so a link can name it)."""
    raw.tasks_file = sb.text_input(
        "Tasks file (YAML or JSON)",
        key="tasks_file",
        on_change=take_file_model,
        placeholder="path/to/tasks.yaml",
        help="A `tasks:` mapping of name → {train, dev, text, label, kind, …} or {glue: rte}; "
        "paths relative to the file's folder. Priced as `pals-budget --tasks-file`.",
    )
    sb.button(
        "Open the example tasks",
        key="tasks_example",
        on_click=_open_example,
        help="examples/tasks/tasks.yaml: a few small tasks of each kind.",
    )
    sb.file_uploader(
        "…or upload one",
        type=["yaml", "yml", "json"],
        key="tasks_upload",
        on_change=_save_upload,
        help="Kept on the server under <runs folder>/uploads/ so that links and runs can name it.",
    )
    sb.caption(
        "Paths in an uploaded file must be absolute: it is not stored beside its data. For data beside the "
        "file, type the file's path instead."
    )
    if st.session_state.get("_upload_error"):
        sb.error(st.session_state["_upload_error"])


def _bounds(sb, raw: RawInputs) -> None:
    """A text field per machine constraint (its record's label and help; empty = no bound), open when one is set."""
    keys = {c.field: bound_key(c) for c in CONSTRAINTS}
    with sb.expander("Machine bounds", expanded=any(str(st.session_state.get(k) or "").strip() for k in keys.values())):
        st.caption(
            "Each bound lowers d_s like the budget, priced on the Memory & step time view's device, batch and "
            "precision (as pals-budget's flags of the same name)."
        )
        raw.bounds = {
            c.field: st.text_input(
                c.label,
                key=keys[c.field],
                placeholder="none",
                help=f"{c.help} (pals-budget --{c.field.replace('_', '-')})",
            )
            for c in CONSTRAINTS
        }


def render() -> RawInputs:
    """Draw the sidebar and return what it holds."""
    sb = st.sidebar
    sb.header("Your question")
    raw = RawInputs()
    raw.model = sb.selectbox(
        "Base model",
        MODEL_CHOICES,
        key="model",
        format_func=_model_label,
        help="A model the trainer can build (priced exactly as it will train), a preset shape, or a "
        "Hugging Face config.json of your own.",
    )
    if raw.model == LOCAL:
        raw.model_path = sb.text_input("Checkpoint folder (holds config.json)", key="model_path")
    elif raw.model == UPLOAD:
        up = sb.file_uploader("Hugging Face config.json", type=["json"], key="config_upload")
        if up is not None:
            raw.config_name, raw.config_bytes = up.name, up.getvalue()
    raw.task_mode = sb.radio("Tasks", list(TASK_MODES), key="task_mode", horizontal=True)
    if raw.task_mode == TASKS_FILE:
        _tasks_file(sb, raw)
    elif raw.task_mode == TASKS_GLUE:
        raw.glue_tasks = sb.multiselect(
            "GLUE tasks",
            list(GLUE_LABELS),
            key="glue_tasks",
            help="Default: the paper's eight tasks. STS-B is a regression (1 output), MNLI has 3.",
        )
    else:
        raw.task_count = int(
            sb.number_input(
                "Number of tasks",
                *SIDEBAR_RANGES["task_count"],
                step=1,
                key="task_count",
                help="8 = the paper's GLUE tasks; another N = N binary tasks.",
            )
        )
    raw.budget_kind = sb.radio("Budget", BUDGET_KINDS, key="budget_kind", horizontal=True)
    raw.budget_value = sb.text_input(
        BUDGET_LABELS[raw.budget_kind], key=f"budget_{raw.budget_kind}", help=BUDGET_HELP[raw.budget_kind]
    )
    if raw.budget_kind == "ratio":
        raw.budget_of = sb.radio(
            "Ratio of",
            list(Budget.OF),
            key="budget_of",
            horizontal=True,
            help="base: N_total ≤ B × N_base; non-embedding: N_total − N_emb ≤ B × (N_base − N_emb) "
            "(in XLM-R the embeddings are 69 % of the model)",
        )
    raw.methods = sb.multiselect(
        "Methods", list(METHODS), key="methods", help="; ".join(_method_label(m) for m in METHODS)
    )
    raw.location = sb.selectbox(
        "Location of within-network adapters",
        LOCATION_CHOICES,
        key="location",
        help="all = every layer; top / bottom = the last / first ⌊L/2⌋ layers; or your own list. "
        "Methods on top of BERT take none.",
    )
    if raw.location == LOCATION_CUSTOM:
        raw.location_custom = sb.text_input("Adapted layers (0-based)", key="location_custom", placeholder="0,1,2")
    c1, c2 = sb.columns(2)
    raw.heads = int(
        c1.number_input(
            "Adapter heads h_s",
            *SIDEBAR_RANGES["heads"],
            step=1,
            key="heads",
            help="Attention heads inside PALs / projected attention; d_s is a multiple of h_s.",
        )
    )
    raw.seq_len = int(
        c2.number_input(
            "Sequence length n",
            *SIDEBAR_RANGES["seq_len"],
            step=1,
            key="seq_len",
            help="Tokens per sequence, for FLOPs.",
        )
    )
    raw.convention = sb.radio(
        "Counting convention",
        CONVENTIONS,
        key="convention",
        horizontal=True,
        help="exact = every torch parameter; paper = without biases and LayerNorms (the paper's tables).",
    )
    raw.per_task_pooler = sb.checkbox("A pooler per task (+d² + d each)", key="per_task_pooler")
    _bounds(sb, raw)
    with sb.expander("Advanced"):
        raw.d_s = st.text_input(
            "Fixed d_s (empty = solve the budget)",
            key="d_s",
            help="Evaluate every sized method at this adapter size instead of the largest that fits.",
        )
        raw.n_top = int(st.number_input("N_top: layers of the top stacks", min_value=1, max_value=64, key="n_top"))
        raw.ffn_ratio = int(
            st.number_input("FFN ratio r (f = r·d_s, proj_ffn_top)", min_value=1, max_value=64, key="ffn_ratio")
        )
    return raw
