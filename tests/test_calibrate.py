"""``pals-calibrate``: a bad ``--out`` is refused before anything is measured, and nothing is left behind."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("out, needle", [("", "--out is empty"), ("FOLDER", "is a folder")])
def test_calibrate_refuses_a_bad_out_before_measuring_and_leaves_nothing(tmp_path, monkeypatch, capsys, out, needle):
    """`pals-calibrate --out ""` silently overwrote the default profile; a failed --out left DIR.tmp behind."""
    from pals_core.cli import calibrate

    default = tmp_path / "default.json"
    default.write_text("{}")
    monkeypatch.setenv("PALS_LOCAL_PROFILE", str(default))
    (tmp_path / "FOLDER").mkdir()
    target = str(tmp_path / out) if out else ""
    assert calibrate.main(["--out", target]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert default.read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FOLDER", "default.json"]
