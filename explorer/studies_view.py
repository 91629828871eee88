"""The Studies tab: results of ``pals-study`` studies read from their Optuna storage (the same URL the workers use).

Layout only: the leaderboard, counts and figures all come from ``studies.report``; the storage from
``studies.storage``. ``render(storage_url)`` can be called from any streamlit page (``app.py``'s Studies tab).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from studies import report
from studies.errors import StudyError
from studies.storage import NoStudies, load, masked, open_storage, study_names

CHART = {"displaylogo": False}
FIGURE_TITLES = {
    "pareto": "Pareto front: dev average vs task-specific parameters",
    "history": "Optimisation history",
    "importances": "Parameter importances",
    "learning_curves": "Dev average during training",
}


@st.cache_resource(show_spinner=False, max_entries=8)
def _storage(url: str):
    return open_storage(url, heartbeat=None, create=False)


def settings_line(attrs: dict) -> str:
    """A study's fixed settings (``studies.settings``, stored in the study) in one line a person can read."""
    from studies.settings import SETTINGS_ATTR, StudySettings

    if SETTINGS_ATTR not in attrs:
        return "This study holds no PALs settings (not made by `pals-study`)."
    s = StudySettings.from_dict(attrs[SETTINGS_ATTR])
    model = {None: "embedded MiniLM", "tiny": "tiny random BERT"}.get(s.model, s.model)
    train = "all" if s.max_train_examples is None else f"{s.max_train_examples:,}"
    dev = "all" if s.max_eval_examples is None else f"{s.max_eval_examples:,}"
    methods = ", ".join(s.methods) if s.methods else "every method"
    return (f"**{s.definition}** on **{model}** · tasks **{', '.join(s.tasks)}** · budget **{s.budget_obj().describe()}** · "
            f"{s.steps} steps (evaluated every {s.eval_every}), batch {s.batch_size}, max length {s.max_len}, lr {s.lr:g}, "
            f"{s.sampling} sampling, train examples per task: {train}, dev: {dev} · searched: {methods}")


def render_settings(study) -> None:
    st.markdown("**Settings** (fixed for every trial; workers that join inherit them): " + settings_line(study.user_attrs))


def render(storage_url: str) -> None:
    """Pick a study in ``storage_url``; show its counts, leaderboard and figures."""
    st.subheader("Optuna studies")
    st.caption(f"Storage `{masked(storage_url)}` — add trials with "
               f"`pals-study run design --storage {masked(storage_url)} --trials N` (from any number of machines).")
    try:
        storage = _storage(storage_url)
        names = study_names(storage)
    except NoStudies as e:  # a database without Optuna's tables: read, never changed
        st.info(f"No study in this storage: {e}. Start one with `pals-study run design`.")
        return
    except StudyError as e:
        st.error(str(e))
        return
    if not names:
        st.info("No study in this storage yet. Start one with `pals-study run design`.")
        return
    name = st.selectbox("Study", names, key="studies_view_study")
    try:
        study = load(storage, name)
    except StudyError as e:
        st.error(str(e))
        return
    if st.button("Refresh", key="studies_view_refresh"):
        st.rerun()
    render_settings(study)
    s = report.summary(study)
    c = s["counts"]
    cols = st.columns(5)
    cols[0].metric("complete", c["COMPLETE"])
    cols[1].metric("pruned", c["PRUNED"])
    cols[2].metric("failed", c["FAIL"])
    cols[3].metric("running", c["RUNNING"] + c["WAITING"])
    best = s["best"]
    cols[4].metric("best dev average", "—" if best is None else f"{best[report.AVERAGE]:.4f}")
    if best is not None and best.get("design"):
        st.markdown(f"Best so far: trial **{best['trial']}**, **{best['design']}**"
                    + (f", d_s = {best['d_s']}" if not pd.isna(best.get("d_s")) else ""))
    st.markdown("**Leaderboard** (completed trials, best first; `pareto` = on the accuracy-vs-parameters front)")
    board = report.leaderboard(study)
    if board.empty:
        st.info("No completed trial yet.")
    else:
        st.dataframe(board, hide_index=True, width="stretch")
    figs, missing = report.figures(study)
    for key, title in FIGURE_TITLES.items():
        if key in figs:
            st.plotly_chart(figs[key], width="stretch", config=CHART, key=f"studies_view_{key}")
        else:
            st.caption(f"{title}: {missing.get(key, 'not available')}")
