"""The Studies view's start form and its workers table: a ``pals-study run`` worker started, stopped and resumed
from the page.

The form asks what the page asks. It starts from the sidebar's question (``from_question``): its tasks (GLUE names or a
tasks file), its model where the trainer builds it, its budget, its methods (what a design study searches), its
design settings (h_s, N_top, FFN ratio, pooler per task), its sequence length (the study's max length) and its
machine bounds with the page's machine (device, precision, batch). A design study searches method, location and d_s
itself; the other definitions train one design, the page's chosen one. What of the question a study cannot take is
said under the form (``FormStart.notes``), never dropped in silence. The values are read by ``pals-study``'s own
parser (``studies.workers.settings_from_form``); the argument list and the process are ``studies.workers`` and
``pals_core.supervise.workers``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import streamlit as st

from pals_core.budget.costs import Cost
from pals_core.budget.machine import Machine
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.flags import flags_of
from pals_core.footprint.constraints import CONSTRAINTS
from pals_core.footprint.memory import PRECISIONS
from pals_core.methods.registry import METHODS
from pals_core.pricing.config import AdapterConfig, design_label
from pals_core.supervise.roots import workers_root
from pals_core.supervise.workers import list_workers, stop
from studies import workers as studies_workers
from studies.definitions import DEFINITIONS
from studies.errors import StudyError
from studies.runner import check_new_study
from studies.settings import DEFAULT_BUDGET_RATIO, DEFAULT_TASKS, MACHINE_NAMES, StudySettings
from studies.workers import resume, settings_from_form

from .inputs import EMBEDDED, LOCAL, TINY
from .machine_view import devices, page_machine

MODELS = {"tiny random BERT (smoke study)": "tiny", EMBEDDED_MODEL: None}
FORM_FOR = "_study_form_for"  # the sidebar question the start form was last filled from
MAX_LEN_LIMIT = 512  # the trainer's models (embedded MiniLM, tiny) take 512 positions
_DEFAULTS = StudySettings(definition="design")  # pals-study's own defaults (batch, max length)


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
    methods: tuple[str, ...] = tuple(METHODS)  # what a design study searches: the sidebar's methods
    design: AdapterConfig = field(default_factory=AdapterConfig)  # h_s, N_top, FFN ratio, pooler: the question's
    chosen: AdapterConfig | None = None  # the page's chosen design: what the other definitions train
    max_len: int = _DEFAULTS.max_len  # tokens per sequence: the question's sequence length
    batch_size: int = _DEFAULTS.batch_size  # the page's batch where the question prices memory and time
    machine: tuple[tuple[str, str], ...] = ()  # Machine field → text: the question's bounds, the page's machine
    notes: tuple[str, ...] = ()  # what of the question a study cannot take, said under the form

    def models(self) -> dict[str, str | None]:
        """The form's model choices: the two the trainer embeds, and the sidebar's local folder if it has one."""
        return {**MODELS, **({f"your checkpoint: {self.model_path}": self.model_path} if self.model_path else {})}

    def design_for(self, definition: str) -> AdapterConfig:
        """The design settings a study of ``definition`` is given: a design study searches method, location and d_s
        (the question's other design settings kept); another definition trains the page's chosen design."""
        if DEFINITIONS[definition].searches_design or self.chosen is None:
            return self.design
        return self.chosen


def _machine_text(name: str, value) -> str:
    """A ``Machine`` field's value as its flag writes it (``--memory 24GiB``)."""
    f = next(f for f in flags_of(Machine, MACHINE_NAMES) if f.name == name)
    return f.format(value)


def from_question(inp, chosen: Cost | None = None, machine: Machine | None = None) -> FormStart:
    """The start form's values from the sidebar's question (an ``inputs.Inputs``; None: pals-study's defaults), the
    page's chosen design (``chosen``: what a study that does not search the design trains) and the page's machine
    (``machine``: its device, precision and batch, taken where the question sets machine bounds)."""
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
    design = AdapterConfig(
        heads=inp.heads, n_top=inp.n_top, ffn_ratio=inp.ffn_ratio, per_task_pooler=inp.per_task_pooler
    )
    picked = None
    if chosen is not None:
        picked = AdapterConfig(
            method=chosen.method,
            location=chosen.location,
            d_s=chosen.d_s,
            heads=inp.heads,
            n_top=inp.n_top,
            ffn_ratio=inp.ffn_ratio,
            per_task_pooler=inp.per_task_pooler,
        )
    if inp.location is not None:
        notes.append(f"location {inp.location}: a design study searches every location (all, top, bottom)")
    if inp.d_s is not None:
        notes.append(f"d_s {inp.d_s}: a design study searches d_s within the budget")
    if inp.convention != "exact":
        notes.append(f"the {inp.convention} counting convention: a study prices every design exactly")
    max_len = inp.seq_len
    if max_len > MAX_LEN_LIMIT:
        notes.append(f"sequence length {inp.seq_len}: the trainer's models take {MAX_LEN_LIMIT} tokens")
        max_len = MAX_LEN_LIMIT
    bounds = tuple((name, _machine_text(name, value)) for name, value in inp.bounds)
    batch = _DEFAULTS.batch_size
    if bounds and machine is not None:  # the question prices memory and time on the page's machine: the study too
        bounds += (("precision", machine.precision), ("device", machine.device))
        batch = machine.batch
    return FormStart(
        tasks,
        tasks_file,
        model,
        path,
        kind,
        float(getattr(b, kind)),
        b.of,
        tuple(inp.methods),
        design,
        picked,
        max_len,
        batch,
        bounds,
        tuple(notes),
    )


def _fill_form(start: FormStart) -> None:
    """The form's fields follow the sidebar's question: filled from it on the first draw and whenever it changes
    (what a person typed in between stays until then)."""
    if st.session_state.get(FORM_FOR) == start:
        return
    st.session_state[FORM_FOR] = start
    st.session_state["study_start_tasks"] = start.tasks
    st.session_state["study_start_model"] = start.model
    st.session_state["study_start_methods"] = list(start.methods)
    st.session_state["study_start_max_len"] = start.max_len
    st.session_state["study_start_batch"] = start.batch_size
    if start.budget_kind == "ratio":
        st.session_state["study_start_budget"] = start.budget
    else:
        st.session_state["study_start_budget_count"] = f"{int(start.budget):,}"
    given = dict(start.machine)
    for c in CONSTRAINTS:
        st.session_state[f"study_start_{c.field}"] = given.get(c.field, "")
    st.session_state["study_start_precision"] = given.get("precision", "fp32")
    st.session_state["study_start_device"] = given.get("device", "default")


def _machine_inputs() -> dict[str, str]:
    """The study's machine: one text field per constraint record (``pals_core.footprint.constraints.CONSTRAINTS``:
    training memory, step time, serving memory, …; key ``study_start_<field>``, its record's label and help), then
    precision and device profile (``Machine`` field → text, as ``pals-study run``'s flags; help text from their
    declaration). An empty bound = none. Read by pals-study's parser on Start, which says what is wrong."""
    help_of = {f.name: f.help for f in flags_of(Machine, MACHINE_NAMES)}
    out = {}
    for col, c in zip(st.columns(len(CONSTRAINTS)), CONSTRAINTS):
        out[c.field] = col.text_input(c.label, placeholder="none", key=f"study_start_{c.field}", help=help_of[c.field])
    a, b = st.columns(2)
    out["precision"] = a.selectbox(
        "Precision", list(PRECISIONS), key="study_start_precision", help=help_of["precision"]
    )
    names = ["default"] + devices()
    if st.session_state.get("study_start_device") not in names:  # a profile file: offered as it is
        names.append(st.session_state["study_start_device"])
    device = b.selectbox("Device profile", names, key="study_start_device", help=help_of["device"])
    out["device"] = "" if device == "default" else device
    return out


def _caption(start: FormStart) -> str:
    """What the form took from the question, and what it could not take."""
    design = start.chosen
    took = [
        "tasks" + (f" (of `{start.tasks_file}`)" if start.tasks_file else ""),
        "model",
        "budget",
        "methods (a design study searches them)",
        f"h_s {start.design.heads}, N_top {start.design.n_top}, FFN ratio {start.design.ffn_ratio}, "
        f"a pooler per task: {'yes' if start.design.per_task_pooler else 'no'}",
        "sequence length (max length)",
    ]
    if start.machine:
        took.append("machine bounds, with the page's device, precision and batch")
    if design is not None:
        took.append(
            f"the chosen design, {design_label(design.method, design.location)}"
            + (f" d_s {design.d_s}" if design.d_s else "")
            + ", for the definitions that train one design"
        )
    text = "From your question in the sidebar: " + "; ".join(took) + "."
    if start.notes:
        text += " Not taken: " + "; ".join(start.notes) + "."
    return text


def render_start_form(storage_url: str, inp=None, chosen: Cost | None = None, names: list[str] | None = None) -> None:
    """Definition, study name, tasks, model, budget, methods, steps, trials, max length, batch, machine → a
    ``pals-study run`` worker in the background, starting from the sidebar's question (``from_question``). ``names``:
    the studies the storage holds — a name not among them starts a new study only with "Create" ticked (or in an empty
    storage), as ``pals-study run --create``."""
    start = from_question(inp, chosen, page_machine() if inp is not None and inp.bounds else None)
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
        c = st.columns([2, 1, 1, 1])
        methods = c[0].multiselect(
            "Methods (design studies search these)",
            list(METHODS),
            key="study_start_methods",
            help="The sidebar's methods. Every method selected = every method that fits the budget.",
        )
        max_len = c[1].number_input(
            "Max length (tokens)", min_value=1, max_value=MAX_LEN_LIMIT, key="study_start_max_len"
        )
        batch = c[2].number_input("Batch size", min_value=1, max_value=4096, key="study_start_batch")
        create = c[3].checkbox(
            "Create if new",
            key="study_start_create",
            help="Without it a name the storage does not hold is refused (a typo makes no study), unless the storage "
            "holds no study yet.",
        )
        machine = _machine_inputs()
        st.caption(_caption(start))
        submitted = st.form_submit_button("Start")
    if submitted:
        study_name = name.strip() or definition
        try:
            check_new_study(names or [], study_name, create, ("the study name", "tick “Create if new”"))
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
                methods=None if set(methods) >= set(METHODS) else methods,
                design=start.design_for(definition),
                max_len=int(max_len),
                batch_size=int(batch),
            )
            worker = studies_workers.start(settings, storage_url, study_name, int(trials), create=create)
        except (ValueError, OSError, StudyError) as e:  # the worker's start says a StudyError as a ValueError
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
        trials = w.get("trials")
        c[0].markdown(
            f"`{w.id}` · study **{w.get('study_name') or '—'}** · "
            + (f"{trials} trial{'s' if trials != 1 else ''}" if trials is not None else "— trials")
        )
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
