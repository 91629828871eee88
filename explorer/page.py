"""The one page: sidebar question → the answer (recommendation, or the smallest budget that fits) → the chosen
design → one view at a time (designs, your tasks, sizes, all tasks, breakdown, paper check, train, runs & measured,
studies).

Only the view on screen is drawn (a segmented control, not tabs: tabs would draw every figure on every change).
The question lives in the URL (``address``): a link opens the same view, a bad value in it is an ``st.error``.
Bad input is shown with ``st.error`` and its reason; nothing reaches the person as a traceback (unexpected
errors are caught here too, and logged to the server console)."""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

from pals_core import measured, results, score_model
from pals_core.budget import recommend
from pals_core.budget.costs import Cost
from pals_core.budget.recommend import key_of, label
from pals_core.supervise.children import reap_children

from . import (
    address,
    calc,
    design_view,
    icons,
    machine_view,
    predicted_view,
    runs_view,
    sidebar,
    tasks_view,
    train_view,
)
from .inputs import Inputs, NoTasksFile, files_stamp, one_line, parse_inputs

log = logging.getLogger("pals_explorer")
STUDY_STORAGE_ENV = "PALS_STUDY_STORAGE"
VIEWS = {
    "designs": "Designs",
    "tasks": "Your tasks",
    "sizes": "Size vs budget",
    "scaling": "All tasks on one input",
    "breakdown": "Where the parameters go",
    "machine": "Memory & step time",
    "paper": "Paper check",
    "train": "Train",
    "runs": "Runs & measured",
    "studies": "Studies",
}
NEEDS_DESIGN = {"designs", "sizes", "scaling", "breakdown", "machine", "train"}
MEASURED_TTL_S = 5.0


def _guard(what: str, fn, *args) -> None:
    """Run one part of the page; show an unexpected error as one line instead of a traceback."""
    try:
        fn(*args)
    except ValueError as e:
        st.error(f"{what}: {e}")
    except Exception as e:  # noqa: BLE001 — the page must stay up; details go to the server log
        log.exception("%s failed", what)
        st.error(f"{what} failed: {type(e).__name__}: {e}")


def _open_view(view: str) -> None:
    """A button's way to a view: the view bar's value, set before the page is drawn again."""
    st.session_state["view"] = view


def _launcher(inp: Inputs | None, chosen: Cost | None) -> None:
    """The training launcher, run as a fragment: editing its fields redraws only the launcher."""
    _guard("The launcher", train_view.render, inp, chosen)


def _studies_module():
    try:
        return importlib.import_module("explorer.studies_view")
    except ModuleNotFoundError as e:
        if e.name == "explorer.studies_view":
            return None
        raise


def render_studies(inp: Inputs | None = None, chosen: Cost | None = None) -> None:
    from studies.storage import DEFAULT_STORAGE  # the same default as pals-study (optuna is imported only here)

    url = st.text_input(
        "Optuna storage URL",
        value=os.environ.get(STUDY_STORAGE_ENV) or DEFAULT_STORAGE,
        key="study_storage",
        help=f"Default: ${STUDY_STORAGE_ENV}, else {DEFAULT_STORAGE}.",
    )
    module = _studies_module()
    if module is None:
        st.info("The studies view (explorer/studies_view.py) is not installed in this checkout.")
        return
    module.render(url.strip(), inp, chosen)  # the start form starts from the sidebar's question and chosen design


@st.cache_data(show_spinner=False, ttl=MEASURED_TTL_S, max_entries=8)
def read_runs(roots: tuple[str, ...]) -> tuple[list[results.Run], list[results.PassedOver]]:
    """Finished runs on disk, each ``summary.json`` read once (``results.runs``) for the measured scores and the score
    curves alike (re-read every few seconds: runs finish while the page is open), and those passed over because
    their numbers cannot be true."""
    passed: list[results.PassedOver] = []
    return results.runs([Path(r) for r in roots], passed), passed


def found_runs(roots: tuple[str, ...]) -> list[results.Run]:
    """The finished runs whose numbers can be true (``read_runs``)."""
    return read_runs(roots)[0]


SHOWN_PASSED_OVER = 5


def passed_over_note() -> None:
    """One warning naming the runs passed over (their numbers cannot be true), each with its reason."""
    passed = read_runs(tuple(map(str, measured.default_roots())))[1]
    if not passed:
        return
    lines = [f"- `{p.folder}`: {p.reason}" for p in passed[:SHOWN_PASSED_OVER]]
    if len(passed) > SHOWN_PASSED_OVER:
        lines.append(f"- and {len(passed) - SHOWN_PASSED_OVER} more")
    st.warning(
        f"{len(passed)} finished run(s) passed over: their numbers cannot be true, so they enter no measured or "
        "predicted score:\n" + "\n".join(lines)
    )


def measured_results(roots: tuple[str, ...]) -> list[measured.Result]:
    """What each finished run shows (``measured.parse`` of ``found_runs``)."""
    return [measured.parse(run) for run in found_runs(roots)]


@st.cache_data(show_spinner=False, max_entries=16)
def question_keys(records: tuple, stamp: tuple) -> list[str]:
    """The question's task fingerprints (its own tasks' files hashed once per version: ``stamp``)."""
    return results.question_keys(records)


def results_for(inp: Inputs | None) -> list[measured.Result]:
    """Finished runs of the question's model on exactly its tasks (by fingerprint; N anonymous tasks have none)."""
    if inp is None or not inp.trainable or not inp.records:
        return []
    try:
        keys = question_keys(inp.records, files_stamp(inp.records))
    except (OSError, ValueError) as e:
        st.caption(f"Measured results are not looked up: {one_line(e)}")
        return []
    roots = tuple(map(str, measured.default_roots()))
    return measured.same_question(measured_results(roots), inp.train_model, inp.trainable, keys)


def _read_link() -> address.FromLink | None:
    """On a session's first draw, the URL's question (its bad values kept to show)."""
    if st.session_state.get("_address_read"):
        return None
    link = address.from_query(st.query_params.to_dict(), tuple(VIEWS))
    st.session_state["_address_read"] = True
    st.session_state["_address_errors"] = link.errors
    if link.view:
        st.session_state["view"] = link.view
    return link


def main() -> None:
    st.set_page_config(page_title="PALs Explorer", page_icon=icons.PAGE, layout="wide")
    reap_children()  # a run that ended is collected on the next redraw, whatever the view
    link = _read_link()
    sidebar.init_state(link.widgets if link else {})
    st.session_state.setdefault("view", "designs")
    raw = sidebar.render()
    st.title("PALs Explorer")
    st.caption(
        "Which adapter design should you use for your tasks within your parameter budget — how large, what it "
        "costs, what it scores. After Stickland & Murray, *BERT and PALs* (ICML 2019); every number comes from "
        "the calculator `pals_core.budget`."
    )
    st.button(  # the Studies view from the first screen, whatever the answer below pushes the view bar down
        "Studies: search designs for this question with Optuna, see a study's leaderboard →",
        key="open_studies",
        type="tertiary",
        on_click=_open_view,
        args=("studies",),
    )
    for e in st.session_state.get("_address_errors", []):
        st.error(e)
    inp: Inputs | None = None
    waiting = False  # for a tasks file: nothing is wrong yet
    costs: list[Cost] | None = None
    chosen: Cost | None = None
    picks: list[recommend.Pick] = []
    scores: dict = {}
    try:
        inp = parse_inputs(raw)
        costs = design_view.table(inp, machine_view.page_machine_key() if inp.bounds else ())  # bounds: on the machine
    except NoTasksFile as e:  # nothing entered yet: a prompt, not a mistake (an upload's own error is said once)
        inp, costs, waiting = None, None, True
        if not st.session_state.get("_upload_error"):
            text = one_line(e)
            st.info(f"**Your tasks:** {text[:1].upper()}{text[1:]}.")
    except ValueError as e:
        inp, costs = None, None
        st.error(f"Bad input: {one_line(e)}")
    if inp is not None and costs:
        mine = calc.question_design(inp)  # the question's design settings: what a score must have been trained with
        scores = measured.best_by_design(results_for(inp), mine)
        machine = machine_view.page_machine()  # one machine for the answer and every view
        curves = predicted_view.question_curves(inp, question_keys, found_runs, mine)  # what the sizes predict
        picks = recommend.candidates(
            costs,
            inp.budget,
            scores,
            slowdowns=lambda cs: calc.slowdowns(inp, cs, machine),
            hidden=inp.model.hidden,
            predicted=score_model.ranked(costs, curves),
        )
        st.markdown(design_view.budget_sentence(inp))
        refused = getattr(costs, "refused", [])
        if refused:  # designs this model cannot have: named with their reason, never priced
            st.warning(
                f"{len(refused)} design(s) cannot be built on this model and are not in the table:\n"
                + "\n".join(f"- **{label}**: {reason}" for label, reason in refused)
            )
        design_view.render_answer(inp, costs, picks)
        if inp.trainable and inp.records:  # runs were looked up for this question
            passed_over_note()
        _guard("The predicted scores", predicted_view.render, inp, picks, curves)
        default = picks[0].key if picks else design_view.first_fits(inp)[0].key
        chosen = design_view.choose_design(costs, default, link.design if link else None)
        design_view.render_metrics(chosen, inp)
    view = st.segmented_control(
        "View", list(VIEWS), format_func=VIEWS.get, key="view", required=True, label_visibility="collapsed"
    )
    if view in NEEDS_DESIGN and chosen is None:
        st.info(
            "Enter a tasks file in the sidebar (or open the example tasks) to see this view."
            if waiting
            else "Fix the question in the sidebar to see this view."
        )
    elif view == "designs":
        _guard(
            "The design table",
            design_view.render_designs_view,
            inp,
            costs,
            chosen,
            picks,
            scores,
            lambda design: "?" + urlencode(address.to_query(raw, "runs", design)),
        )
    elif view == "tasks":
        _guard("The task panel", tasks_view.render, inp)
    elif view == "sizes":
        _guard("The size plot", design_view.render_sizes_view, inp, costs, chosen)
    elif view == "scaling":
        _guard("The all-tasks plot", design_view.render_scaling_view, inp, costs, chosen)
    elif view == "breakdown":
        _guard("The breakdown", design_view.render_breakdown_view, inp, costs, chosen)
    elif view == "machine":
        _guard("Memory & step time", importlib.import_module("explorer.machine_view").render, inp, costs, chosen)
    elif view == "paper":
        _guard("The paper check", design_view.render_paper_view)
    elif view == "train":
        st.fragment(_launcher)(inp, chosen)
    elif view == "runs":
        _guard("The measured results", runs_view.render_measured, inp, results_for(inp), chosen)
        st.divider()
        _guard("The runs", runs_view.render)
    elif view == "studies":
        _guard("The studies view", render_studies, inp, chosen)
    st.query_params.from_dict(address.to_query(raw, view, label(key_of(chosen)) if chosen is not None else None))
