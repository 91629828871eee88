import os
import pathlib
import subprocess
import tempfile
from collections import Counter

import pytest
from pairwise import FULL_GRID_ENV, full_grid

ROOT = pathlib.Path(__file__).resolve().parents[1]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.pop("COLUMNS", None)  # tables fit 100 columns off a terminal; pytest-xdist workers inherit COLUMNS=80

# No test reads the user's own settings: a calibrated device profile (~/.cache/pals-explorer/local.json), their runs
# and studies, their caches. The test process, every subprocess it starts and every Streamlit server see a home of
# their own, empty, made before anything is imported (a test that wants a setting sets it in its own folder).
USER_SETTINGS = ("PALS_LOCAL_PROFILE", "PALS_RUNS_DIR", "PALS_STUDY_STORAGE", "PALS_CACHE_DIR", "XDG_CACHE_HOME")
USER_HOME = os.environ.get("HOME")  # the user's, for the test that proves the suite never reads it
TEST_HOME = pathlib.Path(tempfile.mkdtemp(prefix="pals-tests-home-"))
for _name in USER_SETTINGS:
    os.environ.pop(_name, None)
os.environ["HOME"] = str(TEST_HOME)
os.environ["PALS_RUNS_DIR"] = str(TEST_HOME / "runs")  # not ./runs of the checkout: a test's runs are its own
os.environ["PALS_STUDY_STORAGE"] = f"sqlite:///{TEST_HOME / 'studies.db'}"


@pytest.fixture(scope="session", autouse=True)
def a_home_of_its_own():
    """The session's own home (``TEST_HOME``), removed when the session ends."""
    import shutil

    yield TEST_HOME
    shutil.rmtree(TEST_HOME, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def streamlit_scans_installed_components_once():
    """Every ``AppTest.run()`` of a new app scans the metadata of all ~500 installed distributions for Streamlit
    components (0.1-0.3 s, most of a page test's time; the page's own script runs in ~15 ms). Nothing is installed
    during a test session, so the scan is Streamlit's own, done once per session and its answer kept."""
    import functools
    import sys

    if "streamlit" not in sys.modules:  # this worker runs no page test (collection imported no streamlit)
        yield
        return
    from streamlit.components.v2 import manifest_scanner

    original = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=None)(original)
    yield
    manifest_scanner.scan_component_manifests = original


def settle_garbage() -> None:
    """Collect the session's garbage now, then freeze what survives (``gc.freeze``): later full collections skip it.

    Why: an xdist worker ends with over a million tracked objects (torch, transformers, Streamlit, every page test),
    and a full ``gc.collect()`` of them takes 4-5 s on two busy cores. pytest runs one in its unraisable-exception
    clean-up after the worker has reported "finished"; the controller then closes the worker's gateway, and execnet
    SIGINTs a worker still busy 5 s later: the KeyboardInterrupt landed in hypothesis' gc callback
    (``junkdrawer.gc_callback``) and the run ended on a "PytestUnraisableExceptionWarning ... KeyboardInterrupt"
    traceback. Collected here, before the worker reports, the garbage's own unraisable exceptions are still reported
    and the clean-up's collection takes milliseconds."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session) -> None:
    """Runs before pytest-xdist's wrapper reports the worker finished (see ``settle_garbage``)."""
    settle_garbage()


def pytest_report_header(config) -> str:
    """Say which grids run: the pairwise covering sets (default) or the full products (PALS_FULL_GRID=1)."""
    if full_grid():
        return f"grids: the full products ({FULL_GRID_ENV}=1)"
    return f"grids: pairwise covering sets ({FULL_GRID_ENV}=1 runs the full products)"


@pytest.fixture
def here(capsys, monkeypatch):
    """A console command's ``main(argv)`` run in this process, as a ``CompletedProcess`` (exit status, stdout,
    stderr): the installed script calls the same function, without the seconds a new process spends importing torch
    (tests/test_cli_refusals.py runs the installed ``pals-train`` itself once)."""

    def run(main, *args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as e:  # an argparse refusal exits; the scripts' console() turns it into the status
            code = e.code
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out.out, out.err)

    return run


@pytest.fixture
def pals_train(here):
    """``pals-train ARGS --no-progress`` in this process (``here``): ``pals_train(*args, cwd=folder)``."""
    from pals_core.cli.train import main

    return lambda *args, cwd: here(main, *args, "--no-progress", cwd=cwd)


@pytest.fixture(scope="session")
def glue_dir() -> pathlib.Path:
    """The real GLUE TSVs (CI sets PALS_GLUE_DIR to ../shared/data/glue)."""
    path = os.environ.get("PALS_GLUE_DIR")
    if not path or not pathlib.Path(path).is_dir():
        pytest.fail("PALS_GLUE_DIR must point at the GLUE data (e.g. ../shared/data/glue); .ci/run sets it")
    return pathlib.Path(path)


@pytest.fixture(scope="session")
def token_cache(tmp_path_factory) -> str:
    """One tokenisation cache for every test that trains on real rows without testing the cache itself: an entry is
    keyed by the tokenizer, max_len and the texts (a whole file), so tests share it safely, and a GLUE file is
    tokenised once per session instead of once per test (seconds each). Under pytest-xdist the workers of one run
    share it (their base folders sit in the run's own): an entry is written atomically (a temporary folder, then
    ``os.replace``), so a file is tokenised once per run, not once per worker."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") and base.name.startswith("popen-"):
        shared = base.parent / "tokcache"
        shared.mkdir(exist_ok=True)
        return str(shared)
    return str(tmp_path_factory.mktemp("tokcache"))


@pytest.fixture
def summary_reads(monkeypatch) -> Counter:
    """How often each run's ``summary.json`` is read (``pals_core.results.read_summary``, the one reader of results)
    while the test runs, by path."""
    from pals_core import results

    reads: Counter = Counter()
    read = results.read_summary

    def counted(path):
        reads[pathlib.Path(path)] += 1
        return read(path)

    monkeypatch.setattr(results, "read_summary", counted)
    return reads
