"""One study, several worker processes, one shared storage (Optuna's RDBStorage; no coordinator of ours):
two workers on SQLite and on a real PostgreSQL server, and a worker killed with SIGKILL mid-trial whose trial is
failed by its stale heartbeat, retried (resuming its run directory) and finished by the next worker.

The PostgreSQL server is this module's own throwaway cluster: ``initdb`` into a temporary folder and ``pg_ctl start``
on a free port of 127.0.0.1 (as the ``postgres`` user when the tests run as root), stopped and deleted at the end.
The tests skip only if the PostgreSQL server binaries are not installed (``apt-get install -y postgresql``)."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from studies.cli import main
from studies.storage import retry_of

EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
TINY = [
    "--model",
    "tiny",
    "--tasks",
    "rte,mrpc",
    "--max-train-examples",
    "64",
    "--max-eval-examples",
    "32",
    "--max-len",
    "32",
    "--batch-size",
    "8",
    "--budget",
    "1.05",
]
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def _env(glue_dir: Path) -> dict:
    return {
        **os.environ,
        "PALS_GLUE_DIR": str(glue_dir),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a throwaway PostgreSQL cluster ------------------------------------------------------------------


def _pg_bin(name: str):
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return found[0] if found else shutil.which(name)


def _as_postgres(cmd: list[str]) -> list[str]:
    """Run as the ``postgres`` user when we are root (PostgreSQL refuses to run as root)."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *cmd]
    return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(f"'{c}'" for c in cmd)]


@pytest.fixture(scope="module")
def postgres():
    """(server URL without database, function creating a fresh database and returning its URL)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed: apt-get install -y postgresql")
    psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2 (pip install psycopg2-binary) is needed for PostgreSQL")
    root = tempfile.mkdtemp(prefix="pals-pg-")
    if os.geteuid() == 0:
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail(
                "running as root, but there is no 'postgres' user to run the server as (apt-get install postgresql creates it)"
            )
        os.chown(root, pw.pw_uid, pw.pw_gid)
    data, log, port = os.path.join(root, "data"), os.path.join(root, "server.log"), _free_port()
    subprocess.run(
        _as_postgres([initdb, "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    opts = f"-k {root} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
    start = subprocess.run(
        _as_postgres([pg_ctl, "-D", data, "-l", log, "-w", "-t", "60", "-o", opts, "start"]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if start.returncode != 0:
        server_log = Path(log).read_text() if os.path.exists(log) else ""
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"pg_ctl start failed: {start.stderr}\n{server_log}")
    count = [0]

    def fresh_db() -> str:
        count[0] += 1
        name = f"studies{count[0]}"
        conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
        conn.autocommit = True
        conn.cursor().execute(f"CREATE DATABASE {name}")
        conn.close()
        return f"postgresql://postgres@127.0.0.1:{port}/{name}"

    try:
        yield fresh_db
    finally:
        subprocess.run(
            _as_postgres([pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"]), capture_output=True, timeout=120
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def storage_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'studies.db'}"
    return request.getfixturevalue("postgres")()


@pytest.fixture
def shared_storage_url(request, tmp_path):
    """PostgreSQL (the storage of studies spread over machines) when its binaries are installed, else SQLite — the
    kill-and-recover test runs everywhere."""
    if _pg_bin("initdb") and _pg_bin("pg_ctl"):
        return request.getfixturevalue("postgres")()
    return f"sqlite:///{tmp_path / 'studies.db'}"


def _load(url: str) -> optuna.Study:
    from studies.storage import open_storage

    return optuna.load_study(study_name="design", storage=open_storage(url, heartbeat=None, create=False))


def _worker(url: str, out: Path, log: Path, glue_dir: Path, *extra: str) -> subprocess.Popen:
    cmd = [EXE, "run", "design", "--storage", url, "--out", str(out), "--threads", "1", *extra]
    f = open(log, "w")
    return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=_env(glue_dir))


# --- tests --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_workers_share_one_study(storage_url, tmp_path, glue_dir):
    # create once (tables and study), then two OS processes join it with only the storage URL and a target
    create = ["create", "design", "--storage", storage_url, "--steps", "8", "--eval-every", "4", "--heartbeat", "2"]
    assert main([*create, *TINY]) == 0  # the heartbeat is the study's: every worker judges a dead trial alike
    procs = [
        _worker(
            storage_url,
            tmp_path / f"out{i}",
            tmp_path / f"w{i}.log",
            glue_dir,
            "--trials",
            "4",
            "--sampler-seed",
            str(i),
        )
        for i in (1, 2)
    ]
    for i, p in enumerate(procs, 1):
        assert p.wait(timeout=240) == 0, (tmp_path / f"w{i}.log").read_text()[-3000:]
    trials = _load(storage_url).get_trials()
    states = [t.state for t in trials]
    surplus = [t for t in trials if t.user_attrs.get("surplus")]  # given up untrained: stored PRUNED, never FAIL
    assert all(t.state == TrialState.PRUNED and not t.intermediate_values for t in surplus), states
    assert sum(s in FINISHED for s in states) - len(surplus) == 4, states  # exactly the target
    assert TrialState.FAIL not in states, states
    assert sorted(t.number for t in trials) == list(range(len(trials)))
    finished = [t for t in trials if t.state in FINISHED and t not in surplus]  # surplus: no run, no worker
    workers = {t.user_attrs["worker"] for t in finished}
    assert len(workers) == 2, "both processes ran trials of the same study"
    dirs = [t.user_attrs["run_dir"] for t in finished]
    assert len(set(dirs)) == len(dirs) and all(Path(d, "config.json").is_file() for d in dirs)


@pytest.mark.slow
def test_killed_worker_trial_is_failed_retried_and_resumed(shared_storage_url, tmp_path, glue_dir):
    storage_url = shared_storage_url
    create = ["create", "design", "--storage", storage_url, "--steps", "30", "--eval-every", "10"]
    assert main([*create, "--heartbeat", "1", "--grace", "2", *TINY]) == 0
    beat = ["--trials", "2", "--sampler-seed", "3"]
    out = tmp_path / "out"
    a = _worker(storage_url, out, tmp_path / "a.log", glue_dir, *beat)
    study = _load(storage_url)
    victim = None
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and a.poll() is None:
            trials = study.get_trials()
            running = [t for t in trials if t.state == TrialState.RUNNING and t.user_attrs.get("last_step", 0) >= 10]
            if any(t.state == TrialState.COMPLETE for t in trials) and running:
                victim = running[0]
                os.kill(a.pid, signal.SIGKILL)  # mid-trial, after its first evaluation and checkpoint
                break
            time.sleep(0.1)
    finally:
        if a.poll() is None and victim is None:
            a.kill()
    a.wait(timeout=30)
    assert victim is not None, (
        "worker A never reached the middle of its second trial:\n" + (tmp_path / "a.log").read_text()[-3000:]
    )
    before = {t.number: (t.state, t.value) for t in study.get_trials()}
    assert before[victim.number][0] == TrialState.RUNNING  # the dead worker left it running …
    completed = {n: v for n, (s, v) in before.items() if s == TrialState.COMPLETE}
    assert completed

    time.sleep(3)  # … past the grace period (2 s): its heartbeat is stale now
    b = _worker(storage_url, out, tmp_path / "b.log", glue_dir, *beat)
    assert b.wait(timeout=240) == 0, (tmp_path / "b.log").read_text()[-3000:]

    trials = {t.number: t for t in study.get_trials()}
    assert not [t for t in trials.values() if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert trials[victim.number].state == TrialState.FAIL  # failed by its stale heartbeat …
    retries = [t for t in trials.values() if retry_of(t) == victim.number]
    assert len(retries) == 1, trials  # … and retried once (RetryHeartbeatStaleTrialCallback)
    retry = retries[0]
    assert retry.state == TrialState.COMPLETE and retry.params == victim.params
    assert retry.user_attrs["resumed"] is True and retry.user_attrs["run_dir"] == victim.user_attrs["run_dir"]
    progress = Path(retry.user_attrs["run_dir"], "summary.json")
    assert progress.is_file()  # the resumed run finished in the dead trial's directory
    for n, value in completed.items():  # completed trials survive unchanged
        assert trials[n].state == TrialState.COMPLETE and trials[n].value == value


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize")
def test_a_dead_workers_trial_goes_stale_then_a_waiting_worker_queues_it_again(storage_url, capsys):
    """A trial's heartbeat age read against the database's own clock (PostgreSQL's now() carries a time zone, SQLite's
    does not): fresh, the trial holds the study's last place and a worker waits; silent past the study's grace, it is
    shown stale by ``pals-study list`` and the waiting worker fails it and finds its retry queued — a place again."""
    from studies.runner import DEFINITION_ATTR, counts, wait_for_a_place
    from studies.settings import SETTINGS_ATTR, StudySettings
    from studies.stale import stale_trials
    from studies.storage import heartbeat_ages, open_storage

    storage = open_storage(storage_url, heartbeat=1, grace=2, max_retry=3)
    study = optuna.create_study(study_name="design", storage=storage, direction="maximize")
    study.set_user_attr(DEFINITION_ATTR, "design")
    study.set_user_attr(SETTINGS_ATTR, StudySettings(definition="design", model="tiny", heartbeat=1).as_dict())
    dead = study.ask()
    storage.record_heartbeat(dead._trial_id)  # its worker's heartbeat, then nothing: the worker is gone
    beats = lambda: heartbeat_ages(storage, study)  # noqa: E731
    assert 0 <= beats()[0] < 2 and stale_trials(study, storage) == {}  # the same clock: no hours of time-zone skew
    waited = wait_for_a_place(study, 1, deadline=time.monotonic() + 0.3, poll_s=0.1, grace_s=2, heartbeats=beats)
    assert waited == "timeout" and counts(study)["RUNNING"] == 1  # alive as far as anyone can tell: waited for

    time.sleep(3.2)  # past the grace (SQLite's clock counts whole seconds)
    stale = stale_trials(study, storage)
    assert list(stale) == [0] and 2 < stale[0].age_s < 60 and stale[0].fate().endswith("(retry 1 of 3)")
    capsys.readouterr()
    assert main(["list", "--storage", storage_url]) == 0
    assert capsys.readouterr().out.startswith("design\tdesign\t1 trial: 1 stale\n  trial 0: stale (last heartbeat")

    assert wait_for_a_place(study, 1, poll_s=0.1, grace_s=2, heartbeats=beats) == "trial"
    failed, retry = study.get_trials()
    assert failed.state == TrialState.FAIL and retry.state == TrialState.WAITING and retry_of(retry) == 0
