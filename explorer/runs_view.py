"""The runs: live progress and ETA, cancel, resume, errors with the log tail, the table of runs; and the
measured trade-off (dev score vs task-specific parameters) for the question's model and tasks. Read from disk on every draw (``pals_core.supervise.runs``), and
redrawn every 2 s while a run is active (``st.fragment(run_every=…)``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st

from pals_core import measured
from pals_core.budget.costs import Cost
from pals_core.budget.recommend import key_of
from pals_core.data.glue_rows import missing_files, resolve_glue_dir
from pals_core.kinds import PACKAGES, get_kind
from pals_core.pricing.config import design_label
from pals_core.supervise.roots import runs_root
from pals_core.supervise.runs import ACTIVE, Run, cancel, list_runs, resume
from pals_core.tasks import records_of_config
from pals_core.tasks.record import TaskRecord

from . import icons
from .figures.measured import measured_figure, measured_ranking_figure
from .inputs import EMBEDDED, Inputs, files_stamp, one_line
from .tables import runs_frame

REFRESH_S = 2.0
UNREADABLE = "unreadable"  # a run's status when its summary.json cannot be read (the reason is in its row)
CHART = {"displaylogo": False}


def duration(seconds: float | None) -> str:
    """71 → '1 min 11 s'; None → '—'."""
    if seconds is None:
        return "—"
    s = int(round(float(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def _holds_runs(folder: Path) -> bool:
    """Runs one or two levels down (``<folder>/seed-<k>/``, a sweep's ``<folder>/<design>/seed-<k>/``)."""
    try:
        return any(next(folder.glob(f"{depth}/progress.json"), None) for depth in ("*", "*/*"))
    except OSError:
        return False


def _title(run: Run) -> str:
    r = run.row()
    size = f" d_s={r['d_s']}" if r.get("d_s") is not None else ""
    if not r.get("method"):  # no settings of its own: a sweep's folder of runs, or a foreign / damaged folder
        return f"**{run.id}** — " + (
            "a folder of several runs (no design of its own)"
            if _holds_runs(run.path)
            else "no config.json: its design is unknown"
        )
    return f"**{run.id}** — {design_label(str(r['method']), r.get('location'))}{size} · {r.get('tasks') or '—'}"


def _active(run: Run) -> None:
    p = run.progress or {}
    step, total = run.steps()  # right after a resume: the checkpoint it continues from, before the trainer says
    frac = min(1.0, (step or 0) / total) if total else 0.0
    avg = p.get("average")
    resuming = run.progress is None and step is not None and bool((run.launch or {}).get("history"))
    text = (
        f"{run.status}{' (resuming)' if resuming else ''} · step {step or 0:,}/{f'{total:,}' if total else '?'} · "
        f"elapsed {duration(p.get('elapsed_s'))} · ETA {duration(p.get('eta_s'))}"
        + (f" · dev avg {measured.score_text(avg)} (0–100)" if isinstance(avg, (int, float)) else "")
    )
    with st.container(border=True):
        st.markdown(_title(run) + (f" · smoke run ({total} steps)" if measured.smoke(total) else ""))
        st.progress(frac, text=text)
        if p.get("scores"):
            st.caption(
                "Last evaluation, 0–100: " + " · ".join(f"{t}: {main_text(run, t, v)}" for t, v in p["scores"].items())
            )
        if run.owner is None:
            st.caption(
                "A process holds this folder that the explorer cannot prove is its trainer: not cancellable here."
            )
        elif st.button("Cancel", key=f"cancel::{run.id}", help="SIGTERM to the process training this run"):
            if cancel(run):
                st.toast(f"Cancelling {run.id}")
            st.rerun(scope="app")


def main_text(run: Run, task: str, value) -> str:
    """A task's main score of a run in progress as its kind writes its main metric (``Kind.metric_text``)."""
    try:
        record = records_of_config(run.config or {}).get(task)
    except (ValueError, TypeError, KeyError):  # a config whose records cannot be read
        record = None
    if record is None:
        return measured.score_text(value)
    return get_kind(record.kind).metric_text(record.main_metric, value)


def _problem(run: Run) -> None:
    with st.container(border=True):
        st.markdown(_title(run))
        if run.status == "stopped":
            at = run.steps()[0]  # progress.json's, else the checkpoint a resume continues from
            st.warning(f"Stopped{' by you' if run.cancelled else ''} at step {'?' if at is None else f'{at:,}'}.")
        else:
            st.error(f"{run.status}: {run.error or 'no error message'}")
        tail = run.log_tail(30)
        with st.expander("Log tail", expanded=run.status in ("failed", "died")):
            st.code(tail or "(log.txt is empty)", language="text")
        if ((run.path / "config.json").is_file() or run.launch_config is not None) and st.button(
            "Resume (--resume)",
            key=f"resume::{run.id}",
            help="pals-train --resume in this folder, with the settings of its config.json",
        ):
            try:
                resume(run)
            except (ValueError, OSError) as e:
                st.error(f"Could not resume: {e}")
            else:
                st.rerun(scope="app")


PARAM_NAMES = {
    "total": "parameters in all",
    "task_specific": "task-specific",
    "trained": "trained",
    "base": "base model",
    "per_task": "per task",
    "d_s": "d_s",
}
METRIC_NAMES = {
    "accuracy": "accuracy",
    "accuracy_m": "accuracy (matched)",
    "accuracy_mm": "accuracy (mismatched)",
    "f1": "F1",
    "macro_f1": "macro F1",
    "micro_f1": "micro F1",
    "mcc": "Matthews corr.",
    "pearson": "Pearson",
    "spearman": "Spearman",
}


def task_kinds(summary: dict) -> dict[str, str]:
    """Each task's kind: summary.json's ``tasks``, else the records its config holds (``records_of_config``)."""
    tasks = summary.get("tasks") if isinstance(summary.get("tasks"), dict) else {}
    kinds = {t: d.get("kind") for t, d in tasks.items() if isinstance(d, dict) and d.get("kind") in PACKAGES}
    config = summary.get("config")
    if isinstance(config, dict):
        try:
            kinds = {t: r.kind for t, r in records_of_config(config).items()} | kinds
        except (ValueError, TypeError, KeyError):  # a config whose records cannot be read: the summary's kinds
            pass
    return kinds


def score_rows(scores: dict, untrained: Sequence[str] = (), kinds: Mapping[str, str] | None = None) -> list[dict]:
    """A summary's per-task scores as ``pals-train`` prints them (``Kind.metric_text``: a fraction on the page's
    scale, 0–100; an error in the user's units as it is), metrics by their names, '—' where one is missing; a task
    no step trained (``untrained``) is named so in its row. ``kinds``: each task's kind (summary.json ``tasks``)."""
    rows = []
    for task, metrics in scores.items():
        metrics = metrics if isinstance(metrics, dict) else {"score": metrics}
        row = {"task": f"{task} (untrained)" if task in untrained else task}
        kind = (kinds or {}).get(task)
        text = get_kind(kind).metric_text if kind in PACKAGES else (lambda _, v: measured.score_text(v))
        for k, v in metrics.items():
            v = v.get("mean") if isinstance(v, dict) else v  # a --seeds aggregate: {"mean", "std", "ci95"}
            row[METRIC_NAMES.get(k, k.replace("_", " "))] = text(k, v)
        rows.append(row)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return [{k: r.get(k, "—") for k in columns} for r in rows]  # a metric one task lacks is '—', not None


def untrained_note(tasks: Sequence[str]) -> str:
    """What a run with tasks no step trained (summary.json ``untrained``) must say wherever its scores are shown."""
    return (
        f"**Untrained: {', '.join(tasks)}** received no training step in this run (the task sampler never drew "
        "them), so their scores are an untrained head's and the dev average counts them as such — more steps, or "
        "another sampling, trains them."
    )


def _details(runs: Sequence[Run]) -> None:
    pick = st.selectbox("Inspect a run", [r.id for r in runs], key="run_inspect")
    run = next((r for r in runs if r.id == pick), None)
    if run is None:
        return
    s = run.summary or {}
    untrained = [str(t) for t in s["untrained"]] if isinstance(s.get("untrained"), list) else []
    if untrained:
        st.warning(untrained_note(untrained), icon=icons.WARNING)
    if measured.smoke(s.get("steps")):
        st.info(
            f"A smoke run: {s['steps']} steps (fewer than {measured.SMOKE_STEPS}) check that training runs; its "
            "scores are no measurement of the design and rank nothing."
        )
    if isinstance(s.get("scores"), dict):
        st.dataframe(score_rows(s["scores"], untrained, task_kinds(s)), hide_index=True, key="run_scores")
    params = s.get("params") if isinstance(s.get("params"), dict) else None
    if params:
        st.caption(
            " · ".join(
                f"{PARAM_NAMES.get(k, k.replace('_', ' '))}: {v:,}" for k, v in params.items() if isinstance(v, int)
            )
        )
    if run.launch and run.launch.get("command"):
        st.code(run.launch["command"], language="bash", wrap_lines=True)
    with st.expander("Log tail"):
        st.code(run.log_tail(40) or "(empty)", language="text")


def _guarded(draw, what) -> None:
    """Draw one run's part; a folder whose files cannot be shown gets its own error, the rest of the list stays."""
    try:
        draw(what)
    except Exception as e:  # noqa: BLE001 - one unreadable run must not take down the runs list
        name = getattr(what, "id", "the selected run")
        st.error(f"Cannot show run {name}: {type(e).__name__}: {' '.join(str(e).split())[:200]}")


def body(was_active: bool) -> None:
    root = runs_root()
    runs = list_runs(root)
    active = [r for r in runs if r.status in ACTIVE]
    if bool(active) != was_active:
        st.rerun(scope="app")  # start or stop the timer
    st.markdown(f"#### Runs in `{root}`")
    problems = {Path(u.folder).name: u.reason for u in measured.unreadable([root], depth=1)}  # summaries not read
    if not runs and not problems:
        st.info("No runs yet. Launch one above; it appears here, and stays after a reload or a server restart.")
        return
    runs = [replace(r, status=UNREADABLE) if r.id in problems and r.status not in ACTIVE else r for r in runs]
    for run in active:
        _guarded(_active, run)
    for run in runs:
        if run.status in ("failed", "died", "stopped") and run.status not in ACTIVE:
            _guarded(_problem, run)
    st.dataframe(runs_table(runs, problems), hide_index=True, width="stretch", key="runs_table")
    _guarded(_details, runs)


def runs_table(runs: Sequence[Run], problems: dict[str, str]) -> pd.DataFrame:
    """The runs table; a run whose summary.json cannot be read is a row of status "unreadable" with the reason in
    its ``problem`` cell (also a folder the run list cannot see, whose summary.json is a folder or a FIFO); a run file
    passed over (``Run.note``: a progress.json or cancel.json that is a FIFO) is named in the same cell."""
    rows = [r.row() for r in runs]
    listed = {r.id for r in runs}
    rows += [{"run": name, "status": UNREADABLE} for name in sorted(problems) if name not in listed]
    frame = runs_frame(rows)
    notes = {r.id: r.note for r in runs if r.note}  # run files passed over (a FIFO named progress.json, …)
    if problems or notes:
        frame.insert(2, "problem", [problems.get(name) or notes.get(name, "") for name in frame["run"]])
    return frame


def render() -> None:
    runs = list_runs()
    was_active = any(r.status in ACTIVE for r in runs)
    st.fragment(body, run_every=REFRESH_S if was_active else None)(was_active)


@st.cache_data(show_spinner=False, max_entries=16)
def majority(records: tuple[TaskRecord, ...], stamp: tuple, glue_dir: str) -> float | None:
    """The majority-class dev average of the question's tasks (re-read when one of their files changes: ``stamp``)."""
    return measured.majority_average(list(records), glue_dir or None)


def render_measured(inp: Inputs | None, results: Sequence[measured.Result], chosen: Cost | None) -> None:
    """The measured trade-off for the question's model and tasks (what the budget buys)."""
    st.markdown("#### What the budget bought, measured")
    if inp is None:
        st.info("Fix the question in the sidebar: measured results are shown for its model and tasks.")
        return
    if not inp.trainable:
        st.info(
            f"{inp.model.name} is a shape only: no run trains it. Pick a model the trainer builds ({EMBEDDED}, "
            "tiny, a local checkpoint folder) to see what runs on it scored."
        )
        return
    tasks = tuple(t.name for t in inp.tasks)
    source = f" of {inp.tasks_file}" if inp.tasks_file else ""
    _unread_note()
    if not results:
        st.info(
            f"No finished run of {inp.model.name} on exactly {', '.join(tasks)}{source} yet (in "
            f"`{runs_root()}` or benchmarks/results). Launch one from the Train view."
        )
        return
    if inp.tasks_file:
        st.caption(
            f"Runs on the tasks of `{inp.tasks_file}` as they are now — the same records and the same rows "
            "(their files' sha256), whatever the tasks were called; a run on an earlier version of a file is not "
            "here."
        )
    base, why_not = None, None
    if inp.records:
        glue_dir = glue_folder()
        try:
            base = majority(inp.records, files_stamp(inp.records), glue_dir or "")
        except (OSError, ValueError) as e:
            why_not = one_line(e)
        else:
            why_not = None if base is not None else no_majority_reason(inp.records, glue_dir)
    else:
        why_not = "the question's tasks have no rows to read"
    key = key_of(chosen) if chosen is not None else None
    untrained = [r for r in results if r.untrained]
    if untrained:
        st.warning(
            "Results with tasks no training step reached (their dev average counts an untrained head's score): "
            + "; ".join(f"**{r.design}** ({r.runs_label()}): {', '.join(r.untrained)}" for r in untrained),
            icon=icons.WARNING,
        )
    real = [r for r in results if not r.smoke]
    smoke = [r for r in results if r.smoke]
    majority_line = (
        "the majority class (dashed line, from the tasks' own train and dev rows)"
        if base is not None
        else f"no majority-class line: {why_not}"
    )
    if real:
        st.plotly_chart(measured_figure(real, base, key), config=CHART, key="fig_measured")
        st.caption(
            "Dev average on one scale, 0–100 (the paper's Table 3 metric), against the task-specific parameters "
            "each run added; bars are 95 % t-intervals over seeds where a run was repeated (`pals-train --seeds`). "
            f"References: {majority_line}; `shared` (heads only) and `separate` (one fine-tuned model per task). "
            "The ringed marker is the chosen design."
            + (f" Smoke runs (fewer than {measured.SMOKE_STEPS} steps) are drawn apart, below." if smoke else "")
        )
        st.plotly_chart(measured_ranking_figure(real, base, key), config=CHART, key="fig_measured_ranked")
    if smoke:
        st.markdown(
            f"**Smoke runs** — fewer than {measured.SMOKE_STEPS} training steps: a check that training runs, "
            "not a measurement of the design. They rank nothing and are drawn on their own scale"
            + (
                ", apart from the measured above."
                if real
                else f"; no measured run (of {measured.SMOKE_STEPS} steps or more) is here yet."
            )
        )
        st.plotly_chart(
            measured_ranking_figure(
                smoke, base, key, title="Smoke runs (not measurements): dev average after a few steps"
            ),
            config=CHART,
            key="fig_measured_smoke",
        )
        if not real:
            st.caption(f"References: {majority_line}.")
    frame = pd.DataFrame(
        [
            {
                "design": r.design,
                "seed": r.seeds_label(),
                "dev average (0–100)": r.score.text(),
                "note": r.note(),
                **{f"− {b} (95 %)": _difference(measured.against(r, results, b)) for b in measured.BASELINES},
                "task-specific params": "—" if r.params is None else f"{r.params:,}",
                "steps": "—" if r.steps is None else f"{r.steps:,}",
                "folder": r.path,
            }
            for r in sorted(results, key=lambda r: (r.smoke, -r.score.mean))
        ]
    )  # the ranking's order
    st.dataframe(frame, hide_index=True, width="stretch", key="measured_table")
    st.caption(
        "− shared / − separate: the design's dev average less that reference's, trained alike (same steps, batch, "
        "learning rate, sampling, …), in points, with the 95 % Welch interval of the difference over their seeds "
        "(both need two seeds or more). An interval that holds 0 is a difference the seeds cannot tell from noise; "
        "its ends are the largest gaps they do not rule out. Each row is one test, uncorrected for the others."
    )


def glue_folder() -> str | None:
    """The GLUE folder, found as the trainer finds it (``resolve_glue_dir``: ``$PALS_GLUE_DIR``), as text."""
    path = resolve_glue_dir(None)
    return str(path) if path is not None else None


def no_majority_reason(records: Sequence[TaskRecord], glue_dir: str | None) -> str:
    """Why the majority-class line cannot be drawn (``measured.majority_average`` gave None): the GLUE folder is not
    set, is not there, or lacks a task's files."""
    glue = [r.glue for r in records if r.glue is not None]
    if not glue:
        return "the tasks' rows gave no majority class"
    if not glue_dir:
        return "it is read from the GLUE files, and no GLUE folder is set ($PALS_GLUE_DIR)"
    if not Path(glue_dir).is_dir():
        return f"the GLUE folder {glue_dir} ($PALS_GLUE_DIR) is not there"
    missing = missing_files(Path(glue_dir), glue)
    return f"the GLUE folder {glue_dir} lacks " + "; ".join(f"{t} ({', '.join(f)})" for t, f in missing.items())


SHOWN_UNREADABLE = 5


def _unread_note() -> None:
    """One warning naming the summaries that could not be read (so are not among the measured results), a line each."""
    bad = measured.unreadable(measured.default_roots())
    if not bad:
        return
    lines = [f"- `{u.folder}`: {u.reason}" for u in bad[:SHOWN_UNREADABLE]]
    if len(bad) > SHOWN_UNREADABLE:
        lines.append(f"- and {len(bad) - SHOWN_UNREADABLE} more")
    st.warning(
        f"{len(bad)} summary.json could not be read and {'is' if len(bad) == 1 else 'are'} not among the "
        "measured results (unreadable):\n" + "\n".join(lines)
    )


def _difference(c: dict | None) -> str:
    """'+1.2 [−0.4, +2.9]' (points), or — where there is nothing to compare."""
    return "—" if c is None else f"{c['diff']:+.1f} [{c['low']:+.1f}, {c['high']:+.1f}]"
