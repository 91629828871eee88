"""The "Memory & step time" view: what each design costs on the machine that trains or serves it (SPEC §9–10).

Device, batch and precision are inputs of this view; every figure comes from the calculator
(``pals_core.budget.machine.resources``: ``memory_train`` {weights, gradients, optimizer, activations},
``memory_infer``, ``time_step_s``, ``time_ratio``). Two figures: the training-memory breakdown per design (stacked
bars) and the step time against the task-specific parameters, beside the table. No maths of its own.
"""
from __future__ import annotations

import copy
from typing import Optional

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pals_core.budget import Cost
from pals_core.budget.machine import Machine, default_device, resources, supported
from pals_core.budget.memory import PRECISIONS
from pals_core.budget.timing import builtin_devices, local_profile_path

from .calc import design_of, key_of, label
from .inputs import Inputs

PARTS = ("weights", "gradients", "optimizer", "activations")
GIB = 2 ** 30


def devices() -> list[str]:
    """Built-in profiles, and ``local`` once pals-calibrate has measured this machine."""
    return [d for d in builtin_devices() if d != "local" or local_profile_path().is_file()]


DEFAULT_BATCH = 32


def page_machine() -> Machine:
    """The page's one machine — this view's device, batch and precision (``local`` when calibrated, else ``h100``,
    as pals-budget) — which the answer's step time and memory use too, so every figure names the same device."""
    device = st.session_state.get("machine_device") or default_device()
    return Machine(batch=int(st.session_state.get("machine_batch") or DEFAULT_BATCH), device=device,
                   precision=st.session_state.get("machine_precision") or "fp32")


def priced(inp: Inputs, costs: list[Cost], machine: Machine) -> list[Cost]:
    """Copies of the table's rows with the machine figures filled in (designs of unmodelled families are skipped),
    under the question's model conditions (``Inputs.conditions``: its config's dropout and attention)."""
    out = []
    for c in costs:
        ds = design_of(inp, key_of(c))
        if not supported(ds):
            continue
        row = copy.copy(c)
        resources(row, ds, machine, inp.conditions)  # the model's own dropout and attention
        out.append(row)
    return out


def frame(rows: list[Cost]) -> pd.DataFrame:
    return pd.DataFrame([{
        "design": label(key_of(c)), "d_s": c.d_s, "task-specific params": c.params_task_specific,
        **{f"{p} GiB": c.memory_train[p] / GIB for p in PARTS}, "train GiB": c.memory_train["total"] / GIB,
        "serve GiB": c.memory_infer / GIB, "step s": c.time_step_s, "step × base": c.time_ratio} for c in rows])


def fig_memory(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure([go.Bar(name=p, x=list(df["design"]), y=df[f"{p} GiB"].tolist()) for p in PARTS])
    fig.update_layout(barmode="stack", yaxis_title="training memory, GiB", height=380, margin=dict(t=30, b=10))
    return fig


def fig_time(df: pd.DataFrame, chosen: Optional[str]) -> go.Figure:
    fig = go.Figure(go.Scatter(x=df["task-specific params"].tolist(), y=df["step × base"].tolist(), mode="markers+text",
                               text=list(df["design"]),
                               textposition="top center",
                               marker=dict(size=[14 if d == chosen else 8 for d in df["design"]])))
    fig.update_layout(xaxis_title="task-specific parameters", yaxis_title="training step time / base model's",
                      height=380, margin=dict(t=30, b=10))
    return fig


def render(inp: Inputs, costs: list[Cost], chosen: Optional[Cost]) -> None:
    names = devices()
    a, b, c = st.columns(3)
    default = default_device()
    device = a.selectbox("Device", names, index=names.index(default) if default in names else 0, key="machine_device",
                         help="the answer's step time and memory use this device too")
    batch = int(b.number_input("Batch (sequences per step)", min_value=1, max_value=4096, value=DEFAULT_BATCH, step=1,
                               key="machine_batch"))
    precision = c.selectbox("Precision", list(PRECISIONS), key="machine_precision",
                            help="fp32: exact memory; bf16: a mixed-precision estimate")
    machine = Machine(batch=batch, device=device, precision=precision)
    rows = priced(inp, costs, machine)
    if not rows:
        st.info("Memory and step time are modelled for BERT-family models only.")
        return
    df = frame(rows)
    st.caption(f"{machine.profile().name} · B = {batch} · n = {inp.seq_len} · {precision}. Training memory = weights + "
               "gradients + AdamW state + the activations autograd saves (exact in fp32); step time from the device "
               "profile (pals-calibrate measures `local`).")
    st.plotly_chart(fig_memory(df), width="stretch", key="fig_memory")
    st.plotly_chart(fig_time(df, label(key_of(chosen)) if chosen is not None else None), width="stretch",
                    key="fig_step_time")
    st.dataframe(df, hide_index=True, width="stretch")
