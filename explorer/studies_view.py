"""The Studies tab: results of ``pals-study`` studies read from their Optuna storage (the same URL the workers use).

Layout only: the leaderboard, counts and figures all come from ``studies.report`` (scores on its one scale, 0–100 for
a pals-study study), the stale trials from ``studies.stale``, the storage from ``studies.storage``.
``render(storage_url)`` can be called from any streamlit page (``app.py``'s Studies tab). The start form and the
workers' table are ``explorer.study_start``; the command to paste into a shell names the selected study and its
storage (``shell_command``).
"""

from __future__ import annotations

import os
import shlex

import pandas as pd
import streamlit as st

from pals_core.budget.costs import Cost
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.supervise.workers import list_workers
from studies import report
from studies.errors import StudyError
from studies.runner import DEFINITION_ATTR, machine_text, plural
from studies.settings import SCORE_AT, SETTINGS_ATTR, StudySettings
from studies.stale import stale_trials
from studies.storage import NoStudies, load, masked, open_storage, study_names
from studies.workers import absolute_storage

from . import icons
from .study_start import render_start_form, render_workers

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
    """A study's fixed settings (``studies.settings``, stored in the study) in one line a person can read; one that
    cannot be read is said to be so."""
    if SETTINGS_ATTR not in attrs:
        return "This study holds no PALs settings (not made by `pals-study`)."
    try:
        return _settings_text(StudySettings.from_dict(attrs[SETTINGS_ATTR]))
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # settings another program wrote, or edited
        return (
            f"This study's PALs settings cannot be read ({' '.join(str(e).split())}); its trials are shown as stored."
        )


def _settings_text(s) -> str:
    """A readable study's settings (``StudySettings``) in one line."""
    model = {None: EMBEDDED_MODEL, "tiny": "tiny random BERT"}.get(s.model, s.model)
    train = "all" if s.max_train_examples is None else f"{s.max_train_examples:,}"
    dev = "all" if s.max_eval_examples is None else f"{s.max_eval_examples:,}"
    methods = ", ".join(s.methods) if s.methods else "every method"
    lr = "each method's own" if s.lr is None else f"{s.lr:g}"
    return (
        f"**{s.definition}** on **{model}** · tasks **{', '.join(s.tasks)}** · budget **{s.budget_obj().describe()}** · "
        f"{s.steps} steps (evaluated every {s.eval_every}), batch {s.batch_size}, max length {s.max_len}, lr {lr}, "
        f"{s.sampling} sampling, train examples per task: {train}, dev: {dev} · searched: {methods} · a trial "
        f"scores {SCORE_AT[s.score_at]} · heartbeat every {s.heartbeat} s, stale after {s.grace_s} s, "
        f"up to {s.max_retry} retr{'y' if s.max_retry == 1 else 'ies'} of a dead worker's trial"
        + (f" · machine: **{machine_text(s)}**" if s.machine is not None else "")
    )


def render_settings(study) -> None:
    st.markdown(
        "**Settings** (fixed for every trial; workers that join inherit them): " + settings_line(study.user_attrs)
    )


def _unread_warning(study) -> None:
    """One warning naming the trials whose user attributes of the wrong type are not shown (``report.trials_frame``)."""
    text = report.unread_text(report.trials_frame(study))
    if text:
        st.warning(text[0].upper() + text[1:])


def missing_sqlite_file(url: str) -> str | None:
    """The file of a SQLite storage that does not exist yet in a folder that does (a first visit: no study has been
    started), else None — what the view shows as an invitation, not an error."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        u = make_url(url)
    except (ArgumentError, ValueError):
        return None
    path = u.database
    if u.get_backend_name() != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    return path if not os.path.exists(path) and os.path.isdir(os.path.dirname(os.path.abspath(path))) else None


def _creating(storage_url: str) -> bool:
    """Whether a worker started from this page is alive on this storage (it creates the file in a moment)."""
    return any(w.alive and w.get("storage") == absolute_storage(storage_url) for w in list_workers())


def shell_command(study, storage_url: str) -> str | None:
    """``pals-study run DEFINITION --storage URL --study-name NAME --trials N``: more workers for the selected study,
    pasted into a shell (its settings are stored in it; the storage as an absolute path, a password hidden). N: the
    largest total a worker of this page was given for it, else its finished trials and 10 more. None for a study
    pals-study did not make (no definition to run)."""
    definition = study.user_attrs.get(DEFINITION_ATTR)
    if not isinstance(definition, str):
        return None
    asked = [
        w.get("trials")
        for w in list_workers()
        if w.get("study_name") == study.study_name and isinstance(w.get("trials"), int)
    ]
    finished = sum(t.state.name in ("COMPLETE", "PRUNED") for t in study.get_trials(deepcopy=False))
    trials = max(asked) if asked else finished + 10
    return shlex.join(
        [
            "pals-study",
            "run",
            definition,
            "--storage",
            masked(absolute_storage(storage_url)),
            "--study-name",
            study.study_name,
            "--trials",
            str(trials),
        ]
    )


def board_for_page(board: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard as the page shows it: scores as ``report`` gives them (one scale), whole numbers as whole
    numbers, a sizeless design's d_s '—', and a missing value an empty cell (never "None")."""
    if board.empty:
        return board
    board = board.copy()
    if "d_s" in board.columns:  # a sizeless design has none: '—', as every table of the page
        board["d_s"] = [f"{int(v)}" if pd.notna(v) else "—" for v in board["d_s"]]
    for column in board.columns:
        values = board[column]
        if str(values.dtype) == "Int64" and values.isna().any():
            board[column] = ["" if pd.isna(v) else str(int(v)) for v in values]
        elif not pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            board[column] = ["" if v is None or (not isinstance(v, (list, dict)) and pd.isna(v)) else v for v in values]
    return board


def _column_config(board: pd.DataFrame, scaled: bool) -> dict:
    """Widths that keep design, location, d_s and the score on screen at 1400 px, and the scores' format."""
    scores = [c for c in board.columns if c in (report.AVERAGE, report.CI95) or str(c).startswith("score ")]
    config = {c: st.column_config.NumberColumn(format="%.2f" if scaled else "%.4f") for c in scores}
    config[report.AVERAGE] = st.column_config.NumberColumn(
        "dev average (0–100)" if scaled else report.AVERAGE, format="%.2f" if scaled else "%.4f"
    )
    for c in ("rank", "trial", "d_s", "location", "pareto", "seeds"):
        if c in board.columns:
            config[c] = st.column_config.Column(width="small")
    if report.STEP in board.columns:
        config[report.STEP] = st.column_config.Column(
            "step", width="small", help="the evaluation step the score comes from (the study's score_at)"
        )
    if "design" in board.columns:
        config["design"] = st.column_config.TextColumn(width="medium")
    if report.PARAMS in board.columns:
        config[report.PARAMS] = st.column_config.NumberColumn(format="localized")
    return config


def _storage_names(storage_url: str, missing: str | None):
    """(the storage, its study names) — (None, []) for a file not made yet; ``StudyError`` for one that cannot be
    read, ``NoStudies`` for a database without Optuna's tables."""
    if missing is not None:
        return None, []
    storage = _storage(storage_url)
    return storage, study_names(storage)


def render(storage_url: str, inp=None, chosen: Cost | None = None) -> None:
    """Start, stop and resume workers; pick a study in ``storage_url``; show its counts, stale trials, leaderboard and
    figures. ``inp`` (the sidebar's question) and ``chosen`` (the page's design): what the start form starts from. An
    empty storage is an invitation."""
    st.subheader("Optuna studies")
    missing = missing_sqlite_file(storage_url)
    creating = missing is not None and _creating(storage_url)
    if missing is not None and not creating:
        st.info(
            f"**No study here yet** (`{masked(storage_url)}` will be created by the first worker). Start one with "
            "the form below — it starts from your question in the sidebar: its tasks, model, budget, methods and "
            f"the rest — or from a shell: `pals-study run design --storage {masked(absolute_storage(storage_url))} "
            "--trials 10`. A study trains many designs (short runs) and ranks them by dev average; its leaderboard "
            "and figures appear here.",
            icon=icons.STUDY,
        )
    try:
        storage, names = _storage_names(storage_url, missing)
        problem = None
    except NoStudies as e:  # a database without Optuna's tables: read, never changed
        storage, names, problem = None, [], f"No study in this storage: {e}."
    except StudyError as e:
        storage, names, problem = None, [], str(e)
    with st.expander("Start a study worker", expanded=not names):
        render_start_form(storage_url, inp, chosen, names)
    render_workers()
    if missing is not None:
        if creating:
            st.info("A worker started here is creating this storage; press Refresh in a moment.")
            st.button("Refresh", key="studies_view_refresh_new")
        return
    if problem is not None:
        if _creating(storage_url):
            st.info(f"A worker started here is creating this storage ({problem}); press Refresh in a moment.")
            st.button("Refresh", key="studies_view_refresh_new")
        elif problem.startswith("No study"):
            st.info(problem + " Start one with the form above, or `pals-study run design`.")
        else:
            st.error(problem)
        return
    if not names:
        st.info("No study in this storage yet. Start one with the form above, or `pals-study run design`.")
        return
    name = st.selectbox("Study", names, key="studies_view_study")
    try:
        study = load(storage, name)
    except StudyError as e:
        st.error(str(e))
        return
    if st.button("Refresh", key="studies_view_refresh"):
        st.rerun()
    render_study(study, storage, storage_url)


def render_study(study, storage, storage_url: str) -> None:
    """One study: its settings, the command that adds workers to it, counts, stale trials, leaderboard, figures."""
    render_settings(study)
    command = shell_command(study, storage_url)
    if command is not None:
        st.markdown("More workers for this study, from a shell on any machine that reaches the storage:")
        st.code(command, language="bash", wrap_lines=True)
    stale = stale_trials(study, storage)
    scaled = report.scale_of(study) != 1.0
    s = report.summary(study, stale)
    c = s["counts"]
    cols = st.columns(6)
    cols[0].metric("complete", c["COMPLETE"])
    cols[1].metric(
        "pruned",
        c["PRUNED"],
        help=f"and {plural(c['SURPLUS'], 'surplus trial')}, given up untrained: the study's "
        "target was taken by other workers' trials"
        if c.get("SURPLUS")
        else None,
    )
    cols[2].metric("failed", c["FAIL"])
    cols[3].metric("running", c["RUNNING"] + c["WAITING"], help="running, and queued (waiting) for the next worker")
    cols[4].metric("stale", c["STALE"], help="running in the storage, but their worker stopped sending heartbeats")
    best = s["best"]
    value = None if best is None else best[report.AVERAGE]
    cols[5].metric(
        "best dev average",
        "—" if value is None or value != value else f"{value:.2f}" if scaled else f"{value:.4f}",
        help="on 0–100 (each dev metric × 100)" if scaled else "as the study stores it",
    )
    for trial in stale.values():
        st.warning(f"Trial {trial.number} is {trial.text()}, past its grace of {trial.grace_s} s: {trial.fate()}.")
    if best is not None and best.get("design"):
        st.markdown(
            f"Best so far: trial **{best['trial']}**, **{best['design']}**"
            + (f", d_s = {best['d_s']}" if not pd.isna(best.get("d_s")) else "")
            + (f", scored at step {best[report.STEP]}" if not pd.isna(best.get(report.STEP, None)) else "")
        )
    for line in report.undecided_tasks(study):
        st.warning(f"Task {line}.")
    _unread_warning(study)
    st.markdown(
        "**Leaderboard** (completed trials, best first; `pareto` = on the accuracy-vs-parameters front) — "
        + report.scoring_text(study)
    )
    board = report.leaderboard(study)
    if board.empty:
        st.info("No completed trial yet.")
    else:
        st.dataframe(
            board_for_page(board), hide_index=True, width="stretch", column_config=_column_config(board, scaled)
        )
    figs, missing_figs = report.figures(study)
    for key, title in FIGURE_TITLES.items():
        if key in figs:
            st.plotly_chart(figs[key], width="stretch", config=CHART, key=f"studies_view_{key}")
        else:
            st.caption(f"{title}: {missing_figs.get(key, 'not available')}")
