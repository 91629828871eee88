"""The design tabs: the table of every method × location at the budget, the plots, the breakdown
and the paper check. Calculator rows are cached with ``st.cache_data`` and the figures built from
them with ``st.cache_resource`` (keyed by the validated question), so the page redraws at once."""
from __future__ import annotations

from typing import Optional

import streamlit as st

from pals_core.budget import Cost, base_params, get_method, paper_reproduction
from pals_core.budget.series import flops_ratio
from pals_core.budget.units import human

from . import calc, figures
from .calc import key_of, label
from .inputs import Inputs

CHART = {"displaylogo": False}
HASH = {Inputs: repr}  # a validated question is a frozen dataclass: its repr is its identity, and cheap to hash


@st.cache_data(show_spinner=False, max_entries=128, hash_funcs=HASH)
def table(inp: Inputs) -> list[Cost]:
    return calc.table(inp)


def curve_location(costs: list[Cost], chosen: Cost) -> Optional[str]:
    """The chosen design's location, or 'all' (else the first there is) for a method that takes none."""
    if chosen.location is not None:
        return chosen.location
    locations = [c.location for c in costs if c.location is not None]
    return "all" if "all" in locations else (locations[0] if locations else None)


# Figures are built once per question and shared read-only (st.cache_resource: no copy, no re-validation),
# so a redraw of a question already seen only serialises them.

@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def fig_sizes(inp: Inputs, location: Optional[str]):
    """One curve per method: within-network methods at ``location``, the others as they are."""
    return figures.size_curves_figure(calc.curves(inp, [c for c in table(inp) if c.location in (None, location)]))


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def fig_space(inp: Inputs, chosen: calc.Key):
    return figures.design_space_figure(table(inp), chosen)


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def fig_scaling(inp: Inputs):
    return figures.scaling_figure(calc.scaling(inp, table(inp)), len(inp.tasks))


def breakdown_frame(inp: Inputs, cost: Cost):
    return figures.breakdown_frame(calc.breakdown_rows(inp, cost), top=get_method(cost.method).top)


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def breakdown(inp: Inputs, key: calc.Key):
    """(frame, figure) of one design's breakdown."""
    frame = breakdown_frame(inp, next(c for c in table(inp) if key_of(c) == key))
    return frame, figures.breakdown_figure(frame, f"{label(key)}: parameters by place and part")


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def fig_breakdown_all(inp: Inputs):
    return figures.breakdown_compare_figure({label(key_of(c)): breakdown_frame(inp, c) for c in table(inp)})


@st.cache_resource(show_spinner=False)
def paper():
    rows = paper_reproduction()
    return rows, figures.paper_figure(rows)


def budget_sentence(inp: Inputs) -> str:
    n_base = base_params(inp.model, inp.convention)
    b = inp.budget
    if b.ratio is not None:
        cap = f"≤ {b.ratio:g}× the base model: at most **{human(b.extra_limit(n_base))}** task-specific parameters"
    elif b.extra is not None:
        cap = f"at most **{human(b.extra)}** task-specific parameters over all tasks"
    else:
        cap = f"at most **{human(b.per_task)}** per task (head + adapter)"
    names = ", ".join(t.name for t in inp.tasks[:8]) + (", …" if len(inp.tasks) > 8 else "")
    fixed = f" · every sized method evaluated at d_s = {inp.d_s}" if inp.d_s else ""
    return (f"**{inp.model.name}** ({human(n_base)} parameters, {inp.convention} count) · **{len(inp.tasks)} tasks** "
            f"({names}) · budget {cap} · n = {inp.seq_len}{fixed}")


def choose_design(costs: list[Cost]) -> Cost:
    """The 'chosen design' selector (feasible first); its row drives the breakdown and the launcher."""
    by_label = {label(key_of(c)): c for c in costs}
    options = list(by_label)
    default = label(calc.pick_default(costs))
    if st.session_state.get("design") not in by_label:
        st.session_state["design"] = default
    choice = st.selectbox("Chosen design", options, key="design",
                          format_func=lambda s: s if by_label[s].feasible else f"{s} (over budget)",
                          help="Drives the breakdown and the training launcher. Feasible designs first, cheapest FLOPs first.")
    return by_label[choice]


def render_metrics(c: Cost, inp: Inputs) -> None:
    cols = st.columns(5)
    cols[0].metric("solved d_s" if inp.d_s is None else "fixed d_s", "—" if c.d_s is None else str(c.d_s),
                   help="The largest valid adapter size within the budget (a multiple of h_s for attention methods).")
    cols[1].metric("params per task", human(max(c.params_per_task)), help="Head + adapter of the largest task.")
    cols[2].metric("total × base", f"{c.ratio:.4f}×", help="N_total / N_base")
    cols[3].metric("FLOPs × base", f"{flops_ratio(c):.4f}×", help="One sequence through one task's path vs the plain model.")
    cols[4].metric("fits the budget", "yes" if c.feasible else "NO",
                   help=None if c.slack is None else f"slack: {c.slack:,.0f} parameters")


def render_design_tab(inp: Inputs, costs: list[Cost], chosen: Cost) -> None:
    st.markdown("#### Every design at this budget")
    st.caption("Feasible first, then by FLOP overhead. d_s is the largest size that fits; params / task counts the largest "
               "task's head + adapter.")
    frame = figures.table_frame(costs)
    st.dataframe(frame, hide_index=True, width="stretch", key="main_table", column_config={
        "params / task": st.column_config.NumberColumn(format="localized"),
        "task-specific (all tasks)": st.column_config.NumberColumn(format="localized"),
        "all-task FLOPs / input": st.column_config.NumberColumn(format="compact"),
        "train step FLOPs": st.column_config.NumberColumn(format="compact"),
        "× base": st.column_config.NumberColumn(format="%.4f"),
        "FLOPs × base": st.column_config.NumberColumn(format="%.4f"),
    })
    left, right = st.columns(2)
    with left:
        loc = curve_location(costs, chosen)
        st.plotly_chart(fig_sizes(inp, loc), config=CHART, key="fig_sizes")
        st.caption("Each curve is the calculator's count over d_s" + (f" (within-network methods @ {loc}, the chosen design's "
                   "location)" if loc else "") + "; the dashed black line is the budget per task; the dot marks the size the "
                   "solver chose (a cross if even the smallest size is over budget).")
    with right:
        st.plotly_chart(fig_space(inp, key_of(chosen)), config=CHART, key="fig_space")
        st.caption("Up costs compute, right buys capacity (● all layers, ▲ top, ▼ bottom, ◆ no location; grey × over "
                   "budget; ☆ the chosen design). The Pareto front joins the fitting designs that no other fitting design beats on both: more "
                   "task-specific parameters for no more FLOPs.")
    st.plotly_chart(fig_scaling(inp), config=CHART, key="fig_scaling")
    st.caption("Running every task on one input (the paper's mobile argument): layers below the lowest adapted layer run "
               "once; the rest runs once per task. Top-of-BERT methods share the whole encoder; adapters in layer 0 share "
               "nothing.")


def render_breakdown_tab(inp: Inputs, costs: list[Cost], chosen: Cost) -> None:
    method = get_method(chosen.method)
    st.markdown(f"#### Where one task's parameters go — {label(key_of(chosen))}"
                + ("" if chosen.d_s is None else f", d_s = {chosen.d_s}"))
    st.markdown(f"{method.description}  \nPaper-convention count per task: `{method.paper_formula}`")
    frame, fig = breakdown(inp, key_of(chosen))
    if frame.empty or frame["params"].sum() == 0:
        st.info("This design holds no task-specific parameters besides the head.")
    st.plotly_chart(fig, config=CHART, key="fig_breakdown")
    by_part = frame.groupby("part", sort=False)["params"].sum().reset_index()
    by_part["share"] = by_part["params"] / max(1, by_part["params"].sum())
    st.dataframe(by_part, hide_index=True, key="breakdown_table", column_config={
        "params": st.column_config.NumberColumn(format="localized"),
        "share": st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0)})
    st.plotly_chart(fig_breakdown_all(inp), config=CHART, key="fig_breakdown_all")
    st.caption("Sizes as solved at this budget (the table on the Design tab). Parts shared by all tasks count in full here.")


def render_paper_tab() -> None:
    rows, fig = paper()
    bad = [r for r in rows if not r.reproduces]
    st.markdown("#### Does the calculator reproduce the paper?")
    st.plotly_chart(fig, config=CHART, key="fig_paper")
    if bad:
        st.warning("Disagreements (shown, not tuned away): " + "; ".join(f"{r.label}: {r.difference}" for r in bad))
    else:
        st.success("Every configuration reproduces.")
