"""The sidebar: the person's question (base model, tasks, budget, methods, location, settings).

Returns the raw widget values; ``inputs.parse_inputs`` checks them. Widget keys are stable (tests and the
page's address address them): model, model_path, config_upload, task_mode, glue_tasks, task_count,
budget_kind, budget_ratio / budget_extra / budget_per-task, methods, location, location_custom, heads,
seq_len, convention, per_task_pooler, d_s, n_top, ffn_ratio. Every widget reads its value from
``st.session_state`` (filled with ``RawInputs``' defaults, or from a link, before the first draw).
"""
from __future__ import annotations

from dataclasses import fields

import streamlit as st

from pals_core.budget import Budget, CONVENTIONS, GLUE_LABELS, METHODS

from .inputs import (BUDGET_DEFAULTS, BUDGET_KINDS, LOCAL, LOCATION_CHOICES, LOCATION_CUSTOM, MODEL_CHOICES,
                     TASKS_COUNT, TASKS_GLUE, TRAINABLE, UPLOAD, RawInputs)

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
WIDGETS = ("model", "model_path", "task_mode", "glue_tasks", "task_count", "budget_kind", "budget_of", "methods", "location",
           "location_custom", "heads", "seq_len", "convention", "per_task_pooler", "d_s", "n_top", "ffn_ratio")


def defaults() -> dict:
    """Every sidebar widget's starting value, by key (from ``RawInputs``: declared once)."""
    raw = RawInputs()
    out = {k: getattr(raw, k) for k in WIDGETS if k in {f.name for f in fields(RawInputs)}}
    out.update({f"budget_{kind}": BUDGET_DEFAULTS[kind] for kind in BUDGET_KINDS})
    out["glue_tasks"] = list(out["glue_tasks"])
    out["methods"] = list(out["methods"])
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


def render() -> RawInputs:
    """Draw the sidebar and return what it holds."""
    sb = st.sidebar
    sb.header("Your question")
    raw = RawInputs()
    raw.model = sb.selectbox("Base model", MODEL_CHOICES, key="model", format_func=_model_label,
                             help="A model the trainer can build (priced exactly as it will train), a preset shape, or a "
                                  "Hugging Face config.json of your own.")
    if raw.model == LOCAL:
        raw.model_path = sb.text_input("Checkpoint folder (holds config.json)", key="model_path")
    elif raw.model == UPLOAD:
        up = sb.file_uploader("Hugging Face config.json", type=["json"], key="config_upload")
        if up is not None:
            raw.config_name, raw.config_bytes = up.name, up.getvalue()
    raw.task_mode = sb.radio("Tasks", [TASKS_GLUE, TASKS_COUNT], key="task_mode", horizontal=True)
    if raw.task_mode == TASKS_GLUE:
        raw.glue_tasks = sb.multiselect("GLUE tasks", list(GLUE_LABELS), key="glue_tasks",
                                        help="Default: the paper's eight tasks. STS-B is a regression (1 output), MNLI has 3.")
    else:
        raw.task_count = int(sb.number_input("Number of tasks", min_value=1, max_value=10_000, step=1, key="task_count",
                                             help="8 = the paper's GLUE tasks; another N = N binary tasks."))
    raw.budget_kind = sb.radio("Budget", BUDGET_KINDS, key="budget_kind", horizontal=True)
    raw.budget_value = sb.text_input(BUDGET_LABELS[raw.budget_kind], key=f"budget_{raw.budget_kind}",
                                     help=BUDGET_HELP[raw.budget_kind])
    if raw.budget_kind == "ratio":
        raw.budget_of = sb.radio("Ratio of", list(Budget.OF), key="budget_of", horizontal=True,
                                 help="base: N_total ≤ B × N_base; non-embedding: N_total − N_emb ≤ B × (N_base − N_emb) "
                                      "(in XLM-R the embeddings are 69 % of the model)")
    raw.methods = sb.multiselect("Methods", list(METHODS), key="methods",
                                 help="; ".join(_method_label(m) for m in METHODS))
    raw.location = sb.selectbox("Location of within-network adapters", LOCATION_CHOICES, key="location",
                                help="all = every layer; top / bottom = the last / first ⌊L/2⌋ layers; or your own list. "
                                     "Methods on top of BERT take none.")
    if raw.location == LOCATION_CUSTOM:
        raw.location_custom = sb.text_input("Adapted layers (0-based)", key="location_custom", placeholder="0,1,2")
    c1, c2 = sb.columns(2)
    raw.heads = int(c1.number_input("Adapter heads h_s", min_value=1, max_value=4096, step=1, key="heads",
                                    help="Attention heads inside PALs / projected attention; d_s is a multiple of h_s."))
    raw.seq_len = int(c2.number_input("Sequence length n", min_value=1, max_value=100_000, step=1, key="seq_len",
                                      help="Tokens per sequence, for FLOPs."))
    raw.convention = sb.radio("Counting convention", CONVENTIONS, key="convention", horizontal=True,
                              help="exact = every torch parameter; paper = without biases and LayerNorms (the paper's tables).")
    raw.per_task_pooler = sb.checkbox("A pooler per task (+d² + d each)", key="per_task_pooler")
    with sb.expander("Advanced"):
        raw.d_s = st.text_input("Fixed d_s (empty = solve the budget)", key="d_s",
                                help="Evaluate every sized method at this adapter size instead of the largest that fits.")
        raw.n_top = int(st.number_input("N_top: layers of the top stacks", min_value=1, max_value=64, key="n_top"))
        raw.ffn_ratio = int(st.number_input("FFN ratio r (f = r·d_s, proj_ffn_top)", min_value=1, max_value=64,
                                            key="ffn_ratio"))
    return raw
