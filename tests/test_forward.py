"""The one forward pass over rows (``pals_core/forward.py``) that evaluation, ``predict_texts`` and ``pals-predict``
share: each row reaches its task's sink once, with its own logits, whatever order the batches ran in."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import train_tiny_run

from pals_core.data.glue_rows import RawSplit
from pals_core.data.load import encode
from pals_core.forward import encode_texts, forward_rows

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [f"{'very ' * (i % 6)}word {i}" for i in range(11)]


class Recorder:
    """A sink that keeps what it is handed: each batch's row positions and logits."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.logits: list[torch.Tensor] = []

    def add(self, rows, logits) -> None:
        self.rows.append(np.asarray(rows))
        self.logits.append(logits)

    def by_row(self) -> dict[int, torch.Tensor]:
        return {int(r): x for rows, xs in zip(self.rows, self.logits) for r, x in zip(rows, xs)}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from pals_core.model import MultiTaskModel

    return MultiTaskModel.from_run(train_tiny_run(tmp_path_factory.mktemp("forward"), ["a", "b"]))


def test_the_package_has_one_length_sorted_batching_loop():
    """Evaluation, prediction and pals-predict batch rows in order of length in forward.py alone."""
    sorting = re.compile(r"argsort\([^)]*lengths")
    found = [
        str(p.relative_to(ROOT)) for p in sorted((ROOT / "pals_core").rglob("*.py")) if sorting.search(p.read_text())
    ]
    assert found == ["pals_core/forward.py"]


@pytest.mark.slow
def test_texts_are_tokenised_as_the_trainer_tokenised_its_rows(model, tmp_path):
    pairs = [f"second {i}" for i in range(len(TEXTS))]
    info = model.run
    for second in (None, pairs):
        raw = RawSplit(TEXTS, second, [0] * len(TEXTS))
        trained, _ = encode(raw, np.zeros(len(TEXTS), np.int64), info.tokenizer(), info.max_len, cache_dir=tmp_path)
        ours = encode_texts(info, TEXTS, second)
        assert np.array_equal(ours.ids, trained.ids) and np.array_equal(ours.types, trained.types)
        assert np.array_equal(ours.offsets, trained.offsets)


@pytest.mark.slow
def test_each_row_reaches_its_tasks_sink_once_with_its_own_logits(model):
    data = encode_texts(model.run, TEXTS)
    every = {"a": Recorder(), "b": Recorder()}
    forward_rows(model, data, every, batch_size=3, device=torch.device("cpu"))
    lengths = [data.lengths[r].max() for r in every["a"].rows]
    assert lengths == sorted(lengths)  # batches in order of length
    for t, sink in every.items():
        got = sink.by_row()
        assert sorted(got) == list(range(len(TEXTS)))
        alone = torch.cat([model(task=t, **{k: v for k, v in data.batch([i]).items() if k != "labels"}) for i in got])
        assert torch.allclose(torch.stack([got[i] for i in got]), alone, atol=1e-5)
    # each row through its own task: the same logits, each row in its own task's sink only
    row_tasks = ["a" if i % 3 else "b" for i in range(len(TEXTS))]
    mixed = {"a": Recorder(), "b": Recorder()}
    forward_rows(model, data, mixed, batch_size=4, device=torch.device("cpu"), row_tasks=row_tasks)
    for t, sink in mixed.items():
        got, want = sink.by_row(), every[t].by_row()
        assert sorted(got) == [i for i, x in enumerate(row_tasks) if x == t]
        assert all(torch.allclose(got[i], want[i], atol=1e-5) for i in got)
