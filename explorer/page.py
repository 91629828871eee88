"""The one page: sidebar question → chosen design → tabs (design, parameters, paper, train & runs,
studies). Bad input is shown with ``st.error`` and its reason; nothing reaches the person as a
traceback (unexpected errors are caught here too, and logged to the server console)."""
from __future__ import annotations

import importlib
import logging
import os
from typing import Optional

import streamlit as st

from pals_core.budget import Cost

from . import design_view, runs_view, sidebar, train_view
from .inputs import Inputs, parse_inputs

log = logging.getLogger("pals_explorer")
STUDY_STORAGE_ENV = "PALS_STUDY_STORAGE"
TABS = ["Design", "Where the parameters go", "Paper check", "Train & runs", "Studies"]


def _guard(what: str, fn, *args) -> None:
    """Run one part of the page; show an unexpected error as one line instead of a traceback."""
    try:
        fn(*args)
    except ValueError as e:
        st.error(f"{what}: {e}")
    except Exception as e:  # noqa: BLE001 — the page must stay up; details go to the server log
        log.exception("%s failed", what)
        st.error(f"{what} failed: {type(e).__name__}: {e}")


def _launcher(inp: Optional[Inputs], chosen: Optional[Cost]) -> None:
    """The training launcher, run as a fragment: editing its fields redraws only the launcher."""
    _guard("The launcher", train_view.render, inp, chosen)


def _studies_module():
    try:
        return importlib.import_module("explorer.studies_view")
    except ModuleNotFoundError as e:
        if e.name == "explorer.studies_view":
            return None
        raise


def render_studies() -> None:
    from studies.storage import DEFAULT_STORAGE  # the same default as pals-study (optuna is imported only here)

    url = st.text_input("Optuna storage URL", value=os.environ.get(STUDY_STORAGE_ENV) or DEFAULT_STORAGE,
                        key="study_storage", help=f"Default: ${STUDY_STORAGE_ENV}, else {DEFAULT_STORAGE}.")
    module = _studies_module()
    if module is None:
        st.info("The studies view (explorer/studies_view.py) is not installed in this checkout.")
        return
    module.render(url.strip())


def main() -> None:
    st.set_page_config(page_title="PALs Explorer", page_icon="🧮", layout="wide")
    raw = sidebar.render()
    st.title("PALs Explorer")
    st.caption("How large an adapter fits your parameter budget, what it costs, and what it scores — after "
               "Stickland & Murray, *BERT and PALs* (ICML 2019). Every number comes from the calculator `pals_core.budget`.")
    inp: Optional[Inputs] = None
    costs: Optional[list[Cost]] = None
    chosen: Optional[Cost] = None
    try:
        inp = parse_inputs(raw)
        costs = design_view.table(inp)
    except ValueError as e:
        inp, costs = None, None
        st.error(f"Bad input: {e}")
    if inp is not None and costs:
        st.markdown(design_view.budget_sentence(inp))
        refused = getattr(costs, "refused", [])
        if refused:  # designs this model cannot have: named with their reason, never priced
            st.warning(f"{len(refused)} design(s) cannot be built on this model and are not in the table:\n"
                       + "\n".join(f"- **{label}**: {reason}" for label, reason in refused))
        chosen = design_view.choose_design(costs)
        design_view.render_metrics(chosen, inp)
    tabs = st.tabs(TABS)
    with tabs[0]:
        if chosen is not None:
            _guard("The design view", design_view.render_design_tab, inp, costs, chosen)
        else:
            st.info("Fix the question in the sidebar to see the designs.")
    with tabs[1]:
        if chosen is not None:
            _guard("The breakdown", design_view.render_breakdown_tab, inp, costs, chosen)
        else:
            st.info("Fix the question in the sidebar to see where the parameters go.")
    with tabs[2]:
        _guard("The paper check", design_view.render_paper_tab)
    with tabs[3]:
        st.fragment(_launcher)(inp if chosen is not None else None, chosen)
        st.divider()
        _guard("The runs", runs_view.render, costs)
    with tabs[4]:
        _guard("The studies view", render_studies)
