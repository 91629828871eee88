"""Links to the explorer: a number out of range in a link is named, never clamped; one at the end of its range is used;
the sidebar's fields hold the ranges a link is checked against. The page through ``streamlit.testing.v1.AppTest``."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("PALS_RUNS_DIR", str(d))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    return d


def open_at(query: dict) -> AppTest:
    """The page opened at ``?key=value&…`` (a link)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def page_errors(at) -> list[str]:
    return [e.value for e in at.error] + [e.value for e in at.exception]


def address(at) -> dict:
    return {k: (v[-1] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}


@pytest.mark.parametrize(
    "query,key,needle",
    [
        ({"heads": "5000"}, "heads", "adapter heads h_s 5,000 is outside the sidebar's range, 1 to 4,096"),
        ({"seq_len": "200000"}, "seq_len", "sequence length 200000 exceeds bert-base-uncased's 512 positions"),
        ({"model": "tiny", "seq_len": "513"}, "seq_len", "sequence length 513 exceeds tiny's 512 positions"),
        ({"tasks": "20000"}, "tasks", "number of tasks 20000 is unreasonably large (at most 10000)"),
        ({"budget": "1e9"}, "budget", "budget ratio 1e+09 is above the largest the calculator prices (10,000)"),
        ({"extra": "2e15"}, "extra", "extra budget 2e+15 is above the largest the calculator prices (1e+15)"),
        ({"per_task": "5e15"}, "per_task", "per-task budget 5e+15 is above the largest the calculator prices (1e+15)"),
    ],
)
def test_a_number_out_of_range_in_a_link_is_named_not_clamped(runs_dir, query, key, needle):
    at = open_at(query)
    errors = page_errors(at)
    value = query[key]
    assert [e for e in errors if f"the link's {key}={value!r} was not used" in e and needle in e], errors
    assert len(errors) == 1 and not at.exception, errors  # one line; the page still answers
    assert at.get("metric")
    # nothing was clamped: the fields hold their defaults, and the address holds what the page shows (not 1)
    assert at.sidebar.number_input(key="heads").value == 12
    assert at.sidebar.number_input(key="seq_len").value == 128
    assert address(at)["heads"] == "12" and address(at)["seq_len"] == "128"
    assert address(at).get(key) != "1"


def test_a_number_at_the_end_of_its_range_in_a_link_is_used(runs_dir):
    at = open_at({"model": "tiny", "heads": "4096", "seq_len": "512"})
    assert not [e for e in page_errors(at) if "the link's" in e] and not at.exception
    assert at.sidebar.number_input(key="heads").value == 4096
    assert at.sidebar.number_input(key="seq_len").value == 512
    assert address(at)["heads"] == "4096" and address(at)["seq_len"] == "512"


def test_the_sidebar_fields_hold_the_ranges_the_address_checks(runs_dir):
    """SIDEBAR_RANGES (what a link is checked against) is what the sidebar's number fields can hold."""
    from explorer.inputs import SIDEBAR_RANGES

    at = open_at({"tasks": "8"})  # the number-of-tasks field is drawn only for a count of tasks
    for key, (low, high) in SIDEBAR_RANGES.items():
        field = at.sidebar.number_input(key=key)
        assert (field.min, field.max) == (low, high), key
