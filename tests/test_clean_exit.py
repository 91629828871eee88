"""A clean green run: the collection pytest makes after an xdist worker reports "finished" is quick, so
execnet never SIGINTs the worker into an unraisable KeyboardInterrupt (``conftest.settle_garbage``)."""

from __future__ import annotations

import gc
import time

from conftest import settle_garbage


def test_after_settling_a_full_collection_skips_the_sessions_objects():
    heap = [[i] for i in range(300_000)]  # a large heap of tracked objects, as a worker's at the end of a session
    started = time.perf_counter()
    gc.collect()
    before = time.perf_counter() - started
    try:
        settle_garbage()
        started = time.perf_counter()
        gc.collect()  # what pytest's unraisable-exception clean-up runs once the worker has reported
        after = time.perf_counter() - started
        assert gc.get_freeze_count() >= len(heap)
    finally:
        gc.unfreeze()  # the rest of this session collects as before
    assert after < before / 3, (before, after)
