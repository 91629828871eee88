import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def glue_dir() -> pathlib.Path:
    """The real GLUE TSVs (CI sets PALS_GLUE_DIR to ../shared/data/glue)."""
    path = os.environ.get("PALS_GLUE_DIR")
    if not path or not pathlib.Path(path).is_dir():
        pytest.fail("PALS_GLUE_DIR must point at the GLUE data (e.g. ../shared/data/glue); .ci/run sets it")
    return pathlib.Path(path)
