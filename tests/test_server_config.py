"""Server hygiene: the explorer's server watches no files (its folder holds .venv and runs/)."""

from pathlib import Path

import tomllib


def test_the_server_watches_no_files():
    config = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    assert config["server"]["runOnSave"] is False
