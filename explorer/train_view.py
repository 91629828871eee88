"""The launcher: the chosen design → a ``pals-train`` run, its command lines, and the launch button.

Widget keys: train_tasks, train_model, train_model_path, train_glue_dir, train_size_mode,
train_ds::<design>::<d_s>, train_budget, train_steps, train_batch, train_lr, train_max_len,
train_eval_every, train_max_train, train_max_eval, train_seed, train_threads, train_freeze, train_pooler,
train_name, train_gpus, launch.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Optional

import streamlit as st

from pals_core.budget import GLUE_LABELS, Budget, Cost, at_size, design, get_method, glue_task
from pals_core.budget.limits import MAX_D_S, MAX_RATIO
from pals_core.budget.units import human
from pals_core.train.config import TrainConfig
from pals_core.train.models import TINY

from . import calc, commands, registry
from .calc import key_of, label
from .inputs import Inputs

MODELS = {
    "MiniLM-L6 (embedded, pretrained)": "",
    "tiny (random tiny BERT: a smoke test)": TINY,
    "a local BERT folder…": "path",
}
SIZE_DS, SIZE_BUDGET = "this design's d_s", "a budget ratio (the trainer solves d_s on its model)"


def trainable_tasks() -> list[str]:
    """The GLUE tasks the trainer knows (``pals_core.data.tasks``), else the calculator's list."""
    try:
        from pals_core.data.tasks import GLUE_TASKS
    except ImportError:
        return list(GLUE_LABELS)
    return list(GLUE_TASKS)


def available_tasks(glue_dir: str) -> Optional[list[str]]:
    """Tasks whose train and dev files are in ``glue_dir`` (None if it cannot be told)."""
    try:
        from pals_core.data.glue import missing_files
    except ImportError:
        return None
    path = Path(glue_dir).expanduser() if glue_dir else None
    if path is None or not path.is_dir():
        return None
    names = trainable_tasks()
    missing = missing_files(path, names)
    return [t for t in names if t not in missing]


def training_shape_note(cfg: TrainConfig) -> Optional[str]:
    """What the calculator says about this run on the model the trainer will build."""
    from pals_core.train.models import model_shape

    try:
        shape = model_shape(cfg.model)
        if cfg.adapter.d_s is None and get_method(cfg.adapter.method).sized:
            return None
        c = at_size(design(shape, [glue_task(t) for t in cfg.tasks], cfg.adapter), cfg.adapter.d_s)
    except (ValueError, OSError) as e:
        return f"The calculator cannot build this design on the training model: {e}"
    return (f"On the training model ({shape.name}: d = {shape.hidden}, {shape.layers} layers) this run adds "
            f"**{human(c.params_task_specific)}** task-specific parameters ({c.ratio:.3f}× the base model).")


def _int_or_none(text: str, what: str) -> Optional[int]:
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


def build_spec(inp: Inputs, chosen: Cost) -> tuple[Optional[TrainConfig], Optional[str], str]:
    """Draw the form; return (the run as the trainer will resolve it, error, run name)."""
    method = get_method(chosen.method)
    glue_env = os.environ.get("PALS_GLUE_DIR", "")
    c1, c2, c3 = st.columns(3)
    glue_dir = c1.text_input("GLUE folder (--glue-dir)", value=glue_env, key="train_glue_dir",
                             help="The official GLUE TSV layout: <folder>/RTE/train.tsv, … Default: $PALS_GLUE_DIR.")
    avail = available_tasks(glue_dir)
    choices = trainable_tasks()
    wanted = [t.name for t in inp.tasks if t.name in choices]
    default = [t for t in wanted if avail is None or t in avail] or [t for t in ("rte", "mrpc") if avail is None or t in avail]
    tasks = c1.multiselect("Tasks to train", choices, default=default, key="train_tasks",
                           help="Tasks with train and dev files in the GLUE folder" + (f": {', '.join(avail)}." if avail else "."))
    model_label = c1.selectbox("Model", list(MODELS), key="train_model")
    model = MODELS[model_label]
    use_path = model == "path"
    if use_path:
        model = c1.text_input("Model folder (holds config.json and the weights)", key="train_model_path").strip()
    d_s, budget = None, None
    if method.sized:
        mode = c2.radio("Adapter size", [SIZE_DS, SIZE_BUDGET], key="train_size_mode")
        if mode == SIZE_DS:
            d_s = int(c2.number_input(f"d_s (solved on {inp.model.name}: {chosen.d_s})", min_value=1, max_value=MAX_D_S,
                                      value=min(int(chosen.d_s or 1), MAX_D_S), step=inp.heads if method.attention else 1,
                                      key=f"train_ds::{label(key_of(chosen))}::{chosen.d_s}"))
        else:
            budget = float(c2.number_input("Budget ratio B (N_total ≤ B × N_base of the training model)", min_value=1.0,
                                           max_value=MAX_RATIO, value=min(float(inp.budget.ratio or 1.13), MAX_RATIO), step=0.01, format="%.3f",
                                           key="train_budget"))
    else:
        c2.markdown(f"`{chosen.method}` has no adapter size.")
    steps = int(c2.number_input("Steps", min_value=1, max_value=1_000_000, value=200, step=50, key="train_steps"))
    batch = int(c2.number_input("Batch size", min_value=1, max_value=4096, value=16, step=1, key="train_batch"))
    lr_text = c2.text_input("Learning rate", value="2e-5", key="train_lr")
    max_len = int(c3.number_input("Max length (tokens)", min_value=8, max_value=512, value=min(512, max(8, inp.seq_len)),
                                  key="train_max_len"))
    eval_every = int(c3.number_input("Evaluate every (steps)", min_value=1, max_value=1_000_000, value=100, key="train_eval_every"))
    max_train_text = c3.text_input("Max train examples per task (empty = all)", value="", key="train_max_train")
    max_eval_text = c3.text_input("Max dev examples per task (empty = all)", value="500", key="train_max_eval")
    seed = int(c3.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, key="train_seed"))
    threads_text = c3.text_input("CPU threads (empty = torch's default)", value="", key="train_threads")
    freeze = c3.checkbox("Freeze the trunk (train only task-specific weights)", key="train_freeze")
    pooler = c3.checkbox("A pooler per task", value=inp.per_task_pooler, key="train_pooler")
    name = c1.text_input("Run name (optional)", key="train_name", placeholder="e.g. pals-rte-mrpc")
    try:
        try:
            lr = float(lr_text)
        except ValueError:
            raise ValueError(f"learning rate {lr_text!r} is not a number") from None
        if use_path and not model:
            raise ValueError("enter the folder of the local BERT model (it holds config.json)")
        if not tasks:
            raise ValueError("choose at least one GLUE task to train on")
        adapter = replace(calc.config_for(inp, key_of(chosen)), d_s=d_s,
                          per_task_pooler=pooler, freeze_trunk=freeze)
        cfg = TrainConfig(
            tasks=list(tasks), adapter=adapter, model=model or None, glue_dir=glue_dir.strip() or None,
            out=str(registry.runs_root() / (name or "check")),
            budget=Budget(ratio=budget) if budget is not None else None, steps=steps, batch_size=batch, lr=lr,
            max_len=max_len, eval_every=eval_every, max_train_examples=_int_or_none(max_train_text, "max train examples"),
            max_eval_examples=_int_or_none(max_eval_text, "max dev examples"), seed=seed,
            num_threads=_int_or_none(threads_text, "CPU threads"))
        commands.check_with_trainer(cfg)
        if name:
            registry.new_run_id(cfg, name)  # checks the name
        return cfg, None, name
    except ValueError as e:
        return None, str(e), name


def check_data(spec: TrainConfig) -> None:
    """The GLUE files this run needs must be there (the trainer's own check)."""
    try:
        from pals_core.data.glue import check_files, resolve_glue_dir
    except ImportError:
        return
    path = resolve_glue_dir(spec.glue_dir)
    if path is None:
        raise ValueError("give the GLUE folder (--glue-dir), or set PALS_GLUE_DIR")
    check_files(path, spec.tasks)


def render(inp: Optional[Inputs], chosen: Optional[Cost]) -> None:
    """The launcher. Drawn as a fragment by the page: changing a field redraws only the launcher."""
    st.markdown("#### Train the chosen design")
    if inp is None or chosen is None:
        st.info("Fix the question in the sidebar to train a design; the runs below are still shown.")
        return
    st.caption(f"Design: **{label(key_of(chosen))}** — a real multi-task run of `pals-train` in the background; "
               f"its files go to `{registry.runs_root()}/<run id>/` ($PALS_RUNS_DIR).")
    spec, error, name = build_spec(inp, chosen)
    if error:
        st.error(error)
        return
    note = training_shape_note(spec)
    if note:
        st.caption(note)
    out = str(registry.runs_root() / (name or "<run id>"))
    st.markdown("The same run from a shell:")
    shown = spec.with_(out=out)
    st.code(commands.command(shown), language="bash", wrap_lines=True)
    with st.expander("On several GPUs (accelerate launch / torchrun)"):
        gpus = int(st.number_input("GPUs", min_value=1, max_value=64, value=2, key="train_gpus"))
        st.code(commands.accelerate_command(shown, gpus), language="bash", wrap_lines=True)
        st.code(commands.torchrun_command(shown, gpus), language="bash", wrap_lines=True)
    if st.button("Launch training", type="primary", key="launch"):
        try:
            check_data(spec)
            run = registry.launch(spec, name=name)
        except (ValueError, OSError) as e:
            st.error(f"Could not launch: {e}")
        else:
            st.session_state["last_launched"] = f"Launched run **{run.id}** (pid {run.pid}). It is listed below."
            st.rerun(scope="app")  # the runs list (and its live refresh) picks it up
    if st.session_state.get("last_launched"):
        st.success(st.session_state["last_launched"])
