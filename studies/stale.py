"""Running trials whose worker is gone: which they are, how long they have been silent, and what will retry them.

A worker's running trial records a heartbeat every ``StudySettings.heartbeat`` seconds (Optuna's RDB storage). A
RUNNING trial whose last heartbeat is older than the study's grace (``StudySettings.grace_s``) is *stale*: its worker
was killed or lost its machine, and nothing trains it. It stays RUNNING in the storage until a worker of the study
looks (``runner.fail_stale``, before every trial and while a worker waits for the study's last places): that worker
fails it and — unless its retries are used up (``max_retry``) — queues a copy with the same parameters
(``RetryHeartbeatStaleTrialCallback``), which it runs next, resuming the dead trial's run folder when it is on the
same machine. ``pals-study list``, ``report`` and the Studies page show such a trial as "stale (last heartbeat …
ago)", never as running, with what will retry it (``StaleTrial.fate``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

from .errors import StudyError
from .settings import SETTINGS_ATTR, StudySettings
from .storage import heartbeat_ages

STALE = "STALE"  # the state name ``runner.counts`` and ``report.trials_frame`` give a stale RUNNING trial


def ago(seconds: float) -> str:
    """A duration as a person reads it: '8 s', '2 min 5 s', '3 h 4 min', '2 d 5 h'."""
    s = max(0, int(round(seconds)))
    for unit, size, sub, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1)):
        if s >= size:
            rest = (s % size) // sub_size
            return f"{s // size} {unit}" + (f" {rest} {sub}" if rest else "")
    return f"{s} s"


@dataclass(frozen=True)
class Rule:
    """A study's rule for a dead worker's trial (its stored settings; Optuna's defaults for a study pals-study did not
    make): stale after ``grace_s`` seconds without a heartbeat, queued again at most ``max_retry`` times."""

    grace_s: int
    max_retry: int | None

    @classmethod
    def of(cls, study: optuna.Study) -> Rule:
        raw = study.user_attrs.get(SETTINGS_ATTR)
        try:
            s = StudySettings.from_dict(raw) if isinstance(raw, dict) else StudySettings(definition="design")
        except (TypeError, ValueError, KeyError, AttributeError):  # settings another program wrote: the defaults
            s = StudySettings(definition="design")
        return cls(s.grace_s, s.max_retry)


@dataclass(frozen=True)
class StaleTrial:
    """A RUNNING trial silent for longer than its study's grace."""

    number: int
    age_s: float  # seconds since its last heartbeat
    grace_s: int
    retries_used: int  # retries its chain of trials had before it (``RetryHeartbeatStaleTrialCallback.retry_history``)
    max_retry: int | None

    @property
    def retried(self) -> bool:
        """Whether failing it queues a copy (its chain has a retry left)."""
        return self.max_retry is None or self.retries_used + 1 <= self.max_retry

    def text(self) -> str:
        """'stale (last heartbeat 2 min 5 s ago)'."""
        return f"stale (last heartbeat {ago(self.age_s)} ago)"

    def fate(self) -> str:
        """What happens to it, and by whom."""
        if not self.retried:
            return (
                f"the next worker on this study fails it; its {self.max_retry} retries are used up, so it is not "
                "run again"
            )
        of = f" of {self.max_retry}" if self.max_retry is not None else ""
        return (
            "the next worker on this study (a new `pals-study run`, or one resumed with `pals-runs resume`) fails it "
            f"and trains it again, from its last checkpoint on the same machine (retry {self.retries_used + 1}{of})"
        )

    def line(self) -> str:
        """'trial 3: stale (last heartbeat 2 min ago, grace 60 s): the next worker … (retry 1 of 3)'."""
        return f"trial {self.number}: {self.text()[:-1]}, grace {ago(self.grace_s)}): {self.fate()}"


def stale_trials(study: optuna.Study, storage: RDBStorage) -> dict[int, StaleTrial]:
    """The stale trials of ``study`` (read from ``storage``, the RDB storage it was loaded from), by number."""
    rule = Rule.of(study)
    try:
        ages = heartbeat_ages(storage, study)
    except StudyError:
        return {}
    silent = {n: a for n, a in ages.items() if a > rule.grace_s}
    if not silent:
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        history = {
            t.number: len(RetryHeartbeatStaleTrialCallback.retry_history(t))
            for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
            if t.number in silent
        }
    return {
        n: StaleTrial(n, age, rule.grace_s, history.get(n, 0), rule.max_retry)
        for n, age in sorted(silent.items())
        if n in history
    }
