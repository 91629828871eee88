"""Creating, joining and working on a study: the part of ``pals-study run`` that is not argument parsing.

A worker is one process running trials one at a time until the study holds ``target`` finished trials
(COMPLETE or PRUNED, counted over all workers) and no retry waits. Before each trial Optuna fails the trials
whose heartbeat went stale (their worker died) and ``RetryHeartbeatStaleTrialCallback`` queues their retries,
which are run first. Workers share nothing but the storage.

When every place left is held by a running trial (another worker's, or a dead worker's whose grace has not yet run
out), a worker neither starts a trial beyond the target nor leaves: it waits, looking every few seconds, until those
trials finish (then the study is done) or one goes stale — then it fails it and runs its retry. So a worker started
again right after another was killed still brings the study to its trials, and no trial is left running for good.
"""

from __future__ import annotations

import datetime
import difflib
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

import optuna
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState

from pals_core.base_model import model_conditions
from pals_core.footprint.constraints import BY_NAME
from pals_core.methods.registry import get_method
from pals_core.pricing.config import AdapterConfig

from .definitions import Context, Definition, get_definition
from .errors import StudyError
from .naming import RUN_KEY_ATTR, new_run_key
from .settings import SETTINGS_ATTR, StudySettings
from .space import MachineBound, capped, check_machine, cost_of, feasible_designs, largest_size

DEFINITION_ATTR = "pals_definition"
MAX_CONSECUTIVE_FAILURES = 3


def fixed_adapter(settings: StudySettings, shape, template: AdapterConfig) -> dict:
    """The design of a study that does not search it: ``template`` (method "pals" and location "all" unless given)
    with its ``d_s`` as given, or the largest within the budget and the machine's budgets (and within the cap
    d_s ≤ d of ``feasible_designs``)."""
    m = get_method(template.method)
    cfg = replace(template, location=(template.location or "all") if m.within else None)
    if cfg.d_s is None and m.sized:
        step = cfg.heads if m.attention else 1
        largest = largest_size(shape, settings.calc_tasks(), cfg, settings.budget_obj(), machine_bound(settings))
        cfg = replace(cfg, d_s=max(step, capped(largest.d_s, step, shape, settings.max_d_s)))
    return cfg.as_dict()


def machine_bound(settings: StudySettings) -> MachineBound | None:
    """The study's machine (None when it set none), priced at its batch and max_len on the trained model's
    dropout and attention."""
    machine = settings.machine_obj()
    if machine is None:
        return None

    return MachineBound(machine, settings.max_len, model_conditions(settings.model))


def make_context(definition: Definition, settings: StudySettings, shape) -> Context:
    """The sampling context; ``StudyError`` if nothing fits the budget (and the machine's budgets)."""
    budget = settings.budget_obj()
    bound = machine_bound(settings)
    if bound is not None:
        bound.machine.profile()  # an unknown device or a missing profile file: one line
        check_machine(shape, settings.calc_tasks(), bound)
    within = f"the budget {budget_text(settings)}" + (f" and the machine ({machine_text(settings)})" if bound else "")
    if definition.searches_design:
        designs = feasible_designs(
            shape, settings.calc_tasks(), budget, settings.methods, settings.template(), settings.max_d_s, bound
        )
        if not designs and settings.max_d_s is not None:
            uncapped = feasible_designs(
                shape, settings.calc_tasks(), budget, settings.methods, settings.template(), None, bound
            )
            if uncapped:  # the budget leaves room: the cap is what shuts every design out
                smallest = min(c.step for c in uncapped)
                raise StudyError(
                    f"--max-d-s {settings.max_d_s} leaves no design: the smallest d_s of "
                    f"{', '.join(dict.fromkeys(c.method for c in uncapped))} within {within} is {smallest}"
                    + (f" (a multiple of h_s = {settings.template().heads})" if smallest > 1 else "")
                    + "; raise --max-d-s or drop it"
                )
        if not designs:
            raise StudyError(
                f"no design of {', '.join(settings.methods or ['any method'])} fits {within} "
                f"for {plural(len(settings.tasks), 'task')}"
            )
        return Context(settings, designs, bound=bound)
    if settings.adapter is None:
        raise StudyError(f"study {definition.name!r} needs a fixed adapter design")
    adapter = AdapterConfig.from_dict(settings.adapter)
    cost = cost_of(shape, settings.calc_tasks(), adapter, budget, bound)
    if not cost.feasible:
        bound = BY_NAME.get(cost.binding)  # the machine constraint it breaks (its record says what it needs)
        needs = bound.needs(cost) if bound is not None else f"{cost.params_task_specific:,} extra parameters"
        raise StudyError(f"the design {adapter.method} d_s={adapter.d_s} needs {needs}: over {within}")
    return Context(settings, [], adapter, bound=bound)


def budget_text(s: StudySettings) -> str:
    return s.budget_obj().describe()


def machine_text(s: StudySettings) -> str:
    """The study's machine in one line ('' when it set none): device, B, n, precision and its budgets."""
    m = s.machine_obj()
    if m is None:
        return ""
    return " · ".join(
        [f"device {m.device}", f"batch {m.batch} × {s.max_len} tokens", m.precision]
        + [c.text(getattr(m, c.field)) for c, _ in m.bounds()]
    )


def make_sampler(definition: Definition, target: int, seed: int | None) -> optuna.samplers.BaseSampler:
    """TPE (single- and multi-objective); random for the first third of the trials (2 to 10); constant liar so
    parallel workers do not all sample next to the same running trial."""
    startup = max(2, min(10, target // 3))
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, constant_liar=True)


def make_pruner(definition: Definition) -> optuna.pruners.BasePruner:
    """Median pruning of single-objective trials (after two finished trials); none for several objectives."""
    if definition.multi_objective:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0)


CLI_WAY = ("--study-name", "add --create")  # how a person names a study and asks for a new one, on the command line


def check_new_study(names: Iterable[str], study_name: str, create: bool, way: tuple[str, str] = CLI_WAY) -> None:
    """A ``run`` on a name the storage does not hold makes a study only when the storage holds none yet or with
    ``--create``: otherwise a typo would start a new study on default settings. ``StudyError`` in one line naming the
    closest names there (``difflib``); ``way``: (where a name is given, how a new study is asked for) in the words of
    where the person is (``CLI_WAY``, or the page's form)."""
    names = sorted(names)
    if create or not names or study_name in names:
        return
    close = difflib.get_close_matches(study_name, names, n=3, cutoff=0.5) or names[:3]
    more = f" (and {len(names) - len(close)} more: pals-study list)" if len(names) > len(close) else ""
    raise StudyError(
        f"no study named {study_name!r} in this storage; closest: {', '.join(close)}{more}. "
        f"Give one of them with {way[0]}, or {way[1]} to start a new study of that name"
    )


def open_study(
    storage,
    study_name: str,
    definition: Definition,
    requested: StudySettings,
    given: Iterable[str],
    *,
    sampler=None,
    pruner=None,
    create: bool = True,
) -> tuple[optuna.Study, StudySettings]:
    """Create the study (if ``create`` and absent) or join it. The stored settings win; an option given on this
    command line that contradicts them is an error (another worker would train a different problem)."""
    names = optuna.study.get_all_study_names(storage)
    if study_name not in names and not create:
        raise StudyError(
            f"no study named {study_name!r} in this storage (studies there: {', '.join(sorted(names)) or 'none'})"
        )
    study = optuna.create_study(
        storage=storage,
        study_name=study_name,
        directions=list(definition.directions),
        load_if_exists=True,
        sampler=sampler,
        pruner=pruner,
    )
    attrs = study.user_attrs
    existing_def = attrs.get(DEFINITION_ATTR)
    if existing_def is not None and existing_def != definition.name:
        raise StudyError(f"study {study_name!r} is a {existing_def!r} study, not {definition.name!r}")
    if [d.name.lower() for d in study.directions] != list(definition.directions):
        raise StudyError(
            f"study {study_name!r} exists with {len(study.directions)} objective(s); "
            f"{definition.name!r} has {len(definition.directions)} (use another --study-name)"
        )
    if SETTINGS_ATTR not in attrs:
        study.set_user_attr(RUN_KEY_ATTR, new_run_key())  # keys its trial folders (``naming.trial_root``)
        study.set_user_attr(DEFINITION_ATTR, definition.name)
        study.set_user_attr(SETTINGS_ATTR, requested.as_dict())
        return study, requested
    stored = _settings_of(study_name, attrs[SETTINGS_ATTR])
    if "tasks_file" in set(given) and stored.tasks_file is None:
        raise StudyError(
            f"study {study_name!r} was created on the GLUE tasks {','.join(stored.tasks)}, not on a tasks "
            "file; drop --tasks-file to join it, or start another --study-name"
        )
    clash = [k for k in requested.differences(stored) if k in set(given) - {"tasks_file", "data"}]
    if clash:
        k = clash[0]
        raise StudyError(
            f"study {study_name!r} was created with {k} = {getattr(stored, k)!r}, not {getattr(requested, k)!r}; "
            "drop the option to join it, or start another --study-name"
        )
    return study, stored


def load_definition(study: optuna.Study) -> Definition:
    name = study.user_attrs.get(DEFINITION_ATTR)
    if name is None:
        raise StudyError(f"study {study.study_name!r} was not created by pals-study (no {DEFINITION_ATTR} attribute)")
    return get_definition(name)


def load_settings(study: optuna.Study) -> StudySettings:
    d = study.user_attrs.get(SETTINGS_ATTR)
    if d is None:
        raise StudyError(f"study {study.study_name!r} holds no pals-study settings")
    return _settings_of(study.study_name, d)


def _settings_of(study_name: str, stored: dict) -> StudySettings:
    """The stored settings, read; settings this pals-study cannot read (a newer layout, an edited storage) are one
    ``StudyError`` naming the study."""
    try:
        return StudySettings.from_dict(stored)
    except (TypeError, ValueError) as e:
        raise StudyError(f"study {study_name!r}: {e}") from None


def counts(study: optuna.Study, stale: Mapping[int, object] | None = None) -> dict[str, int]:
    """Trials by state name: COMPLETE, PRUNED, FAIL, RUNNING, WAITING — SURPLUS: the trials given up untrained
    because the study's target was taken (stored PRUNED, ``objective.is_surplus``), counted there and not as pruned:
    they are no result, and no place of the target — and STALE: the RUNNING trials numbered in ``stale``
    (``stale.stale_trials``: their worker is gone), counted there and not as running."""
    from .objective import is_surplus  # late: loads optuna

    out = {**{s.name: 0 for s in TrialState}, "SURPLUS": 0, "STALE": 0}
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.PRUNED and is_surplus(t):
            out["SURPLUS"] += 1
        elif t.state == TrialState.RUNNING and stale and t.number in stale:
            out["STALE"] += 1
        else:
            out[t.state.name] += 1
    return out


COUNT_WORDS = (
    ("COMPLETE", "complete"),
    ("PRUNED", "pruned"),
    ("FAIL", "failed"),
    ("RUNNING", "running"),
    ("STALE", "stale"),
    ("WAITING", "waiting"),
    ("SURPLUS", "surplus"),
)


def plural(n: int, word: str) -> str:
    """'1 trial', '2 trials'."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def counts_text(c: Mapping[str, int], *, every: bool = False) -> str:
    """'3 trials: 2 complete, 1 stale' — the states a study's trials are in (``every``: zeros too, but stale and
    surplus only where there are some)."""
    total = sum(c.get(k, 0) for k, _ in COUNT_WORDS)
    parts = [
        f"{c.get(k, 0)} {word}" for k, word in COUNT_WORDS if c.get(k, 0) or (every and k not in ("STALE", "SURPLUS"))
    ]
    return plural(total, "trial") + (": " + ", ".join(parts) if parts else "")


def fail_stale(study: optuna.Study) -> None:
    """Fail trials whose worker stopped sending heartbeats; the storage's callback queues their retries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


@dataclass
class WorkerResult:
    ran: int = 0
    failed_here: int = 0
    last_error: str | None = None
    gave_up: bool = False  # stopped after MAX_CONSECUTIVE_FAILURES failed trials in a row
    stopped: bool = False  # stopped by a signal; the interrupted trial is queued again
    stopped_waiting: bool = False  # the signal came while waiting for the study's last trials: none was interrupted
    counts: dict = field(default_factory=dict)


def pause(seconds: float) -> bool:
    """Sleep ``seconds``; True, at once, if SIGTERM or SIGINT arrives meanwhile (a waiting worker then stops as a
    training one does, with exit status 130). Off the main thread no handler can be set: a plain sleep."""
    if threading.current_thread() is not threading.main_thread():
        time.sleep(seconds)
        return False
    got: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _: got.append(signum)) for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        end = time.monotonic() + seconds
        while not got and time.monotonic() < end:
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return bool(got)


def wait_for_a_place(
    study: optuna.Study,
    target: int,
    *,
    deadline: float | None = None,
    log: Callable[[str], None] = lambda s: None,
    poll_s: float = 5.0,
    grace_s: float | None = None,
    heartbeats: Callable[[], Mapping[int, float]] | None = None,
) -> str:
    """What the worker does next: ``trial`` (a place is free, or a retry waits), ``done`` (the study holds ``target``
    finished trials and no retry waits), ``timeout`` (``time.monotonic()`` passed ``deadline``), ``stopped`` (SIGTERM
    or SIGINT while waiting) or ``mute``.

    While every place left is held by a RUNNING trial it waits, looking every ``poll_s`` s: a live worker's trial
    ends and finishes the study; a dead worker's goes stale after ``grace_s`` (the study's grace) and is failed here,
    its retry queued — a place again. ``heartbeats`` (``storage.heartbeat_ages`` of the study) tells a trial that
    sends heartbeats from one that never will (another program's, started more than ``grace_s`` ago with none):
    nothing would end the wait for such a trial, so the answer is ``mute``."""
    said = False
    while True:
        fail_stale(study)  # a dead worker's trial past its grace: failed, and its retry queued (WAITING)
        c = counts(study)
        finished = c["COMPLETE"] + c["PRUNED"]
        if finished >= target and c["WAITING"] == 0:
            return "done"
        if deadline is not None and time.monotonic() >= deadline:
            return "timeout"
        if c["WAITING"] or finished + c["RUNNING"] < target:
            return "trial"
        mute = _without_heartbeat(study, heartbeats, grace_s)
        if mute:
            log(
                f"the study's last places are held by running {plural(len(mute), 'trial')} "
                f"({', '.join(map(str, mute))}) that send no heartbeat (not a pals-study worker's): nothing tells "
                "whether they are alive, so this worker leaves them and stops"
            )
            return "mute"
        if not said:
            running = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
            log(
                f"waiting: the study's last {plural(target - finished, 'place')} held by running "
                f"{plural(len(running), 'trial')} ({', '.join(map(str, running))}); if a worker of them died, its "
                f"trial is failed here {'after ' + str(int(grace_s)) + ' s ' if grace_s else ''}without a heartbeat "
                "and trained again"
            )
            said = True
        if pause(poll_s):
            return "stopped"


def run_worker(
    study: optuna.Study,
    objective: Callable,
    target: int,
    *,
    timeout: float | None = None,
    log: Callable[[str], None] = lambda s: None,
    poll_s: float = 5.0,
    grace_s: float | None = None,
    heartbeats: Callable[[], Mapping[int, float]] | None = None,
    start: float | None = None,
    on_trial: Callable[[dict[str, int]], None] = lambda c: None,
) -> WorkerResult:
    """Run trials until the study holds ``target`` finished trials and no waiting retry (or ``timeout`` s after
    ``start``, a ``time.monotonic()``, default now), waiting while every place left is held (``wait_for_a_place``).
    ``on_trial``: called with the study's ``counts`` after each trial this worker ran."""
    result = WorkerResult()
    start = time.monotonic() if start is None else start
    deadline = None if timeout is None else start + timeout
    consecutive = 0
    while True:
        step = wait_for_a_place(
            study, target, deadline=deadline, log=log, poll_s=poll_s, grace_s=grace_s, heartbeats=heartbeats
        )
        if step == "timeout":
            log(f"timeout: {timeout:g} s passed, no new trial started")
        if step == "stopped":
            result.stopped = result.stopped_waiting = True
        if step != "trial":
            break
        study.optimize(objective, n_trials=1, catch=(Exception,), gc_after_trial=True)
        result.ran += 1
        on_trial(counts(study))
        ran = _trial(study, getattr(objective, "last_trial", None))
        if getattr(objective, "surplus", False):  # another worker took the last place at the same moment: look again
            result.ran -= 1
            continue
        if getattr(objective, "stopped", False):
            # SIGTERM / Ctrl-C: the trainer checkpointed; queue the trial again (Optuna's retry callback, as for a
            # dead worker) so that the next worker resumes it, and stop this worker
            if ran is not None and ran.state == TrialState.FAIL:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    RetryHeartbeatStaleTrialCallback(max_retry=None, inherit_intermediate_values=True)(study, ran)
            result.stopped = True
            break
        if ran is not None and ran.state == TrialState.FAIL:
            consecutive += 1
            result.failed_here += 1
            result.last_error = ran.user_attrs.get("error", "unknown error")
            log(f"trial {ran.number} failed: {result.last_error}")
            if consecutive >= MAX_CONSECUTIVE_FAILURES:
                result.gave_up = True
                break
        else:
            consecutive = 0
    result.counts = counts(study)
    return result


def _without_heartbeat(
    study: optuna.Study, heartbeats: Callable[[], Mapping[int, float]] | None, grace_s: float | None
) -> list[int]:
    """The RUNNING trials that started more than ``grace_s`` ago and have sent no heartbeat ([] without a reader)."""
    if heartbeats is None or grace_s is None:
        return []
    beating = heartbeats()
    now = datetime.datetime.now()
    return [
        t.number
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if t.number not in beating
        and t.datetime_start is not None
        and (now - t.datetime_start).total_seconds() > grace_s
    ]


def _trial(study: optuna.Study, number: int | None) -> optuna.trial.FrozenTrial | None:
    if number is None:
        return None
    return next((t for t in study.get_trials(deepcopy=False) if t.number == number), None)
