"""A multiple-choice task in one run with other kinds: one forward pass over a batch holding a choice row, a tagging row
and a sentence row; every sampler (MT-Uncertainty's entropy over the candidates); --resume to the same numbers;
--seeds, --method separate and --from RUN --add-tasks; its weights in a task file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_choice import write_choice_tasks  # noqa: E402
from test_task_training import assert_resumes_to_the_same_numbers, run_config  # noqa: E402

from pals_core.data.samplers import SAMPLERS  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.train.trainer import train  # noqa: E402


class _Run:
    """What ``forward.encode_texts`` reads of a run: its tokenizer, max length and windows' stride."""

    max_len = 24
    stride = 8

    def tokenizer(self):
        from pals_core.data.load import load_tokenizer, minilm_path

        return load_tokenizer(minilm_path())


def test_one_pass_answers_a_choice_row_a_tagging_row_and_a_sentence_row_together():
    from pals_core.base_model import tiny_config_dict
    from pals_core.forward import PerWord, encode_texts, forward_rows
    from pals_core.model import MultiTaskModel
    from pals_core.outputs import Decoded

    info = _Run()
    long = ["John", "flew", "to", "Paris"] * 10  # 40 words: read in windows of 24 tokens sharing 8
    texts = [["The cat sees a friend."] * 3, long, "refund please", ["A dog"] * 3]
    pairs = [["The cat waves", "The cat melts", "The cat flies"], None, None, ["barks", "sings", "flies away"]]
    tasks = ["mc", "ner", "intent", "mc"]
    data = encode_texts(
        info, texts, pairs, [True, False, False, True], [False, True, False, False], [True, False, False, True]
    )
    windows = int(data.windows[1])
    assert windows > 1 and list(np.diff(data.groups)) == [3] + [1] * windows + [1, 3]  # a unit: a choice row, a window
    assert data.row_of.tolist() == [0] + [1] * windows + [2, 3]
    torch.manual_seed(0)
    for method in ("pals", "lora", "shared"):
        cfg = AdapterConfig(method=method, d_s=12) if method != "shared" else AdapterConfig(method="shared")
        spec = {"mc": 3, "ner": 5, "intent": 2}
        model = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, spec, per_word=["ner"], per_candidate=["mc"])
        calls: list[int] = []
        mixed = model.forward_mixed

        def counted(*a, mixed=mixed, calls=calls, **k):
            calls.append(1)
            return mixed(*a, **k)

        model.forward_mixed = counted
        sinks = {
            t: Decoded(t, k, [str(j) for j in range(spec[t])], spec[t])
            for t, k in (("mc", "choice"), ("intent", "classification"))
        }
        sinks["ner"] = PerWord(Decoded("ner", "tokens", ["O", "B", "I", "X", "Y"], 5), data)
        forward_rows(model, data, sinks, batch_size=8, device="cpu", row_tasks=tasks)
        assert calls == [1]  # the four rows (every window, every candidate) in one forward pass
        mc = sinks["mc"].outputs().logits
        for row, got in zip((0, len(data) - 1), mc):  # each choice row (a unit): its own forward on its candidates
            b = data.batch([row])
            want = model(
                task="mc",
                input_ids=b["input_ids"],
                attention_mask=b["attention_mask"],
                token_type_ids=b["token_type_ids"],
            )
            np.testing.assert_allclose(got, want[0].detach().numpy(), rtol=1e-5, atol=1e-5)
        b = data.batch([windows + 1])
        want = model(task="intent", input_ids=b["input_ids"], attention_mask=b["attention_mask"])
        np.testing.assert_allclose(sinks["intent"].outputs().logits[0], want[0].detach().numpy(), rtol=1e-5, atol=1e-5)
        words = sinks["ner"].sink.outputs().logits[0]
        want = np.full((len(long), 5), np.nan, np.float32)  # each word's logits: its predicting token's
        for unit in range(1, windows + 1):  # each window alone (Encoded.owned: the tokens that predict a word)
            b = data.batch([unit])
            tags = model(task="ner", input_ids=b["input_ids"], attention_mask=b["attention_mask"])[0].detach().numpy()
            _, j, _, w = data.owned([unit])
            want[w] = tags[j]
        assert not np.isnan(want).any()  # every word predicted, from one window
        np.testing.assert_allclose(words, want, rtol=1e-5, atol=1e-5)


def test_mt_uncertainty_scores_a_choice_row_by_the_entropy_over_its_candidates():
    from pals_core.base_model import tiny_config_dict
    from pals_core.data.mt_uncertainty import normalised_entropies
    from pals_core.model import MultiTaskModel

    torch.manual_seed(0)
    model = MultiTaskModel.from_base_config(
        tiny_config_dict(), AdapterConfig(method="lora", d_s=4), {"mc": 4}, per_candidate=["mc"]
    )
    ids = torch.randint(1000, 2000, (8, 6))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    [h] = normalised_entropies(model, [("mc", batch)])
    logits = model(task="mc", **batch).detach()
    p = torch.softmax(logits, -1)
    want = (-(p * p.log()).sum(-1) / np.log(4)).numpy()
    assert h.shape == (2,) and np.allclose(h, want, atol=1e-6)


def test_a_choice_tasks_weights_travel_in_a_task_file(tmp_path):
    from pals_core.base_model import tiny_config_dict
    from pals_core.model import MultiTaskModel

    torch.manual_seed(0)
    cfg = AdapterConfig(method="lora", d_s=4)
    model = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"mc": 3, "intent": 3}, per_candidate=["mc"])
    model.save_task("mc", tmp_path / "mc.safetensors")
    other = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"intent": 3})
    other.bert.load_state_dict(model.bert.state_dict())
    assert other.load_task(tmp_path / "mc.safetensors") == "mc" and other.per_candidate == {"mc"}
    ids = torch.randint(1000, 2000, (2, 3, 6))
    torch.testing.assert_close(other(task="mc", input_ids=ids), model(task="mc", input_ids=ids))
    with pytest.raises(ValueError, match="a sentence head in the model, a head scoring each candidate"):
        model.load_task(tmp_path / "mc.safetensors", task="intent")


@pytest.mark.slow
@pytest.mark.parametrize("sampling", sorted(SAMPLERS))
def test_every_sampler_trains_a_choice_task_beside_a_tagging_and_a_sentence_task(tmp_path, sampling):
    f = write_choice_tasks(tmp_path / "data", tagging=True)
    s = train(
        run_config(tmp_path / "run", tasks=[], tasks_file=str(f), steps=6, eval_every=6, sampling=sampling),
        progress=False,
    )
    assert set(s["scores"]) == {"swag", "ner", "intent"} and "accuracy" in s["scores"]["swag"]
    assert sum(s["task_steps"].values()) >= 6


@pytest.mark.slow
def test_a_run_with_a_choice_task_resumes_to_the_same_numbers(tmp_path):
    f = write_choice_tasks(tmp_path / "data")

    def cfg(out):
        return run_config(out, tasks=[], tasks_file=str(f), steps=8, eval_every=4, lr=1e-3, sampling="mt_uncertainty")

    assert_resumes_to_the_same_numbers(tmp_path, cfg)


@pytest.mark.slow
def test_seeds_separate_and_an_added_choice_task(tmp_path, pals_train):
    f = write_choice_tasks(tmp_path / "data")
    common = ["--model", "tiny", "--tasks-file", str(f), "--steps", "4", "--eval-every", "4", "--batch-size", "4"]
    out = pals_train(*common, "--method", "pals", "--d-s", "24", "--seeds", "0,1", "--out", "seeds", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    agg = json.loads((tmp_path / "seeds" / "summary.json").read_text())
    assert agg["seeds"] == [0, 1] and set(agg["scores"]) == {"swag", "intent"}
    sep = pals_train(*common, "--method", "separate", "--out", "sep", cwd=tmp_path)
    assert sep.returncode == 0, sep.stderr
    s = json.loads((tmp_path / "sep" / "summary.json").read_text())
    assert set(s["scores"]) == {"swag", "intent"} and s["params"]["models"] == 2
    # a base run of the intent task, then the choice task added on its frozen trunk
    (tmp_path / "data" / "intent.yaml").write_text("tasks:\n  intent: {train: intent.jsonl, text: t, label: y}\n")
    (tmp_path / "data" / "swag.yaml").write_text(
        "tasks:\n  swag: {train: swag_train.csv, dev: swag_dev.csv, kind: choice}\n"
    )
    base = ["--model", "tiny", "--batch-size", "4", "--method", "lora", "--d-s", "4", "--freeze-trunk"]
    steps = ["--steps", "4", "--eval-every", "4"]
    out = pals_train(
        *base, *steps, "--tasks-file", str(tmp_path / "data" / "intent.yaml"), "--out", "base", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    added = pals_train(
        "--from", "base", "--add-tasks", str(tmp_path / "data" / "swag.yaml"), *steps, "--out", "more", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    more = json.loads((tmp_path / "more" / "summary.json").read_text())
    first = json.loads((tmp_path / "base" / "summary.json").read_text())
    assert more["added"]["tasks"] == ["swag"] and "accuracy" in more["scores"]["swag"]
    assert more["scores"]["intent"] == first["scores"]["intent"]
