"""The launcher: the chosen design → a ``pals-train`` run, its command lines, and the launch button.

What is priced is what is trained: the run's d_s is the calculator's largest size within the question's budget
on the model and tasks that will be trained (re-solved when they differ from the question's, shown beside the
priced one), unless the person types their own. A run over the budget is never launched silently: the page
says so and the launch button waits for an explicit confirmation.

A question on a tasks file trains that file's tasks (``--tasks-file``, its absolute path, so the run can be resumed
from anywhere): the tasks to train are chosen among the file's, priced with the file's label counts, and the GLUE
folder is asked for only when the file names a built-in GLUE task.

Widget keys: train_tasks (GLUE), train_file_tasks (a tasks file's), train_model, train_model_path, train_glue_dir, train_size_mode,
train_ds::<design>, train_steps, train_batch, train_lr, train_max_len, train_eval_every, train_max_train,
train_max_eval, train_seed, train_threads, train_freeze, train_name, train_gpus,
train_confirm_over, launch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from pals_core.base_model import model_shape
from pals_core.budget import display
from pals_core.budget.costs import Cost
from pals_core.budget.methods import TRUNK_WORDS, recipe_setting, trunk_frozen
from pals_core.budget.recommend import key_of, label
from pals_core.budget.tasks import Task, glue_task
from pals_core.data.glue_rows import check_files, hub_allowed, missing_files, resolve_glue_dir
from pals_core.data.load import TINY as TINY_MODEL
from pals_core.data.profile import longest_windows
from pals_core.methods.registry import get_method
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.limits import MAX_D_S
from pals_core.pricing.recipe import rate_text
from pals_core.supervise.roots import runs_root
from pals_core.supervise.runs import ACTIVE, command, launch, list_runs, new_run_id
from pals_core.tasks.glue_tasks import GLUE_TASKS
from pals_core.tasks.taskfile import read_tasks_file
from pals_core.train.config import TrainConfig

from . import calc, commands, icons, inputs, tasks_view
from .inputs import EMBEDDED, LOCAL, ROOT, TASKS_FILE, TINY, Inputs, example_tasks_path, files_stamp

MODELS = {
    EMBEDDED: "",
    "tiny (random tiny BERT: a smoke test)": TINY_MODEL,
    "a local checkpoint folder…": "path",
}
FROM_SIDEBAR = {
    EMBEDDED: EMBEDDED,
    TINY: "tiny (random tiny BERT: a smoke test)",
    LOCAL: "a local checkpoint folder…",
}
SIZE_SOLVED, SIZE_DS = "the largest that fits the budget on the training model", "a d_s of my own"


def trainable_tasks() -> list[str]:
    """The GLUE tasks the trainer knows (``pals_core.tasks.glue_tasks.GLUE_TASKS``)."""
    return list(GLUE_TASKS)


def available_tasks(glue_dir: str) -> list[str] | None:
    """Tasks whose train and dev files are in ``glue_dir`` (None if it cannot be told)."""
    path = Path(glue_dir).expanduser() if glue_dir else None
    if path is None or not path.is_dir():
        return None
    names = trainable_tasks()
    missing = missing_files(path, names)
    return [t for t in names if t not in missing]


@dataclass(frozen=True)
class Priced:
    """The chosen design as priced on the question's model, and as it will train."""

    trained: Cost  # on the training model and tasks (exact convention)
    model_name: str
    same_question: bool  # the training model, tasks and convention are the question's: nothing re-solved
    as_priced: Cost | None  # the question's d_s on the training model (None if the same, or sizeless)


def training_tasks(inp: Inputs, tasks: list[str]) -> list[Task]:
    """The calculator's tasks of the run: the question's own (a tasks file's label counts), else GLUE's."""
    if inp.tasks_file:
        mine = {t.name: t for t in inp.tasks}
        return [mine[t] for t in tasks]
    return [glue_task(t) for t in tasks]


def price_training(
    inp: Inputs,
    chosen: Cost,
    model: str | None,
    tasks: list[str],
    d_s: int | None,
    freeze_trunk: bool | None = None,
) -> Priced:
    """Re-solve (or evaluate ``d_s``) on the model the trainer builds (``pals_core.base_model.model_shape``), the
    trunk frozen or fine-tuned as the run will train it (None: the method's own)."""
    shape = model_shape(model or None)
    task_list = training_tasks(inp, tasks)
    key = key_of(chosen)
    trained = calc.on_model(inp, key, shape, task_list, d_s, freeze_trunk)
    same = shape == inp.model and [t.name for t in inp.tasks] == list(tasks) and inp.convention == "exact"
    as_priced = None
    if not same and chosen.d_s is not None and d_s is None and trained.d_s != chosen.d_s:
        try:
            as_priced = calc.on_model(inp, key, shape, task_list, chosen.d_s, freeze_trunk)
        except ValueError:
            as_priced = None
    return Priced(trained, shape.name, same, as_priced)


def compare_table(inp: Inputs, chosen: Cost, p: Priced) -> list[dict]:
    rows = [
        {
            "": "priced (the question)",
            "model": inp.model.name,
            "tasks": len(inp.tasks),
            "count": inp.convention,
            "d_s": "—" if chosen.d_s is None else str(chosen.d_s),
            "total × base": f"{display.ratio_text(chosen.ratio)}×",
            "fits": "yes" if chosen.feasible else "no",
        }
    ]
    if p.as_priced is not None:
        c = p.as_priced
        rows.append(
            {
                "": "that d_s on the training model",
                "model": p.model_name,
                "tasks": len(c.params_per_task),
                "count": "exact",
                "d_s": str(c.d_s),
                "total × base": f"{display.ratio_text(c.ratio)}×",
                "fits": "yes" if c.feasible else "no",
            }
        )
    c = p.trained
    rows.append(
        {
            "": "what trains",
            "model": p.model_name,
            "tasks": len(c.params_per_task),
            "count": "exact",
            "d_s": "—" if c.d_s is None else str(c.d_s),
            "total × base": f"{display.ratio_text(c.ratio)}×",
            "fits": "yes" if c.feasible else "no",
        }
    )
    return rows


def _int_or_none(text: str, what: str) -> int | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not an integer (or leave it empty)") from None
    if value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value}")
    return value


def _default_model(inp: Inputs) -> None:
    """The launcher trains the sidebar's model when the trainer can build it (reset when the sidebar's changes)."""
    want = FROM_SIDEBAR.get(st.session_state.get("model"), next(iter(MODELS)))
    if (
        st.session_state.get("_train_model_for") != st.session_state.get("model")
        or "train_model" not in st.session_state
    ):
        st.session_state["_train_model_for"] = st.session_state.get("model")
        st.session_state["train_model"] = want
        if want == FROM_SIDEBAR[LOCAL]:
            st.session_state["train_model_path"] = st.session_state.get("model_path", "")


def suggested_max_len(inp: Inputs, records: list, model: str | None) -> tuple[int, str] | None:
    """(the max length a run on these tasks of a file should use, the sentence that says why): the largest p95 of
    their token counts under the training model's tokenizer (the task panel's profile), capped at what the trainer
    takes (8 … 512, the model's longest input); None when the rows cannot be read (their error is the panel's)."""
    if not records:
        return None
    glue_dir = os.environ.get("PALS_GLUE_DIR", "")
    try:
        profiles = [
            tasks_view.profile(r, files_stamp([r]), model or None, max(8, inp.seq_len), glue_dir) for r in records
        ]
    except (OSError, ValueError):
        return None
    p95s = [p["tokens"]["p95"] for p in profiles if p.get("tokens")]
    if not p95s:
        return None
    p95 = max(p95s)
    n = max(8, min(512, p95))
    capped = "" if n == p95 else f" (capped at {n})"
    windows = "".join(  # a tagging task: the windows its longest sentence is read in at n
        f" {w}: no word lost." for p in profiles if (w := longest_windows(p, n)) is not None
    )
    return n, f"Default {n}: the p95 of these tasks' token counts ({p95}){capped}, as Your tasks reads them.{windows}"


def build_spec(inp: Inputs, chosen: Cost) -> tuple[TrainConfig | None, Priced | None, str | None, str]:
    """Draw the form; return (the run as the trainer will resolve it, how it is priced, error, run name)."""
    method = get_method(chosen.method)
    found = resolve_glue_dir(None)  # as pals-train finds it: --glue-dir's default, $PALS_GLUE_DIR
    glue_env = str(found) if found is not None else ""
    c1, c2, c3 = st.columns(3)
    own = inp.tasks_file is not None
    needs_glue = not own or any(r.glue is not None for r in inp.records)
    glue_dir = ""
    if needs_glue:
        glue_dir = c1.text_input(
            "GLUE folder (--glue-dir)",
            value=glue_env,
            key="train_glue_dir",
            help="The official GLUE TSV layout: <folder>/RTE/train.tsv, … Default: $PALS_GLUE_DIR."
            + (" Only the tasks file's GLUE tasks read it." if own else ""),
        )
    if own:
        choices = [r.name for r in inp.records]
        tasks = c1.multiselect(
            "Tasks to train",
            choices,
            default=choices,
            key="train_file_tasks",
            help=f"The tasks of {inp.tasks_file} (--tasks-file); fewer = --tasks, a subset of the file.",
        )
    else:
        avail = available_tasks(glue_dir)
        choices = trainable_tasks()
        wanted = [t.name for t in inp.tasks if t.name in choices]
        default = [t for t in wanted if avail is None or t in avail] or [
            t for t in ("rte", "mrpc") if avail is None or t in avail
        ]
        tasks = c1.multiselect(
            "Tasks to train",
            choices,
            default=default,
            key="train_tasks",
            help="Tasks with train and dev files in the GLUE folder" + (f": {', '.join(avail)}." if avail else "."),
        )
    _default_model(inp)
    model_label = c1.selectbox(
        "Model",
        list(MODELS),
        key="train_model",
        help="The sidebar's model when the trainer can build it. Another model gets its own d_s.",
    )
    model = MODELS[model_label]
    use_path = model == "path"
    if use_path:
        model = c1.text_input("Model folder (holds config.json and the weights)", key="train_model_path").strip()
    d_s = None
    if method.sized:
        mode = c2.radio("Adapter size", [SIZE_SOLVED, SIZE_DS], key="train_size_mode")
        if mode == SIZE_DS:
            d_s = int(
                c2.number_input(
                    "d_s",
                    min_value=1,
                    max_value=MAX_D_S,
                    value=min(int(chosen.d_s or 1), MAX_D_S),
                    step=inp.heads if method.attention else 1,
                    key=f"train_ds::{label(key_of(chosen))}",
                )
            )
    else:
        c2.markdown(f"`{chosen.method}` has no adapter size.")
    steps = int(c2.number_input("Steps", min_value=1, max_value=1_000_000, value=200, step=50, key="train_steps"))
    batch = int(c2.number_input("Batch size", min_value=1, max_value=4096, value=16, step=1, key="train_batch"))
    own_lr, lr_source = recipe_setting(chosen.method, "lr")
    if st.session_state.get("_train_lr_for") != chosen.method or "train_lr" not in st.session_state:
        st.session_state["_train_lr_for"] = chosen.method  # a new design starts from its method's own rate
        st.session_state["train_lr"] = rate_text(own_lr)
    lr_text = c2.text_input("Learning rate", key="train_lr", help=f"The default: {lr_source}. --lr overrides it.")
    reads = own and not (use_path and not model)  # a folder not yet given has no tokenizer to count with
    suggested = suggested_max_len(inp, [r for r in inp.records if r.name in tasks], model) if reads else None
    max_len = int(
        c3.number_input(
            "Max length (tokens)",
            min_value=8,
            max_value=512,
            value=suggested[0] if suggested else min(512, max(8, inp.seq_len)),
            key="train_max_len",
        )
    )
    if suggested:
        c3.caption(suggested[1])
    eval_every = int(
        c3.number_input("Evaluate every (steps)", min_value=1, max_value=1_000_000, value=100, key="train_eval_every")
    )
    max_train_text = c3.text_input("Max train examples per task (empty = all)", value="", key="train_max_train")
    max_eval_text = c3.text_input("Max dev examples per task (empty = all)", value="500", key="train_max_eval")
    seed = int(c3.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, key="train_seed"))
    threads_text = c3.text_input("CPU threads (empty = torch's default)", value="", key="train_threads")
    own_trunk = trunk_frozen(AdapterConfig(method=chosen.method))  # as the method's authors train it
    if st.session_state.get("_train_freeze_for") != chosen.method or "train_freeze" not in st.session_state:
        st.session_state["_train_freeze_for"] = chosen.method  # a new design starts from its method's own trunk
        st.session_state["train_freeze"] = own_trunk
    freeze = c3.checkbox(
        "Freeze the trunk",
        key="train_freeze",
        help=f"Train only task-specific weights. {method.title} is trained with the trunk {TRUNK_WORDS[own_trunk]} by its authors (the default: "
        f"--freeze-trunk / --train-trunk override it). Memory and step time are priced for what trains.",
    )
    c3.markdown(f"A pooler per task: **{'yes' if inp.per_task_pooler else 'no'}** (the question's, sidebar)")
    name = c1.text_input("Run name (optional)", key="train_name", placeholder="e.g. pals-rte-mrpc")
    try:
        try:
            lr = float(lr_text)
        except ValueError:
            raise ValueError(f"learning rate {lr_text!r} is not a number") from None
        if use_path and not model:
            raise ValueError("enter the folder of the local BERT model (it holds config.json)")
        if not tasks:
            raise ValueError("choose at least one task to train on")
        priced = price_training(inp, chosen, model or None, list(tasks), d_s, freeze)
        adapter = calc.config_for(inp, key_of(chosen), priced.trained.d_s, freeze)
        tasks_file = os.path.abspath(os.path.expanduser(inp.tasks_file)) if own else None
        cfg = TrainConfig(  # no GLUE task: no GLUE folder (``--glue-dir none``), whatever $PALS_GLUE_DIR says
            glue_dir=(glue_dir.strip() or None) if needs_glue else None,
            tasks=list(tasks),
            adapter=adapter,
            model=model or None,
            tasks_file=tasks_file,
            out=str(runs_root() / (name or "check")),
            budget=None,
            steps=steps,
            batch_size=batch,
            lr=None if lr == own_lr else lr,  # None: the method's own, so config.json names its source
            max_len=max_len,
            eval_every=eval_every,
            max_train_examples=_int_or_none(max_train_text, "max train examples"),
            max_eval_examples=_int_or_none(max_eval_text, "max dev examples"),
            seed=seed,
            num_threads=_int_or_none(threads_text, "CPU threads"),
        )
        cfg = commands.check_with_trainer(cfg)
        if name:
            new_run_id(cfg, name)  # checks the name
        return cfg, priced, None, name
    except ValueError as e:
        return None, None, str(e), name


def check_data(spec: TrainConfig) -> None:
    """The GLUE files this run needs must be there (the trainer's own check). A tasks file's own tasks were read
    and hashed when the run was resolved (``commands.check_with_trainer``): a missing file is named there."""
    glue = [r.glue for r in spec.records() if r.glue is not None]
    if not glue:
        return
    path = resolve_glue_dir(spec.glue_dir)
    if path is None:
        raise ValueError("give the GLUE folder (--glue-dir), or set PALS_GLUE_DIR")
    check_files(path, glue)


def data_problem(spec: TrainConfig) -> str | None:
    """Why this run cannot read its GLUE tasks, said before anyone clicks Launch (``check_data``, the trainer's own
    check); None when the files are there, or when no folder is given and the trainer may download GLUE from the
    hub (``HF_HUB_OFFLINE`` unset)."""
    try:
        check_data(spec)
    except ValueError as e:  # GlueDataError is one
        if resolve_glue_dir(spec.glue_dir) is None:
            return None if hub_allowed() else "no GLUE folder is given, and downloading GLUE is off (HF_HUB_OFFLINE)"
        return " ".join(str(e).split())
    return None


def use_example_tasks() -> None:
    """The sidebar's question on the example tasks (examples/tasks/tasks.yaml; their data written by
    examples/tasks/make_data.py when a file is missing): a first run needs no GLUE folder."""
    folder = ROOT / "examples" / "tasks"
    records = read_tasks_file(folder / "tasks.yaml").values()
    if any(p and not Path(p).exists() for r in records for p in (r.train, r.dev)):
        make_data = _example_data_writer(folder / "make_data.py")
        make_data(folder / "data")
    st.session_state["task_mode"] = TASKS_FILE
    st.session_state["tasks_file"] = example_tasks_path()
    st.session_state.update(
        inputs.file_model_widgets(st.session_state["tasks_file"])
    )  # the file's model, as the sidebar's


def _example_data_writer(path: Path):
    """``make_data`` of examples/tasks/make_data.py (a script, not a package: loaded from its file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pals_example_make_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_data


def render(inp: Inputs | None, chosen: Cost | None) -> None:
    """The launcher. Drawn as a fragment by the page: changing a field redraws only the launcher."""
    st.markdown("#### Train the chosen design")
    if inp is None or chosen is None:
        st.info("Fix the question in the sidebar to train a design; the runs are in the Runs & measured view.")
        return
    st.caption(
        f"Design: **{label(key_of(chosen))}** — a real multi-task run of `pals-train` in the background; "
        f"its files go to `{runs_root()}/<run id>/` ($PALS_RUNS_DIR)."
    )
    notice = st.container()  # what stops a launch is said above the form, where a first visit reads first
    spec, priced, error, name = build_spec(inp, chosen)
    if error:
        st.error(error)
        return
    c = priced.trained
    own = trunk_frozen(AdapterConfig(method=c.method)) == spec.adapter.freeze_trunk
    st.markdown(
        f"This run **{display.trained_text(c)}** ("
        + ("as its authors train it" if own else "not as its authors train it: your choice")
        + f") at learning rate **{rate_text(spec.lr)}** ("
        + ("the method's own" if spec.lr_source != "--lr" else "your choice")
        + "; both stated in the run's config.json)."
    )
    if not priced.same_question:
        st.markdown(
            f"**Re-priced for training** on {priced.model_name} with {len(spec.tasks)} task(s), exact count"
            + (f": d_s **{chosen.d_s} → {c.d_s}**" if chosen.d_s is not None and c.d_s is not None else "")
            + f", {display.ratio_text(c.ratio)}× (the question priced {display.ratio_text(chosen.ratio)}× on {inp.model.name})."
        )
        st.dataframe(compare_table(inp, chosen, priced), hide_index=True, key="train_compare")
    confirmed = True
    if not c.feasible:
        st.warning(
            f"**Over the budget.** On {priced.model_name} this run holds {display.ratio_text(c.ratio)}× the base model's "
            f"parameters: more than the question's budget allows. Launching it trains a design that does not fit.",
            icon=icons.WARNING,
        )
        confirmed = st.checkbox("Train it anyway: I know this design is over the budget", key="train_confirm_over")
    problem = data_problem(spec)
    if problem:
        with notice:
            st.warning(
                f"**This run has no data to read yet:** {problem}. Type the folder that holds GLUE's TSV files "
                "in **GLUE folder** below (`--glue-dir`; by default `$PALS_GLUE_DIR`, where the tests find it) — or "
                "train on the example tasks that come with the project: three small tasks of one's own (a CSV "
                "intent classification, a JSON Lines regression, a Parquet multi-label task), nothing to "
                "download.",
                icon=icons.WARNING,
            )
            if st.button(
                "Use the example tasks (examples/tasks/tasks.yaml)",
                key="train_use_examples",
                on_click=use_example_tasks,
            ):
                st.rerun(scope="app")  # the sidebar's question changed: the whole page follows it
    out = str(runs_root() / (name or "<run id>"))
    st.markdown("The same run from a shell:")
    shown = spec.with_(out=out)
    st.code(command(shown), language="bash", wrap_lines=True)
    with st.expander("On several GPUs (accelerate launch / torchrun)"):
        gpus = int(st.number_input("GPUs", min_value=1, max_value=64, value=2, key="train_gpus"))
        st.code(commands.accelerate_command(shown, gpus), language="bash", wrap_lines=True)
        st.code(commands.torchrun_command(shown, gpus), language="bash", wrap_lines=True)
    if st.button(
        "Launch training",
        type="primary",
        key="launch",
        disabled=not confirmed or problem is not None,
        help=f"First: {problem}" if problem else None,
    ):
        try:
            check_data(spec)
            run = launch(spec, name=name)
        except (ValueError, OSError) as e:
            st.error(f"Could not launch: {e}")
        else:
            st.session_state["last_launched"] = run.id
            st.rerun(scope="app")
    last = st.session_state.get("last_launched")
    if last:
        run = next((r for r in list_runs() if r.id == last), None)
        if run is not None and run.status in ACTIVE:
            st.success(f"Launched run **{run.id}** (pid {run.pid}): {run.status}. Its progress is in Runs & measured.")
        else:
            st.session_state.pop("last_launched", None)
