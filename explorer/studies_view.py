"""The Studies tab: results of ``pals-study`` studies read from their Optuna storage (the same URL the workers use).

Layout only: the leaderboard, counts and figures all come from ``studies.report``; the storage from
``studies.storage``. ``render(storage_url)`` can be called from any streamlit page (``app.py``'s Studies tab).
Starting, stopping and resuming study workers from the page is ``studies.workers`` (the argument list) and
``pals_core.supervise.workers`` (the process rules of training runs), which this view calls directly; this
file only draws the form and the workers' table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from pals_core.budget.machine import Machine
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.flags import flags_of
from pals_core.footprint.constraints import CONSTRAINTS
from pals_core.footprint.memory import PRECISIONS
from pals_core.supervise.roots import workers_root
from pals_core.supervise.workers import list_workers, stop
from studies import report
from studies import workers as studies_workers
from studies.definitions import DEFINITIONS
from studies.errors import StudyError
from studies.runner import machine_text
from studies.settings import DEFAULT_BUDGET_RATIO, DEFAULT_TASKS, MACHINE_NAMES, SETTINGS_ATTR, StudySettings
from studies.storage import NoStudies, load, masked, open_storage, study_names
from studies.workers import absolute_storage, resume, settings_from_form

from .inputs import EMBEDDED, LOCAL, TINY
from .machine_view import devices

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
        f"{s.steps} steps (evaluated every {s.eval_every}), batch {s.batch_size}, max length {s.max_len}, "
        f"lr {lr}, "
        f"{s.sampling} sampling, train examples per task: {train}, dev: {dev} · searched: {methods}"
        + (f" · machine: **{machine_text(s)}**" if s.machine is not None else "")
    )


def render_settings(study) -> None:
    st.markdown(
        "**Settings** (fixed for every trial; workers that join inherit them): " + settings_line(study.user_attrs)
    )


MODELS = {"tiny random BERT (smoke study)": "tiny", EMBEDDED_MODEL: None}
FORM_FOR = "_study_form_for"  # the sidebar question the start form was last filled from


@dataclass(frozen=True)
class FormStart:
    """What the start form starts from: the sidebar's question where a study can train it (``from_question``)."""

    tasks: str = ",".join(DEFAULT_TASKS)
    tasks_file: str | None = None  # absolute path of the question's tasks file (None: GLUE names)
    model: str = "tiny random BERT (smoke study)"  # a key of the form's model choices
    model_path: str | None = None  # the sidebar's local checkpoint folder, offered as a model
    budget_kind: str = "ratio"  # ratio, extra or per_task (``Budget``'s field)
    budget: float = DEFAULT_BUDGET_RATIO
    budget_of: str = "base"  # what a ratio is of (``Budget.OF``): the sidebar's
    notes: tuple[str, ...] = ()  # what of the question a study cannot take, said under the form

    def models(self) -> dict[str, str | None]:
        """The form's model choices: the two the trainer embeds, and the sidebar's local folder if it has one."""
        return {**MODELS, **({f"your checkpoint: {self.model_path}": self.model_path} if self.model_path else {})}


def from_question(inp) -> FormStart:
    """The start form's values from the sidebar's question (an ``inputs.Inputs``; None: pals-study's defaults): its
    tasks (GLUE names, or a tasks file's names and path), its model where the trainer builds it, its budget."""
    if inp is None:
        return FormStart()
    notes = []
    if inp.tasks_file:
        tasks, tasks_file = ",".join(r.name for r in inp.records), os.path.abspath(os.path.expanduser(inp.tasks_file))
    elif inp.records:
        tasks, tasks_file = ",".join(r.glue or r.name for r in inp.records), None
    else:
        tasks, tasks_file = ",".join(DEFAULT_TASKS), None
        notes.append(f"{len(inp.tasks)} anonymous tasks cannot be trained: the form starts on {tasks}")
    choice = st.session_state.get("model")
    path = None
    if choice == TINY:
        model = "tiny random BERT (smoke study)"
    elif choice == LOCAL and inp.train_model:
        path = os.path.abspath(inp.train_model)
        model = f"your checkpoint: {path}"
    else:
        model = EMBEDDED_MODEL
        if choice != EMBEDDED:
            notes.append(
                f"{inp.model.name} is a shape only: a study trains a model the trainer builds (the embedded {EMBEDDED_MODEL})"
            )
    b = inp.budget
    kind = "ratio" if b.ratio is not None else ("extra" if b.extra is not None else "per_task")
    return FormStart(tasks, tasks_file, model, path, kind, float(getattr(b, kind)), b.of, tuple(notes))


def _fill_form(start: FormStart) -> None:
    """The form's fields follow the sidebar's question: filled from it on the first draw and whenever it changes
    (what a person typed in between stays until then)."""
    if st.session_state.get(FORM_FOR) == start:
        return
    st.session_state[FORM_FOR] = start
    st.session_state["study_start_tasks"] = start.tasks
    st.session_state["study_start_model"] = start.model
    if start.budget_kind == "ratio":
        st.session_state["study_start_budget"] = start.budget
    else:
        st.session_state["study_start_budget_count"] = f"{int(start.budget):,}"


def _machine_inputs() -> dict[str, str]:
    """The study's machine: one text field per constraint record (``pals_core.footprint.constraints.CONSTRAINTS``:
    training memory, step time, serving memory, …; key ``study_start_<field>``, its record's label and help), then
    precision and device profile (``Machine`` field → text, as ``pals-study run``'s flags; help text from their
    declaration). An empty bound = none. Read by pals-study's parser on Start, which says what is wrong."""
    help_of = {f.name: f.help for f in flags_of(Machine, MACHINE_NAMES)}
    out = {}
    for col, c in zip(st.columns(len(CONSTRAINTS)), CONSTRAINTS):
        out[c.field] = col.text_input(
            c.label, value="", placeholder="none", key=f"study_start_{c.field}", help=help_of[c.field]
        )
    a, b = st.columns(2)
    out["precision"] = a.selectbox(
        "Precision", list(PRECISIONS), key="study_start_precision", help=help_of["precision"]
    )
    names = ["default"] + devices()
    device = b.selectbox("Device profile", names, key="study_start_device", help=help_of["device"])
    out["device"] = "" if device == "default" else device
    return out


def render_start_form(storage_url: str, inp=None) -> None:
    """Definition, study name, tasks, model, budget, steps, trials → a ``pals-study run`` worker in the background;
    tasks, model and budget start from the sidebar's question (``from_question``)."""
    start = from_question(inp)
    _fill_form(start)
    models = start.models()
    with st.form("study_start_form"):
        st.markdown("**Start a study worker** (`pals-study run` in the background; it joins the study if it exists)")
        c = st.columns(4)
        definition = c[0].selectbox("Definition", list(DEFINITIONS), key="study_start_definition")
        name = c[1].text_input("Study name", value="", key="study_start_name", help="Default: the definition's name.")
        tasks = c[2].text_input(
            "Tasks",
            key="study_start_tasks",
            help=f"Names out of {start.tasks_file}" if start.tasks_file else "GLUE tasks, comma-separated",
        )
        model = c[3].selectbox("Model", list(models), key="study_start_model")
        c = st.columns(4)
        if start.budget_kind == "ratio":
            of = "" if start.budget_of == "base" else f" {start.budget_of}"
            budget = c[0].number_input(
                f"Budget (×{of} base)", min_value=1.0, step=0.01, format="%.4f", key="study_start_budget"
            )
        else:
            what = "Extra parameters, all tasks" if start.budget_kind == "extra" else "Cap per task (head + adapter)"
            budget = c[0].text_input(what, key="study_start_budget_count", help="e.g. 15M, 250k")
        steps = c[1].number_input("Steps per trial", min_value=1, value=60, step=1, key="study_start_steps")
        trials = c[2].number_input("Trials (study total)", min_value=1, value=10, step=1, key="study_start_trials")
        examples = c[3].number_input(
            "Examples per task (0 = default)", min_value=0, value=0, step=16, key="study_start_examples"
        )
        machine = _machine_inputs()
        st.caption(
            "Tasks, model and budget start from your question in the sidebar"
            + (f" (tasks of `{start.tasks_file}`)" if start.tasks_file else "")
            + ("; " + "; ".join(start.notes) if start.notes else "")
            + "."
        )
        submitted = st.form_submit_button("Start")
    if submitted:
        try:
            settings = settings_from_form(
                definition,
                tasks=tasks,
                model=models[model],
                budget=budget,
                budget_kind=start.budget_kind,
                budget_of=start.budget_of,
                tasks_file=start.tasks_file,
                steps=int(steps),
                max_examples=int(examples) or None,
                machine=machine,
            )
            worker = studies_workers.start(settings, storage_url, name.strip() or definition, int(trials))
        except (ValueError, OSError) as e:  # the worker's start says a StudyError as a ValueError
            st.error(f"Could not start the study: {e}")
        else:
            st.success(f"Started worker {worker.id} (pid {worker.owner}) on study {worker.get('study_name')!r}.")


def render_workers() -> None:
    """Every worker started from this page (read from disk each time): status, and Stop / Resume."""
    workers = list_workers()
    if not workers:
        return
    st.markdown(f"**Study workers** (folders in `{workers_root()}`)")
    for w in workers:
        c = st.columns([5, 2, 1, 1])
        code = "" if w.exit_code is None else f", exit status {w.exit_code}"
        c[0].markdown(f"`{w.id}` · study **{w.get('study_name') or '—'}** · {w.get('trials') or '—'} trials")
        c[1].markdown(f"**{w.status}**" + (f" (pid {w.owner})" if w.owner else code))
        if w.alive and c[2].button("Stop", key=f"study_worker_stop_{w.id}"):
            try:
                stop(w)
            except OSError as e:
                st.error(f"Could not stop {w.id}: {e}")
            st.rerun()
        if not w.alive and w.status != "finished" and c[3].button("Resume", key=f"study_worker_resume_{w.id}"):
            try:
                resume(w)
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


def pals_study(study) -> bool:
    """A study ``pals-study`` made: its objective is the dev average as a fraction (shown 0–100 here)."""
    return SETTINGS_ATTR in study.user_attrs


def score_columns(board: pd.DataFrame) -> list[str]:
    """The leaderboard's columns that hold dev scores (fractions in the study): the average, its interval, each
    task's (``report.score_column``)."""
    return [c for c in board.columns if c in (report.AVERAGE, report.CI95) or str(c).startswith("score ")]


def board_on_scale(board: pd.DataFrame, scaled: bool) -> pd.DataFrame:
    """The leaderboard as the page shows tables: its scores on the page's scale, 0–100, where the study is
    ``pals-study``'s (``scaled``; another program's objective is shown as stored), and '—' for a missing text
    value (a sizeless design's d_s), never None."""
    if board.empty:
        return board
    board = board.copy()
    if scaled:
        for column in score_columns(board):
            board[column] = pd.to_numeric(board[column], errors="coerce") * 100
    if "d_s" in board.columns:  # a sizeless design has none: '—', as every table of the page
        board["d_s"] = [f"{int(v):,}" if pd.notna(v) else "—" for v in board["d_s"]]
    for column in board.columns:
        if board[column].dtype == object:
            board[column] = board[column].map(lambda v: "—" if v is None or (isinstance(v, float) and v != v) else v)
    tasks = [c for c in board.columns if str(c).startswith("score ")]  # each task's score beside the average
    at = (
        list(board.columns).index(report.AVERAGE) + 1 + (report.CI95 in board.columns) if report.AVERAGE in board else 0
    )
    rest = [c for c in board.columns if c not in tasks]
    return board[rest[:at] + tasks + rest[at:]]


def render(storage_url: str, inp=None) -> None:
    """Start, stop and resume workers; pick a study in ``storage_url``; show its counts, leaderboard and figures.
    ``inp`` (the sidebar's question): what the start form starts from. An empty storage is an invitation."""
    st.subheader("Optuna studies")
    missing = missing_sqlite_file(storage_url)
    creating = missing is not None and _creating(storage_url)
    if missing is not None and not creating:
        st.info(
            f"**No study here yet** (`{masked(storage_url)}` will be created by the first worker). Start one with "
            "the form below — it starts from your question in the sidebar: its tasks, model and budget — or from a "
            f"shell: `pals-study run design --storage {masked(storage_url)} --trials 10`. A study trains many designs "
            "(short runs) and ranks them by dev average; its leaderboard and figures appear here.",
            icon="🧪",
        )
    render_start_form(storage_url, inp)
    render_workers()
    st.caption(
        f"Storage `{masked(storage_url)}` — add trials with "
        f"`pals-study run design --storage {masked(storage_url)} --trials N` (from any number of machines)."
    )
    if missing is not None:
        if creating:
            st.info("A worker started here is creating this storage; press Refresh in a moment.")
            st.button("Refresh", key="studies_view_refresh_new")
        return
    try:
        storage = _storage(storage_url)
        names = study_names(storage)
    except NoStudies as e:  # a database without Optuna's tables: read, never changed
        st.info(f"No study in this storage: {e}. Start one with the form above, or `pals-study run design`.")
        return
    except StudyError as e:
        if _creating(storage_url):
            st.info(f"A worker started here is creating this storage ({e}); press Refresh in a moment.")
            st.button("Refresh", key="studies_view_refresh_new")
        else:
            st.error(str(e))
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
    render_settings(study)
    scaled = pals_study(study)
    s = report.summary(study)
    c = s["counts"]
    cols = st.columns(5)
    cols[0].metric("complete", c["COMPLETE"])
    cols[1].metric(
        "pruned",
        c["PRUNED"],
        help=f"and {c['SURPLUS']} surplus trial(s), given up untrained: the study's "
        "target was taken by other workers' trials"
        if c.get("SURPLUS")
        else None,
    )
    cols[2].metric("failed", c["FAIL"])
    cols[3].metric("running", c["RUNNING"] + c["WAITING"])
    best = s["best"]
    value = None if best is None else best[report.AVERAGE]
    cols[4].metric(
        "best dev average" + (" (0–100)" if scaled else ""),
        "—" if value is None or value != value else (f"{100 * value:.2f}" if scaled else f"{value:.4f}"),
    )
    if best is not None and best.get("design"):
        st.markdown(
            f"Best so far: trial **{best['trial']}**, **{best['design']}**"
            + (f", d_s = {best['d_s']}" if not pd.isna(best.get("d_s")) else "")
        )
    _unread_warning(study)
    st.markdown("**Leaderboard** (completed trials, best first; `pareto` = on the accuracy-vs-parameters front)")
    board = report.leaderboard(study)
    if board.empty:
        st.info("No completed trial yet.")
    else:
        scores = score_columns(board) if scaled else []
        st.dataframe(
            board_on_scale(board, scaled),
            hide_index=True,
            width="stretch",
            column_config={
                **{c: st.column_config.NumberColumn(format="%.2f") for c in scores},
                report.AVERAGE: st.column_config.NumberColumn(
                    "dev average (0–100)" if scaled else report.AVERAGE, format="%.2f" if scaled else "%.4f"
                ),
                **(
                    {report.PARAMS: st.column_config.NumberColumn(format="localized")}
                    if report.PARAMS in board.columns
                    else {}
                ),
            },
        )
        if scaled:
            st.caption(
                "Scores on the page's one scale, 0–100 (the study stores fractions), in the table and the "
                "figures below."
            )
    figs, missing_figs = report.figures(study, 100.0 if scaled else 1.0)
    for key, title in FIGURE_TITLES.items():
        if key in figs:
            st.plotly_chart(figs[key], width="stretch", config=CHART, key=f"studies_view_{key}")
        else:
            st.caption(f"{title}: {missing_figs.get(key, 'not available')}")
