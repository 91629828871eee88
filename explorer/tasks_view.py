"""The task panel ("Your tasks"): what the question's tasks hold before any training — rows per split, the label
distribution (charted as the task's kind charts it, ``Kind.chart``: the rows of each label, the entities of each
type; with the kind's own line, ``Kind.distribution_text``, where it has one), the majority-class score on dev (the
floor every design must beat), and token lengths under the model's own tokenizer (p50 / p95 / max, and the share a
run at the page's n would cut).

Every number is ``pals_core.data.profile``'s (the rows read through the trainer's own checked path): this module
only draws them. A profile is cached per task by its record, its files' version (``inputs.files_stamp``), the model
and n, so a redraw reads nothing; one task's bad file is its own error line, the other tasks still show.

The p95 is offered as the page's sequence length (the one n the memory and step-time views price): one button
sets the sidebar's n to the largest p95 of the tasks (capped at the model's longest input).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import plotly.graph_objects as go
import streamlit as st

from pals_core.data.profile import profile_task, tokenizer_of
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.families.registry import get_family
from pals_core.kinds import get_kind
from pals_core.tasks.record import TaskRecord

from .inputs import TASKS_FILE, Inputs, files_stamp, one_line

CHART = {"displaylogo": False}
SPLIT_COLORS = {"train": "#1f77b4", "dev": "#ff7f0e"}
GLUE_FLAG = "_profile_glue"  # the person asked to read GLUE's rows (hundreds of thousands: not read unasked)


@st.cache_resource(show_spinner=False, max_entries=4)
def tokenizer(model: str | None):
    """The model's tokenizer (``profile.tokenizer_of``: a local folder, "tiny", or None = the embedded MiniLM)."""
    return tokenizer_of(model)


@st.cache_data(show_spinner=False, max_entries=64)
def profile(record: TaskRecord, stamp: tuple, model: str | None, max_len: int, glue_dir: str) -> dict:
    """One task's profile; ``stamp`` (its files' version) is part of the key so an edited file is read again."""
    return profile_task(record, tokenizer=tokenizer(model), max_len=max_len, glue_dir=glue_dir or None)


def tokenizer_model(inp: Inputs) -> tuple[str | None, str]:
    """(the ``--model`` whose tokenizer counts the tokens, what to call it). A shape has no tokenizer here: the
    embedded MiniLM's (BERT's uncased WordPiece) stands in."""
    if inp.trainable:
        return inp.train_model, inp.model.name
    return None, f"the embedded {EMBEDDED_MODEL} (BERT's uncased WordPiece; the question's model is a shape only)"


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def short_source(source: str) -> str:
    """'…/data/reviews.jsonl (dev: 0.1 of train, seed 0)' → 'reviews.jsonl (dev: 0.1 of train, seed 0)'."""
    parts = []
    for part in source.split(" + "):
        path, sep, rest = part.partition(" (")
        parts.append(os.path.basename(path) + sep + rest)
    return " + ".join(parts)


def majority_text(p: dict) -> str:
    """The majority reference's main score as ``pals-tasks`` prints it (``Kind.metric_text``: a fraction ×100, an
    error in the task's own units as it is), its metric named."""
    m = p["majority"]
    return f"{get_kind(p['kind']).metric_text(m['metric'], m['main'], digits=1)} ({m['metric']})"


def summary_row(p: dict) -> dict:
    """One task's line of the table (0–100 scores, as the rest of the page)."""
    tok = p.get("tokens") or {}
    labels = p.get("labels") or []
    return {
        "task": p["name"],
        "kind": p["kind"],
        "train rows": p["train_rows"],
        "dev rows": p["dev_rows"],
        "labels (C_t)": get_kind(p["kind"]).num_outputs(labels),
        "majority class on dev": majority_text(p),
        "tokens p50": tok.get("p50", "—"),
        "tokens p95": tok.get("p95", "—"),
        "tokens max": tok.get("max", "—"),
        f"truncated at n = {tok.get('max_len', '—')}": pct(tok["truncated"]) if tok else "—",
    }


def distribution_figure(p: dict, chart: dict) -> go.Figure:
    """A task's label statistics as its kind charts them (``Kind.chart``: the rows of each label, the entities of
    each type, …), train and dev side by side — shares of each split's total, so that a dev split unlike its train
    split shows; the counts are written on the bars (as ``pals-tasks`` prints them) and are the bars' data."""
    fig = go.Figure()
    unit = chart["unit"]
    for split in ("train", "dev"):
        counts, total = chart["counts"][split], chart["of"][split]
        shares = [100 * c / total if total else 0.0 for c in counts.values()]
        fig.add_trace(
            go.Bar(
                x=list(counts),
                y=shares,
                customdata=list(counts.values()),
                text=[f"{c:,}" for c in counts.values()],
                textposition="outside",
                textfont=dict(size=10),
                cliponaxis=False,
                name=f"{split} ({total:,} {unit})",
                marker_color=SPLIT_COLORS[split],
                hovertemplate="%{x}: %{customdata:,} " + unit + " (%{y:.1f}%)<extra>" + split + "</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        height=250,
        margin=dict(l=10, r=10, t=40, b=10),
        title=dict(text=f"{p['name']} · {p['kind']}", font=dict(size=14)),
        legend=dict(orientation="h", y=-0.25),
        yaxis=dict(title=f"% of {unit}", ticksuffix="%"),
    )
    return fig


def p95_of(profiles: Sequence[dict], inp: Inputs) -> tuple[int, int] | None:
    """(the largest p95 of the tasks, the n offered: that p95 capped at the model's longest input)."""
    p95s = [p["tokens"]["p95"] for p in profiles if p.get("tokens")]
    if not p95s:
        return None
    p95 = max(p95s)
    return p95, max(1, min(p95, get_family(inp.model.family).max_tokens(inp.model)))


def _set_seq_len(n: int) -> None:
    st.session_state["seq_len"] = n


def _read(records: Sequence[TaskRecord], model: str | None, max_len: int) -> list[dict]:
    """The profiles that could be read; one error line per task that could not."""
    glue_dir = os.environ.get("PALS_GLUE_DIR", "")
    out = []
    with st.spinner("Reading the tasks' rows and counting their tokens…"):
        for r in records:
            try:
                out.append(profile(r, files_stamp([r]), model, max_len, glue_dir))
            except (OSError, ValueError) as e:
                st.error(f"Task {r.name}: {one_line(e)}")
    return out


def render(inp: Inputs | None) -> None:
    """The panel for the question's tasks."""
    st.markdown("#### Your tasks: rows, labels, lengths")
    if inp is None:
        st.info("Fix the question in the sidebar to see its tasks.")
        return
    if not inp.records:
        st.info(
            f"{len(inp.tasks)} anonymous binary tasks have no rows to read. Choose **{TASKS_FILE}** in the sidebar "
            "(or open the example tasks) to see your own tasks' data here."
        )
        return
    if inp.tasks_file is None and not st.session_state.get(GLUE_FLAG):
        st.info("GLUE's tasks hold up to 400,000 rows each: reading and tokenising them takes a while.")
        st.button(
            "Read the GLUE tasks' rows", key="profile_glue", on_click=lambda: st.session_state.update({GLUE_FLAG: True})
        )
        return
    model, model_name = tokenizer_model(inp)
    max_len = max(8, inp.seq_len)
    try:
        tokenizer(model)
    except ValueError as e:
        st.error(f"No tokenizer: {one_line(e)}")
        return
    profiles = _read(inp.records, model, max_len)
    if not profiles:
        return
    where = f" of `{inp.tasks_file}`" if inp.tasks_file else ""
    st.caption(
        f"{len(profiles)} task(s){where}, read as the trainer reads them; tokens counted with {model_name}'s "
        f"tokenizer, special tokens included, untruncated. The majority class predicts the most frequent training "
        "label on every dev row (regression: the training mean; multilabel: each label most rows carry; tags per "
        "word: 'O' on every word) — the "
        "score any design must beat."
    )
    st.dataframe(
        [summary_row(p) for p in profiles],
        hide_index=True,
        width="stretch",
        key="tasks_table",
        column_config={
            c: st.column_config.NumberColumn(format="localized")  # counts: 392,702
            for c in ("train rows", "dev rows")
        },
    )
    offer = p95_of(profiles, inp)
    if offer is not None:
        p95, n = offer
        capped = f" (the p95 is {p95}; {inp.model.name} takes at most {n})" if n < p95 else ""
        if n == inp.seq_len:
            st.caption(f"The page prices memory and step time at n = {n}: the largest p95 of these tasks{capped}.")
        else:
            st.button(
                f"Use p95 = {n} as seq_len",
                key="use_p95",
                on_click=_set_seq_len,
                args=(n,),
                help=f"Price memory and step time at n = {n} tokens (now {inp.seq_len}): 95 % of the rows of "
                f"every task fit{capped}.",
            )
    st.caption(
        "Dev rows: " + " · ".join(f"{p['name']} from {short_source(p.get('dev_source') or '')}" for p in profiles)
    )
    charts = {p["name"]: get_kind(p["kind"]).chart(p) for p in profiles}  # None: said in words only
    charted = [p for p in profiles if charts[p["name"]] is not None]
    for i in range(0, len(charted), 3):
        cols = st.columns(3)
        for col, p in zip(cols, charted[i : i + 3]):
            col.plotly_chart(distribution_figure(p, charts[p["name"]]), config=CHART, key=f"fig_labels::{p['name']}")
    for p in profiles:
        text = get_kind(p["kind"]).distribution_text(p)  # "": its chart says it all
        if text:
            st.markdown(text)
