"""The Studies tab: results of ``pals-study`` studies read from their Optuna storage (the same URL the workers use).

Layout only: the leaderboard, counts and figures all come from ``studies.report``; the storage from
``studies.storage``. ``render(storage_url)`` can be called from any streamlit page (``app.py``'s Studies tab).
Starting, stopping and resuming study workers from the page is ``explorer.study_workers`` (the rules of training
runs, ``explorer.registry``); this file only draws the form and the workers' table.
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
    """A study's fixed settings (``studies.settings``, stored in the study) in one line a person can read; one that
    cannot be read is said to be so."""
    from studies.settings import SETTINGS_ATTR, StudySettings

    if SETTINGS_ATTR not in attrs:
        return "This study holds no PALs settings (not made by `pals-study`)."
    try:
        return _settings_text(StudySettings.from_dict(attrs[SETTINGS_ATTR]))
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # settings another program wrote, or edited
        return f"This study's PALs settings cannot be read ({' '.join(str(e).split())}); its trials are shown as stored."


def _settings_text(s) -> str:
    """A readable study's settings (``StudySettings``) in one line."""
    from studies.runner import machine_text

    model = {None: "embedded MiniLM", "tiny": "tiny random BERT"}.get(s.model, s.model)
    train = "all" if s.max_train_examples is None else f"{s.max_train_examples:,}"
    dev = "all" if s.max_eval_examples is None else f"{s.max_eval_examples:,}"
    methods = ", ".join(s.methods) if s.methods else "every method"
    return (f"**{s.definition}** on **{model}** · tasks **{', '.join(s.tasks)}** · budget **{s.budget_obj().describe()}** · "
            f"{s.steps} steps (evaluated every {s.eval_every}), batch {s.batch_size}, max length {s.max_len}, lr {s.lr:g}, "
            f"{s.sampling} sampling, train examples per task: {train}, dev: {dev} · searched: {methods}"
            + (f" · machine: **{machine_text(s)}**" if s.machine is not None else ""))


def render_settings(study) -> None:
    st.markdown("**Settings** (fixed for every trial; workers that join inherit them): " + settings_line(study.user_attrs))


MODELS = {"tiny random BERT (smoke study)": "tiny", "embedded MiniLM": None}


def _machine_inputs() -> dict[str, str]:
    """The study's machine budgets (``Machine`` field → text, as ``pals-study run``'s flags; help text from its
    declaration): empty memory and slowdown = no bound. Read by pals-study's parser on Start, which says what is wrong."""
    from pals_core.budget.flags import flags_of
    from pals_core.budget.machine import Machine
    from pals_core.budget.memory import PRECISIONS
    from studies.settings import MACHINE_NAMES

    from .machine_view import devices

    help_of = {f.name: f.help for f in flags_of(Machine, MACHINE_NAMES)}
    c = st.columns(4)
    memory = c[0].text_input("Memory budget", value="", placeholder="none (e.g. 24GB)", key="study_start_memory",
                             help=help_of["memory"])
    slowdown = c[1].text_input("Max step slowdown", value="", placeholder="none (e.g. 1.2 × base)",
                               key="study_start_slowdown", help=help_of["max_slowdown"])
    precision = c[2].selectbox("Precision", list(PRECISIONS), key="study_start_precision", help=help_of["precision"])
    names = ["default"] + devices()
    device = c[3].selectbox("Device profile", names, key="study_start_device", help=help_of["device"])
    return {"memory": memory, "max_slowdown": slowdown, "precision": precision,
            "device": "" if device == "default" else device}


def render_start_form(storage_url: str) -> None:
    """Definition, study name, tasks, model, budget, steps, trials → a ``pals-study run`` worker in the background."""
    from studies.definitions import DEFINITIONS
    from studies.settings import DEFAULT_BUDGET_RATIO, DEFAULT_TASKS

    from . import study_workers

    with st.form("study_start_form"):
        st.markdown("**Start a study worker** (`pals-study run` in the background; it joins the study if it exists)")
        c = st.columns(4)
        definition = c[0].selectbox("Definition", list(DEFINITIONS), key="study_start_definition")
        name = c[1].text_input("Study name", value="", key="study_start_name", help="Default: the definition's name.")
        tasks = c[2].text_input("Tasks", value=",".join(DEFAULT_TASKS), key="study_start_tasks")
        model = c[3].selectbox("Model", list(MODELS), key="study_start_model")
        c = st.columns(4)
        budget = c[0].number_input("Budget (× base)", min_value=1.0, value=DEFAULT_BUDGET_RATIO, step=0.01,
                                   format="%.4f", key="study_start_budget")
        steps = c[1].number_input("Steps per trial", min_value=1, value=60, step=1, key="study_start_steps")
        trials = c[2].number_input("Trials (study total)", min_value=1, value=10, step=1, key="study_start_trials")
        examples = c[3].number_input("Examples per task (0 = default)", min_value=0, value=0, step=16,
                                     key="study_start_examples")
        machine = _machine_inputs()
        submitted = st.form_submit_button("Start")
    if submitted:
        try:
            settings = study_workers.settings_from_form(definition, tasks=tasks, model=MODELS[model], budget=budget,
                                                        steps=int(steps), max_examples=int(examples) or None,
                                                        machine=machine)
            worker = study_workers.start(settings, storage_url, name.strip() or definition, int(trials))
        except (ValueError, OSError) as e:  # StudyError is a ValueError
            st.error(f"Could not start the study: {e}")
        else:
            st.success(f"Started worker {worker.id} (pid {worker.owner}) on study {worker.get('study_name')!r}.")


def render_workers() -> None:
    """Every worker started from this page (read from disk each time): status, and Stop / Resume."""
    from . import study_workers

    workers = study_workers.list_workers()
    if not workers:
        return
    st.markdown(f"**Study workers** (folders in `{study_workers.workers_root()}`)")
    for w in workers:
        c = st.columns([5, 2, 1, 1])
        code = "" if w.exit_code is None else f", exit status {w.exit_code}"
        c[0].markdown(f"`{w.id}` · study **{w.get('study_name') or '—'}** · {w.get('trials') or '—'} trials")
        c[1].markdown(f"**{w.status}**" + (f" (pid {w.owner})" if w.owner else code))
        if w.alive and c[2].button("Stop", key=f"study_worker_stop_{w.id}"):
            try:
                study_workers.stop(w)
            except OSError as e:
                st.error(f"Could not stop {w.id}: {e}")
            st.rerun()
        if not w.alive and w.status != "finished" and c[3].button("Resume", key=f"study_worker_resume_{w.id}"):
            try:
                study_workers.resume(w)
            except (ValueError, OSError) as e:
                st.error(f"Could not resume {w.id}: {e}")
            else:
                st.rerun()
        with st.expander(f"log of {w.id}"):
            st.code(w.log_tail(20) or "(empty)", language=None)


def _unread_warning(study) -> None:
    """One warning naming the trials whose user attributes of the wrong type are not shown (``report.trials_frame``)."""
    text = report.unread_text(report.trials_frame(study))
    if text:
        st.warning(text[0].upper() + text[1:])


def render(storage_url: str) -> None:
    """Start, stop and resume workers; pick a study in ``storage_url``; show its counts, leaderboard and figures."""
    st.subheader("Optuna studies")
    render_start_form(storage_url)
    render_workers()
    st.caption(f"Storage `{masked(storage_url)}` — add trials with "
               f"`pals-study run design --storage {masked(storage_url)} --trials N` (from any number of machines).")
    try:
        storage = _storage(storage_url)
        names = study_names(storage)
    except NoStudies as e:  # a database without Optuna's tables: read, never changed
        st.info(f"No study in this storage: {e}. Start one with `pals-study run design`.")
        return
    except StudyError as e:
        from . import study_workers

        if any(w.alive and w.get("storage") == study_workers.absolute_storage(storage_url)
               for w in study_workers.list_workers()):
            st.info(f"A worker started here is creating this storage ({e}); press Refresh in a moment.")
            st.button("Refresh", key="studies_view_refresh_new")
        else:
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
    cols[1].metric("pruned", c["PRUNED"], help=f"and {c['SURPLUS']} surplus trial(s), given up untrained: the study's "
                   "target was taken by other workers' trials" if c.get("SURPLUS") else None)
    cols[2].metric("failed", c["FAIL"])
    cols[3].metric("running", c["RUNNING"] + c["WAITING"])
    best = s["best"]
    cols[4].metric("best dev average", "—" if best is None else f"{best[report.AVERAGE]:.4f}")
    if best is not None and best.get("design"):
        st.markdown(f"Best so far: trial **{best['trial']}**, **{best['design']}**"
                    + (f", d_s = {best['d_s']}" if not pd.isna(best.get("d_s")) else ""))
    _unread_warning(study)
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
