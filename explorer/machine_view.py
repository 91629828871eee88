"""The "Memory & step time" view: what each design costs on the machine that trains or serves it (docs/design.md "Memory
(bytes)", "Time").

Device, batch and precision are inputs of this view; every figure comes from the calculator
(``pals_core.budget.machine.resources``: ``memory_train`` {weights, gradients, optimizer, activations},
``memory_infer``, ``time_step_s``, ``time_ratio``). Two figures: the training-memory breakdown per design (stacked
bars) and the step time against the task-specific parameters, beside the table. No maths of its own.
"""

from __future__ import annotations

import copy

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pals_core.budget import display
from pals_core.budget.costs import Cost
from pals_core.budget.machine import Machine, default_device, resources, supported
from pals_core.budget.recommend import key_of, label
from pals_core.footprint.here import elsewhere
from pals_core.footprint.memory import PRECISIONS
from pals_core.footprint.timing import builtin_devices, local_profile_path

from .calc import design_of
from .figures.legibility import clusters, group_text, label_annotation, place_labels
from .figures.style import location_symbol, method_color
from .inputs import Inputs

PARTS = ("weights", "gradients", "optimizer", "activations")
GIB = display.GIB


def devices() -> list[str]:
    """Built-in profiles, and ``local`` once pals-calibrate has measured this machine."""
    return [d for d in builtin_devices() if d != "local" or local_profile_path().is_file()]


DEFAULT_BATCH = 32


def page_machine() -> Machine:
    """The page's one machine — this view's device, batch and precision (``local`` when calibrated, else ``h100``,
    as pals-budget) — which the answer's step time and memory use too, so every figure names the same device."""
    device = st.session_state.get("machine_device") or default_device()
    return Machine(
        batch=int(st.session_state.get("machine_batch") or DEFAULT_BATCH),
        device=device,
        precision=st.session_state.get("machine_precision") or "fp32",
    )


def page_machine_key() -> tuple:
    """The page's machine as a cache key (batch, device, precision): the rows are solved on it when the question
    sets machine bounds."""
    m = page_machine()
    return m.batch, m.device, m.precision


def machine_of_key(key: tuple) -> Machine | None:
    """``page_machine_key``'s machine back (None for an empty key: the default machine)."""
    return Machine(batch=key[0], device=key[1], precision=key[2]) if key else None


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


COLUMNS = {  # how the table writes each number (one rounding: pals_core.budget.display, as pals-budget)
    "train GiB": f"%.{display.GIB_DIGITS}f",
    "step × base": f"%.{display.STEP_DIGITS}f",
    "task-specific params": "localized",
    "serve GiB": f"%.{display.GIB_DIGITS}f",
    "step s": "%.4g",
    **{f"{p} GiB": f"%.{display.GIB_DIGITS}f" for p in PARTS},
}


def frame(rows: list[Cost]) -> pd.DataFrame:
    """One row per design: what it needs to train (GiB) and how slow a step is, first; the parts of the memory after.
    Numbers as the answer and pals-budget write them (``display``); '—' where a value does not apply."""
    return pd.DataFrame(
        [
            {
                "design": label(key_of(c)),
                "fits": "yes" if c.feasible else "no",
                "d_s": "—" if c.d_s is None else f"{c.d_s:,}",
                "train GiB": display.gib(c.memory_train["total"]),
                "step × base": None if c.time_ratio is None else display.step_ratio(c.time_ratio),
                "task-specific params": c.params_task_specific,
                "serve GiB": display.gib(c.memory_infer),
                "step s": c.time_step_s,
                **{f"{p} GiB": display.gib(c.memory_train[p]) for p in PARTS},
            }
            for c in rows
        ]
    )


OVER = " (over budget)"  # how a design over the question's budget is named in this view's figures and table


def shown_name(c: Cost) -> str:
    """A design's name in this view: marked when it is over the budget, as in every view of the page."""
    return label(key_of(c)) + ("" if c.feasible else OVER)


def fig_memory(rows: list[Cost]) -> go.Figure:
    """Training memory per design, stacked by part; a design over the budget is named so and drawn pale and hatched."""
    names = [shown_name(c) for c in rows]
    fig = go.Figure(
        [
            go.Bar(
                name=p,
                x=names,
                y=[c.memory_train[p] / display.GIB for c in rows],
                marker=dict(
                    opacity=[1.0 if c.feasible else 0.35 for c in rows],
                    pattern=dict(shape=["" if c.feasible else "/" for c in rows]),
                ),
                hovertemplate="%{x}<br>" + p + ": %{y:.2f} GiB<extra></extra>",
            )
            for p in PARTS
        ]
    )
    over = sum(not c.feasible for c in rows)
    fig.update_layout(
        barmode="stack",
        yaxis_title="training memory, GiB",
        height=480,
        margin=dict(t=30, b=10),
        xaxis=dict(tickangle=-90, automargin=True, tickfont=dict(size=10)),  # every design named, none skipped
        title=dict(
            text=f"{over} design(s) over the budget: pale, hatched, named so" if over else "",
            font=dict(size=12, color="#555"),
            x=0,
            xanchor="left",
        ),
    )
    return fig


TIME_HEIGHT_PX = 540  # the step-time figure, and its fixed margins (so that its plot area is known to the labels)
TIME_MARGIN = dict(l=70, r=150, t=36, b=56)  # the right margin holds the labels of the designs that spend it all
TIME_PLOT_WIDTHS_PX = (320, 430, 570, 720, 860)  # its plot area on a 1000 … 1600 px page: labels clear at each
MARKER_PX, CHOSEN_PX = 10, 15


def _span(values: list[float], pad: float) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    extra = (hi - lo) * pad or max(abs(hi), 1.0) * pad
    return lo - extra, hi + extra


def fig_time(rows: list[Cost], chosen: str | None) -> go.Figure:
    """Step time × base against task-specific parameters, a point per design (colour = method, marker = location,
    as in every figure of the page), each named: its label beside its marker, or moved clear of a crowd with a leader
    line (``legibility.place_labels``: no label over another or over a marker at any width the page draws it); the
    designs whose markers touch share one label. Hover gives each design's numbers."""
    rows = [c for c in rows if c.time_ratio is not None]
    names = [shown_name(c) for c in rows]
    xs, ys = [c.params_task_specific for c in rows], [c.time_ratio for c in rows]
    first = [i for i, c in enumerate(rows) if label(key_of(c)) == chosen]
    radius = [(CHOSEN_PX if i in first else MARKER_PX) / 2 + 1.5 for i in range(len(rows))]  # with its outline
    x_range, y_range = _span(xs, 0.06), _span(ys, 0.1)
    fx = [(x - x_range[0]) / (x_range[1] - x_range[0]) for x in xs]
    fy = [(y - y_range[0]) / (y_range[1] - y_range[0]) for y in ys]
    height = TIME_HEIGHT_PX - TIME_MARGIN["t"] - TIME_MARGIN["b"]
    texts: list[str | None] = [None] * len(rows)
    for group in clusters(fx, fy, min(TIME_PLOT_WIDTHS_PX), height, MARKER_PX / 2):
        lead = next((i for i in group if i in first), group[0])  # the chosen design names its spot
        texts[lead] = group_text([names[i] for i in [lead, *(j for j in group if j != lead)]])
    places = place_labels(
        fx, fy, texts, widths=TIME_PLOT_WIDTHS_PX, height=height, radius=radius, first=first, right_px=TIME_MARGIN["r"]
    )
    same = [
        [
            names[j]
            for j in range(len(rows))
            if j != i and (xs[j], display.step_ratio(ys[j])) == (xs[i], display.step_ratio(ys[i]))
        ]
        for i in range(len(rows))
    ]
    fig = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            text=names,
            marker=dict(
                size=[CHOSEN_PX if i in first else MARKER_PX for i in range(len(rows))],
                color=[method_color(c.method) for c in rows],
                opacity=[1.0 if c.feasible else 0.35 for c in rows],  # over the budget: pale, and named so
                symbol=[location_symbol(c.location) for c in rows],
                line=dict(color=["black" if i in first else "white" for i in range(len(rows))], width=1.5),
            ),
            customdata=[
                [
                    "—" if c.d_s is None else f"{c.d_s:,}",
                    display.step_ratio_text(c.time_ratio),
                    display.gib_text(c.memory_train["total"]),
                    "<br>same point: " + ", ".join(also) if also else "",
                ]
                for c, also in zip(rows, same)
            ],
            hovertemplate="%{text}<br>d_s %{customdata[0]}<br>%{x:,} task-specific params<br>a step %{customdata[1]}× the "
            "base model's<br>%{customdata[2]} GiB to train%{customdata[3]}<extra></extra>",
        )
    )
    for i, place in enumerate(places):
        if place is not None:
            fig.add_annotation(**label_annotation(xs[i], ys[i], texts[i], place, radius[i]))
    hidden = [texts[i] for i, p in enumerate(places) if texts[i] and p is None]
    fig.update_layout(
        xaxis=dict(title="task-specific parameters", range=list(x_range), automargin=False),
        yaxis=dict(title="training step time / base model's", range=list(y_range), automargin=False),
        height=TIME_HEIGHT_PX,
        margin=TIME_MARGIN,
        showlegend=False,
        title=dict(
            text=f"{len(hidden)} label(s) left out where points crowd: hover a point for its design" if hidden else "",
            font=dict(size=12, color="#555"),
            x=0,
            xanchor="left",
        ),
    )
    return fig


def render(inp: Inputs, costs: list[Cost], chosen: Cost | None) -> None:
    names = devices()
    a, b, c = st.columns(3)
    default = default_device()
    device = a.selectbox(
        "Device",
        names,
        index=names.index(default) if default in names else 0,
        key="machine_device",
        help="the answer's step time and memory use this device too",
    )
    batch = int(
        b.number_input(
            "Batch (sequences per step)", min_value=1, max_value=4096, value=DEFAULT_BATCH, step=1, key="machine_batch"
        )
    )
    precision = c.selectbox(
        "Precision",
        list(PRECISIONS),
        key="machine_precision",
        help="fp32: exact memory; bf16: a mixed-precision estimate",
    )
    machine = inp.machine(Machine(batch=batch, device=device, precision=precision)) or Machine(
        batch=batch, device=device, precision=precision
    )  # with the question's bounds: the fits they decide
    rows = priced(inp, costs, machine)
    if not rows:
        st.info("Memory and step time are modelled for BERT-family models only.")
        return
    df = frame(rows)
    st.caption(
        f"{machine.profile().name} · B = {batch} · n = {inp.seq_len} · {precision}. Training memory = weights + "
        "gradients + AdamW state + the activations autograd saves (exact in fp32); step time from the device "
        "profile (pals-calibrate measures `local`)."
        + (f" **{note}**" if (note := elsewhere(machine.profile())) else "")
    )
    st.plotly_chart(fig_memory(rows), width="stretch", key="fig_memory")
    st.plotly_chart(
        fig_time(rows, label(key_of(chosen)) if chosen is not None else None), width="stretch", key="fig_step_time"
    )
    st.dataframe(
        df,
        hide_index=True,
        width="stretch",
        key="machine_table",
        column_config={
            "design": st.column_config.TextColumn(pinned=True),
            **{k: st.column_config.NumberColumn(format=f) for k, f in COLUMNS.items()},
        },
    )
