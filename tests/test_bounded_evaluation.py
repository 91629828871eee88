"""Evaluation and prediction at any label count take the memory the calculator prices: each batch's logits are reduced
to what is kept (the predicted class, the label and its probability) before the next batch runs, so a dev set of n
rows of a task with C labels never holds n × C floats; the live tensors of an evaluation stay within the band
``memory_infer``'s activations claim against the measured peak (tests/test_constraints.py), whatever n."""

from __future__ import annotations

import tracemalloc
from contextlib import nullcontext

import numpy as np
import pytest
import torch
from memory_probe import LiveBytes
from transformers import BertConfig

from pals_core.budget.costs import design
from pals_core.budget.tasks import parse_tasks
from pals_core.data.encoded import Encoded
from pals_core.families.shapes import from_hf_config
from pals_core.footprint.memory import inference_activation_bytes
from pals_core.model import MultiTaskBert
from pals_core.outputs import Decoded, decode
from pals_core.pricing.activations import Conditions
from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.record import TaskRecord
from pals_core.train.evaluate import evaluate

LABELS, ROWS, BATCH, TOKENS = 20_000, 640, 16, 8
TINY_BERT = dict(hidden_size=24, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48, vocab_size=120)
RECORDS = {"intent": TaskRecord("intent", train="intent.csv", metrics=("accuracy",))}
FULL = ROWS * LABELS * 4  # every dev row's logits at once: 51 MB


def _model(kind_labels: int):
    torch.manual_seed(0)
    hf = BertConfig(**TINY_BERT, max_position_embeddings=32)
    cfg = AdapterConfig(method="lora", d_s=4, freeze_trunk=True)
    return hf, cfg, MultiTaskBert.from_base_config(hf, cfg, {"intent": kind_labels}).eval()


def _dev(rows: int, labels: int) -> Encoded:
    rng = np.random.default_rng(0)
    ids = rng.integers(1, TINY_BERT["vocab_size"], rows * TOKENS).astype(np.int32)
    offsets = np.arange(rows + 1, dtype=np.int64) * TOKENS
    return Encoded(ids, np.zeros(rows * TOKENS, np.int8), offsets, rng.integers(0, labels, rows).astype(np.int64))


@pytest.mark.slow
def test_evaluation_at_many_labels_holds_one_batch_of_logits_as_priced():
    hf, cfg, model = _model(LABELS)
    dev = {"intent": {"": _dev(ROWS, LABELS)}}
    import sklearn.metrics  # noqa: F401  (imported before counting: the scoring's own modules are not the outputs)

    tracemalloc.start()
    try:
        with LiveBytes(model) as live:
            scores = evaluate(model, dev, RECORDS, batch_size=BATCH, device=torch.device("cpu"), autocast=nullcontext)
        numpy_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.0 <= scores["intent"]["accuracy"] <= 1.0
    ds = design(from_hf_config(hf.to_dict()), parse_tasks({"intent": LABELS}), cfg, seq_len=TOKENS)
    priced = inference_activation_bytes(ds, BATCH, Conditions(train=False))
    assert priced < FULL / 20  # one batch's logits, not the dev set's
    assert live.peak <= priced / 0.6, (live.peak, priced)  # the band memory_infer claims (0.6–1.2 of the peak)
    assert numpy_peak < FULL / 20, numpy_peak  # the predictions kept: n classes, not n × C floats


def test_prediction_decodes_batch_by_batch_and_keeps_no_logits_unless_asked():
    """``Decoded`` (what ``predict_texts`` and ``pals-predict`` gather) equals decoding every row at once, and without
    ``keep`` holds labels and their probabilities only: no n × C array survives the batches."""
    rng = np.random.default_rng(1)
    names = [f"l{i}" for i in range(LABELS)]
    batches = [(np.arange(i, ROWS, 3)[:40], rng.standard_normal((40, LABELS)).astype(np.float32)) for i in range(3)]
    whole_rows = np.concatenate([r for r, _ in batches])
    whole = decode("intent", "classification", names, np.concatenate([x for _, x in batches])[np.argsort(whole_rows)])
    kept, lean = (Decoded("intent", "classification", names, LABELS, keep=k) for k in (True, False))
    tracemalloc.start()
    try:
        for rows, logits in batches:
            lean.add(rows, logits)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after < 40 * LABELS * 4  # less than one batch's logits remain
    for rows, logits in batches:
        kept.add(rows, logits)
    a, b = lean.outputs(), kept.outputs()
    assert a.label == b.label == whole.label
    assert np.array_equal(a.prob, whole.prob) and np.array_equal(b.probs, whole.probs)
    assert a.probs is None and a.logits is None
