"""No test reads or depends on the user's own settings: the suite runs in a home of its own (tests/conftest.py), so a
``pals-calibrate`` profile, runs or studies in the user's home change nothing — proved by running tests of the suite
under a home that holds a calibrated profile, as a user's does once a run's summary advised ``pals-calibrate``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = "tests/test_user_settings_unread.py::test_the_suite_runs_in_a_home_of_its_own"
PAGE_AND_CLI = "tests/test_browser_truth.py::test_the_page_the_downloaded_csv_and_pals_budget_agree_to_the_digit"


def test_the_suite_runs_in_a_home_of_its_own():
    """What every test sees: an empty home under the temporary folder, no calibrated profile, no user folders; and
    so does a command it starts (pals-budget's default machine: the built-in h100, not a user's ``local``)."""
    from pals_core.budget.machine import default_device
    from pals_core.footprint.timing import local_profile_path

    home = Path(os.environ["HOME"])
    assert home.name.startswith("pals-tests-home-") and home.parent == Path(tempfile.gettempdir())
    assert Path.home() == home and local_profile_path().is_relative_to(home) and not local_profile_path().exists()
    assert "PALS_LOCAL_PROFILE" not in os.environ and Path(os.environ["PALS_RUNS_DIR"]).is_relative_to(home)
    assert default_device() == "h100"
    out = subprocess.run(
        [sys.executable, "-m", "pals_core.cli.budget", "--tasks", "rte", "--budget", "1.13", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(out.stdout)["machine"]["device"] == "NVIDIA H100 SXM5 80GB"


def calibrated_home(tmp_path: Path) -> dict:
    """The environment of a user who ran ``pals-calibrate`` (its profile in their home, as the command writes it)."""
    from pals_core.footprint.timing import load_profile

    home = tmp_path / "user-home"
    profile = home / ".cache" / "pals-explorer" / "local.json"
    profile.parent.mkdir(parents=True)
    measured = load_profile("t4").as_dict() | {"name": "local", "kind": "cpu", "match": None, "threads": 1}
    profile.write_text(json.dumps(measured))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALS_") or k == "PALS_GLUE_DIR"}
    return env | {"HOME": str(home)}


def nested_pytest(test: str, env: dict, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow  # a pytest session of its own
def test_a_calibrated_user_home_changes_no_test(tmp_path):
    p = nested_pytest(PROBE, calibrated_home(tmp_path), 300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "1 passed" in p.stdout


@pytest.mark.slow
@pytest.mark.browser
def test_the_page_and_pals_budget_agree_with_a_calibrated_user_home(tmp_path):
    """The test a fresh clone's CI failed on once its user had calibrated: its server and its pals-budget saw
    different homes (0.93 against 1.41 GiB to train)."""
    p = nested_pytest(PAGE_AND_CLI, calibrated_home(tmp_path), 600)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]
