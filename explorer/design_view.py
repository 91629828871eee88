"""The answer and the design views: the recommendation (or, when nothing fits, the smallest budget that
does), the chosen design's numbers, the table of every method × location (sortable, as CSV), and the plots.

Calculator rows are cached with ``st.cache_data`` and figures with ``st.cache_resource`` (keyed by the validated
question), and only the view on screen draws its figures, so a new question redraws at once."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from pals_core.budget import display, recommend
from pals_core.budget.costs import DEFAULT_SEQ_LEN, Cost, base_params, embedding_params, flops_ratio
from pals_core.budget.paper import paper_reproduction
from pals_core.budget.recommend import Key, key_of, label
from pals_core.budget.series import budget_used
from pals_core.budget.solver import Budget
from pals_core.families.registry import get_family
from pals_core.footprint.constraints import BY_FIELD
from pals_core.footprint.here import elsewhere
from pals_core.methods.registry import get_method
from pals_core.pricing.units import human

from . import calc, icons, tables
from .address import link_budget
from .figures import breakdown, design_space, scaling, size_curves
from .figures.paper import paper_figure
from .inputs import Inputs
from .machine_view import machine_of_key, page_machine, page_machine_key, priced

CHART = {"displaylogo": False}
HASH = {Inputs: repr}  # a validated question is a frozen dataclass: its repr is its identity, and cheap to hash
SORTS = {
    "recommendation": "the recommendation's ranking (fitting designs first)",
    "used": "% of the budget used, most first",
    "flops": "FLOP overhead, least first",
    "params": "task-specific parameters, most first",
    "method": "method, then location",
}
BUDGET_KIND_KEY = {"ratio": "ratio", "extra": "extra", "per_task": "per-task"}


@st.cache_data(show_spinner=False, max_entries=128, hash_funcs=HASH)
def table(inp: Inputs, machine_key: tuple = ()) -> list[Cost]:
    """The rows of a question; with its machine bounds, on the page's machine (``machine_key``: its batch, device
    and precision, a cache key; ``machine_view.page_machine_key``)."""
    return calc.table(inp, machine_of_key(machine_key) if inp.bounds else None)


def budget_kind(b: Budget) -> str:
    return "ratio" if b.ratio is not None else ("extra" if b.extra is not None else "per_task")


def budget_text(b: Budget) -> str:
    kind = budget_kind(b)
    value = getattr(b, kind)
    return f"{link_budget(kind, value)}×" if kind == "ratio" else f"{human(value)} ({int(value):,})"


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=HASH)
def first_fits(inp: Inputs) -> list[recommend.FirstFit]:
    """Nothing fits: the smallest budget of the question's kind at which each design first fits."""
    rows = table(inp, page_machine_key() if inp.bounds else ())
    return recommend.first_fits({key_of(c): calc.design_of(inp, key_of(c)) for c in rows}, inp.budget)


def budget_sentence(inp: Inputs) -> str:
    n_base = base_params(inp.model, inp.convention)
    b = inp.budget
    if b.ratio is not None:
        of = "'s non-embedding parameters" if b.of == "non-embedding" else ""
        limit = b.extra_limit(n_base, embedding_params(inp.model, inp.convention))
        cap = f"≤ {b.ratio:g}× the base model{of}: at most **{human(limit)}** task-specific parameters"
    elif b.extra is not None:
        cap = f"at most **{human(b.extra)}** task-specific parameters over all tasks"
    else:
        cap = f"at most **{human(b.per_task)}** per task (head + adapter)"
    names = ", ".join(t.name for t in inp.tasks[:8]) + (", …" if len(inp.tasks) > 8 else "")
    fixed = f" · every sized method evaluated at d_s = {inp.d_s}" if inp.d_s else ""
    trains = " (the model the launcher trains)" if inp.trainable else " (a shape: the launcher trains another model)"
    longest = get_family(inp.model.family).max_tokens(inp.model)
    shorter = (
        f" (the model's longest; the default is {DEFAULT_SEQ_LEN})" if inp.seq_len == longest < DEFAULT_SEQ_LEN else ""
    )
    bounds = "".join(f" · {BY_FIELD[name].text(value)}" for name, value in inp.bounds)  # the machine's, as pals-budget
    return (
        f"**{inp.model.name}**{trains}, {human(n_base)} parameters, {inp.convention} count · **{len(inp.tasks)} tasks** "
        f"({names}) · budget {cap} · n = {inp.seq_len}{shorter}{fixed}{bounds}"
    )


def render_answer(inp: Inputs, costs: list[Cost], picks: list[recommend.Pick]) -> None:
    """The recommendation in one sentence, or — nothing fits — the smallest budget at which a design first fits."""
    if picks:
        st.success(recommend.answer(picks) + machine_sentence(inp, picks[0]), icon=icons.RECOMMENDED)
        note = elsewhere(page_machine().profile())  # the device priced is not this machine: said, as pals-budget does
        if note:
            st.caption(note)
        return
    fits = first_fits(inp)
    first = fits[0]
    kind = budget_kind(inp.budget)
    what = f" at d_s = {first.d_s}" if first.d_s is not None else ""
    st.error(
        f"**Nothing fits a budget of {budget_text(inp.budget)}.** The first design to fit is **{label(first.key)}**"
        f"{what}, from a budget of **{budget_text(first.budget)}**. The table says where each design starts to fit.",
        icon=icons.NOTHING_FITS,
    )
    value = link_budget(kind, getattr(first.budget, kind))
    st.button(
        f"Use the budget {value}",
        key="use_first_fit",
        on_click=_set_state,
        args=(f"budget_{BUDGET_KIND_KEY[kind]}", value),
    )


def machine_sentence(inp: Inputs, pick: recommend.Pick) -> str:
    """The recommended design on the page's one machine (``machine_view.page_machine``: the device, batch and
    precision of the Memory & step time view): its training memory and step time there, the device named."""
    machine = page_machine()
    rows = priced(inp, [pick.cost], machine)
    if not rows:
        return ""
    c = rows[0]
    return (
        f" On {machine.profile().name} (batch {machine.batch}, n = {inp.seq_len}, {machine.precision}; set in "
        f"Memory & step time): {display.gib_text(c.memory_train['total'])} GiB to train, a step "
        f"{display.step_ratio_text(c.time_ratio)}× the base model's."
    )


def _set_state(key: str, value) -> None:
    st.session_state[key] = value


def choose_design(costs: list[Cost], default: Key, wanted: str | None = None) -> Cost:
    """The 'chosen design' selector (the recommendation first); its row drives the plots' highlight, the breakdown
    and the launcher. ``wanted`` is the link's ``design``."""
    by_label = {label(key_of(c)): c for c in costs}
    if wanted is not None:
        if wanted in by_label:
            st.session_state["_design_pick"] = wanted
        else:
            st.error(
                f"the link's design={wanted!r} was not used: it is not a row of this table "
                f"({', '.join(list(by_label)[:6])}, …)"
            )
    # the selection follows the recommendation until the person picks a design (kept while it is a row)
    pick = st.session_state.get("_design_pick")
    st.session_state["design"] = pick if pick in by_label else label(default)
    choice = st.selectbox(
        "Chosen design",
        list(by_label),
        key="design",
        on_change=_remember_pick,
        format_func=lambda s: s if by_label[s].feasible else f"{s} (over budget)",
        help="Drives the highlight in every plot, the breakdown and the training launcher.",
    )
    return by_label[choice]


def _remember_pick() -> None:
    st.session_state["_design_pick"] = st.session_state["design"]


def render_metrics(c: Cost, inp: Inputs) -> None:
    """The chosen design's five numbers, each written whole: a row that wraps on a narrow screen (five fixed columns
    cut '1.0002×' to '1.0…' at 1000 px)."""
    row = st.container(horizontal=True, wrap=True, gap="medium", horizontal_alignment="distribute")
    if c.feasible:
        size = "—" if c.d_s is None else str(c.d_s)
    else:
        size = "does not fit"
    row.metric(
        "solved d_s" if inp.d_s is None else "fixed d_s",
        size,
        help="The largest valid adapter size within the budget (a multiple of h_s for attention methods).",
        width="content",
    )
    row.metric(
        "% of budget used",
        display.share_text(budget_used(c, inp.budget)),
        help="Task-specific parameters over what the budget allows (per task: the largest task's share over "
        "the cap), rounded down: a design that fits never shows 100.0 % unless it spends it all.",
        width="content",
    )
    row.metric(
        "params per task",
        human(display.params_per_task(c)),
        help=f"Head + adapter of the largest task ({display.count_text(display.params_per_task(c))}), with its "
        "1/T share of modules all tasks share (CA-MTL).",
        width="content",
    )
    row.metric("total × base", f"{display.ratio_text(c.ratio)}×", help="N_total / N_base", width="content")
    row.metric(
        "FLOPs × base",
        f"{display.ratio_text(flops_ratio(c))}×",
        help="One sequence through one task's path vs the plain model.",
        width="content",
    )


def sort_costs(costs: list[Cost], how: str, inp: Inputs, picks: list[recommend.Pick]) -> list[Cost]:
    if how == "used":
        return sorted(costs, key=lambda c: -budget_used(c, inp.budget))
    if how == "flops":
        return sorted(costs, key=lambda c: (not c.feasible, flops_ratio(c)))
    if how == "params":
        return sorted(costs, key=lambda c: -c.params_task_specific)
    if how == "method":
        return sorted(costs, key=lambda c: (c.method, c.location or ""))
    return recommend.ranked_rows(costs, inp.budget, picks)  # the recommendation's order, as pals-budget sorts


def render_designs_view(
    inp: Inputs,
    costs: list[Cost],
    chosen: Cost,
    picks: list[recommend.Pick],
    measured: Mapping[Key, recommend.Score],
    link_for=None,
) -> None:
    """``link_for(design label)``: the page's address showing that design's measured results (Runs & measured)."""
    rank = {p.key: i + 1 for i, p in enumerate(picks)}
    how = st.selectbox("Sort by", list(SORTS), format_func=SORTS.get, key="sort")
    ordered = sort_costs(costs, how, inp, picks)
    first_fit = None
    if any(not c.feasible for c in costs) and not any(c.feasible for c in costs):
        first_fit = {f.key: budget_text(f.budget) for f in first_fits(inp)}
    cells = {key_of(c): recommend.measured_label(measured.get(key_of(c)), c) for c in ordered if key_of(c) in measured}
    frame = tables.table_frame(ordered, inp.budget, rank, cells, first_fit, hidden=inp.model.hidden)
    if inp.bounds:  # which constraint sets each d_s (or which a design breaks): params or a constraint record's name
        frame["binds"] = [c.binding or "—" for c in ordered]
    if link_for is not None and cells:  # a design's row links to its measured results, where they exist ("": none)
        frame.insert(
            frame.columns.get_loc("measured dev avg"),
            "measured results",  # the link, then the score
            [link_for(d) if key_of(c) in measured else "" for d, c in zip(frame["design"], ordered)],
        )
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        key="main_table",
        column_config={
            "rank": st.column_config.TextColumn(  # narrow columns (px) for short cells: the FLOPs columns in view
                help="The recommendation's ranking: each method's largest fitting design", width=50
            ),
            "fits": st.column_config.TextColumn(width=45),
            "design": st.column_config.TextColumn(pinned=True),
            "% of budget used": st.column_config.ProgressColumn(
                "% budget",
                format=tables.TABLE_FORMATS["% of budget used"] + "%%",
                min_value=0.0,
                max_value=100.0,
                width="small",
                help="% of the budget used, rounded down",
            ),
            "measured dev avg": st.column_config.TextColumn(  # as wide as its cells: '—' until a run is measured
                "measured", help="Mean dev average (0–100) of finished runs of this design"
            ),
            "params / task": st.column_config.NumberColumn(format="localized"),
            "add tasks later": st.column_config.TextColumn(
                help="yes: a new task can be trained onto a finished run of this design (pals-train --from RUN --add-tasks "
                "F) and every other task keeps its weights bit for bit — the trunk is frozen and nothing the tasks "
                "share trains. no: adding a task means retraining all (the trunk trains, or CA-MTL's shared modules)"
            ),
            "task-specific (all tasks)": st.column_config.NumberColumn(format="localized"),
            "trained": st.column_config.NumberColumn(
                format="localized",
                help="Parameters the optimiser updates (of the total): the task-specific ones, and the trunk where it "
                "is fine-tuned",
            ),
            "trunk": st.column_config.TextColumn(
                help="How the design trains the base model — its method's authors' way: frozen (Houlsby, LoRA, IA³, "
                "LHUC), fine-tuned (PALs and the paper's variants, shared), CA-MTL above its frozen lower layers"
            ),
            "total × base": st.column_config.NumberColumn(format=tables.TABLE_FORMATS["total × base"]),
            "FLOPs × base": st.column_config.NumberColumn(format=tables.TABLE_FORMATS["FLOPs × base"]),
            "GFLOPs / input, all tasks": st.column_config.NumberColumn(
                "GFLOPs, all tasks",  # short headers: every FLOPs column in view at 1400 px
                format=tables.TABLE_FORMATS["GFLOPs / input, all tasks"],
                help="GFLOPs of one input through every task's path, sharing what the tasks share",
            ),
            "train step GFLOPs": st.column_config.NumberColumn(
                "GFLOPs, train step",
                format=tables.TABLE_FORMATS["train step GFLOPs"],
                help="GFLOPs of a training step per input of the first task: 3 × its forward (forward + backward)",
            ),
            "measured results": st.column_config.LinkColumn(
                "runs", display_text="open", help="This design's finished runs (Runs & measured)", width=50
            ),  # a header the narrow column shows whole
        },
    )
    st.download_button(
        "Download the table (CSV)",
        data=lambda: tables.table_csv(frame),
        file_name="pals-designs.csv",
        mime="text/csv",
        key="csv",
        on_click="ignore",
    )
    st.caption(
        "rank = the recommendation's order (each method's largest fitting design); % of budget used = task-specific "
        "parameters over what the budget allows, rounded down; params / task = the largest task's head + adapter "
        "(with its share of modules all tasks share); trained = the parameters the optimiser updates, the trunk frozen or "
        "fine-tuned as the method's authors train it; the numbers are pals-budget's, to the digit; measured = "
        "mean dev average (0–100) of finished runs of this model and these tasks (Runs & measured); a score measured at "
        "another d_s is labelled so and does not rank the design."
    )
    if not picks:
        st.info("No design fits this budget, so there is no design space to draw: raise the budget (see 'fits from').")
        return
    st.plotly_chart(fig_space(inp, key_of(chosen), picks[0].key if picks else None), config=CHART, key="fig_space")
    st.caption(
        "Each marker is a design that fits (colour = method; ● all layers, ▲ top, ▼ bottom, ■ your layers, ◆ no "
        "location). Right = spends more of the budget; down = adds less compute. The dotted line is the Pareto "
        "front: designs no other design beats on both. The ring marks the chosen design."
    )


# Figures are built once per question and shared read-only (st.cache_resource: no copy, no re-validation).


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def fig_space(inp: Inputs, chosen: Key, recommended: Key | None):
    return design_space.design_space_figure(table(inp), inp.budget, chosen, recommended)


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def fig_sizes(inp: Inputs, location: str | None, chosen: Key):
    return size_curves.size_curves_figure(calc.curves(inp, calc.at_location(table(inp), location)), chosen)


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def fig_scaling(inp: Inputs, location: str | None, chosen: Key):
    costs = calc.at_location(table(inp), location)
    return scaling.scaling_figure(
        calc.scaling(inp, costs), len(inp.tasks), chosen, over=[key_of(c) for c in costs if not c.feasible]
    )


def curve_location(costs: list[Cost], chosen: Cost) -> str | None:
    """The chosen design's location, or 'all' (else the first there is) for a method that takes none."""
    if chosen.location is not None:
        return chosen.location
    locations = [c.location for c in costs if c.location is not None]
    return "all" if "all" in locations else (locations[0] if locations else None)


def render_sizes_view(inp: Inputs, costs: list[Cost], chosen: Cost) -> None:
    loc = curve_location(costs, chosen)
    st.plotly_chart(fig_sizes(inp, loc, key_of(chosen)), config=CHART, key="fig_sizes")
    st.caption(
        "How each method's cost grows with its adapter size (log scale, so every method shows). The dashed black "
        "line is the budget per task"
        + (" (the largest task's head + adapter)" if inp.budget.per_task is not None else " (the budget over T tasks)")
        + "; each marker is the size the solver chose, where the curve meets the line. "
        + (f"Within-network methods at {loc} (the chosen design's location). " if loc else "")
        + "Designs over the budget are grey; the chosen design is thick, its marker ringed."
    )


def render_scaling_view(inp: Inputs, costs: list[Cost], chosen: Cost) -> None:
    loc = curve_location(costs, chosen)
    st.plotly_chart(fig_scaling(inp, loc, key_of(chosen)), config=CHART, key="fig_scaling")
    st.caption(scaling_caption(inp, costs, loc))


def scaling_caption(inp: Inputs, costs: list[Cost], loc: str | None) -> str:
    """What the all-tasks plot shows, read from its own lines at the question's T (``scaling.scaling_groups``):
    which designs save compute over T separate models, which cost as much, which cost more — and how far it is
    drawn (``calc.task_counts``)."""
    drawn = calc.at_location(costs, loc)
    t = len(inp.tasks)
    groups = scaling.scaling_groups(calc.scaling(inp, drawn), t)
    names = lambda keys: ", ".join(label(k) for k in keys)  # noqa: E731
    parts = [
        f"To run every task on one input, the layers below the lowest adapted layer run once and the rest once per "
        f"task. At your T = {t}:"
    ]
    if groups["below"]:
        parts.append(f"below the dashed separate-models line, sharing saves compute — {names(groups['below'])};")
    if groups["same"]:
        parts.append(
            f"on the line (within {scaling.SAME_AS_SEPARATE:.1%}), as much as T separate models — "
            f"{names(groups['same'])} (they share no layer, and add almost no FLOPs of their own);"
        )
    if groups["above"]:
        parts.append(
            f"above it, more than T separate models — {names(groups['above'])} (the FLOPs their adapters "
            "add outweigh what they share);"
        )
    parts[-1] = parts[-1].rstrip(";") + "."
    where = f" Within-network methods at {loc}." if loc else ""
    top = calc.task_counts(t)[-1]
    return " ".join(parts) + where + f" Drawn to T = {top} (twice your number of tasks, at least 16)."


def breakdown_frame(inp: Inputs, cost: Cost):
    return breakdown.breakdown_frame(calc.breakdown_rows(inp, cost), top=get_method(cost.method).top)


@st.cache_resource(show_spinner=False, max_entries=64, hash_funcs=HASH)
def breakdowns(inp: Inputs, chosen: Key):
    """(frame of the chosen design, its figure, the comparison of every fitting design), one colour per part."""
    costs = table(inp)
    rows = {
        label(key_of(c)): breakdown.breakdown_places(calc.breakdown_rows(inp, c), top=get_method(c.method).top)
        for c in costs
        if c.feasible or key_of(c) == chosen
    }
    frame = breakdown_frame(inp, next(c for c in costs if key_of(c) == chosen))
    colors = breakdown.part_colors([*rows.values(), frame])
    title = f"{label(chosen)}: one task's parameters by place and part"
    return (
        frame,
        breakdown.breakdown_figure(frame, title, colors),
        breakdown.breakdown_compare_figure(rows, colors, label(chosen)),
    )


def render_breakdown_view(inp: Inputs, costs: list[Cost], chosen: Cost) -> None:
    method = get_method(chosen.method)
    st.markdown(
        f"#### Where one task's parameters go — {label(key_of(chosen))}"
        + ("" if chosen.d_s is None else f", d_s = {chosen.d_s}")
    )
    st.markdown(f"{method.description}  \nPaper-convention count per task: `{method.paper_formula}`")
    frame, fig, compare = breakdowns(inp, key_of(chosen))
    if frame.empty or frame["params"].sum() == 0:
        st.info("This design holds no task-specific parameters besides the head.")
    st.plotly_chart(fig, config=CHART, key="fig_breakdown")
    by_part = frame.groupby("part", sort=False)["params"].sum().reset_index()
    by_part["share"] = by_part["params"] / max(1, by_part["params"].sum())
    st.dataframe(
        by_part,
        hide_index=True,
        key="breakdown_table",
        column_config={
            "params": st.column_config.NumberColumn(format="localized"),
            "share": st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0),
        },
    )
    st.plotly_chart(compare, config=CHART, key="fig_breakdown_all")
    over = [label(key_of(c)) for c in costs if not c.feasible and key_of(c) != key_of(chosen)]
    st.caption(
        "Sizes as solved at this budget; the same colour is the same part in both charts. Parts shared by all "
        "tasks count in full here." + (f" Over budget, left out: {', '.join(over)}." if over else "")
    )


@st.cache_resource(show_spinner=False)
def paper():
    rows = paper_reproduction()
    return rows, paper_figure(rows)


def render_paper_view() -> None:
    rows, fig = paper()
    bad = [r for r in rows if not r.reproduces]
    st.markdown("#### Does the calculator reproduce the paper?")
    st.plotly_chart(fig, config=CHART, key="fig_paper")
    if bad:
        st.warning("Disagreements (shown, not tuned away): " + "; ".join(f"{r.label}: {r.difference}" for r in bad))
    else:
        st.success("Every configuration reproduces.")
