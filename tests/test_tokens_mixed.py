"""A tagging task in one run with a sentence task: every sampler, --resume to the same numbers, --seeds, --method
separate, --from RUN --add-tasks, and one forward pass over a batch mixing a tagging row and a sentence row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_task_training import assert_resumes_to_the_same_numbers, run_config  # noqa: E402
from test_tokens import write_tagging_tasks  # noqa: E402

from pals_core.data.samplers import SAMPLERS  # noqa: E402
from pals_core.pricing.config import AdapterConfig  # noqa: E402
from pals_core.train.trainer import train  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("sampling", sorted(SAMPLERS))
def test_every_sampler_trains_a_tagging_task_beside_a_sentence_task(tmp_path, sampling):
    f = write_tagging_tasks(tmp_path / "data")
    s = train(
        run_config(tmp_path / "run", tasks=[], tasks_file=str(f), steps=4, eval_every=4, sampling=sampling),
        progress=False,
    )
    assert set(s["scores"]) == {"ner", "intent"} and "entity_f1" in s["scores"]["ner"]
    assert sum(s["task_steps"].values()) >= 4


@pytest.mark.slow
def test_a_run_with_a_tagging_task_resumes_to_the_same_numbers(tmp_path):
    f = write_tagging_tasks(tmp_path / "data")

    def cfg(out):
        return run_config(out, tasks=[], tasks_file=str(f), steps=8, eval_every=4, lr=1e-3, sampling="mt_uncertainty")

    assert_resumes_to_the_same_numbers(tmp_path, cfg)


@pytest.mark.slow
def test_seeds_separate_and_added_tagging_task(tmp_path, pals_train):
    f = write_tagging_tasks(tmp_path / "data")
    common = ["--model", "tiny", "--tasks-file", str(f), "--steps", "4", "--eval-every", "4", "--batch-size", "4"]
    out = pals_train(*common, "--method", "pals", "--d-s", "24", "--seeds", "0,1", "--out", "seeds", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    agg = json.loads((tmp_path / "seeds" / "summary.json").read_text())
    assert agg["seeds"] == [0, 1] and set(agg["scores"]) == {"ner", "intent"}
    sep = pals_train(*common, "--method", "separate", "--out", "sep", cwd=tmp_path)
    assert sep.returncode == 0, sep.stderr
    s = json.loads((tmp_path / "sep" / "summary.json").read_text())
    assert set(s["scores"]) == {"ner", "intent"} and s["params"]["models"] == 2
    # a base run of the intent task, then the tagging task added on its frozen trunk
    (tmp_path / "data" / "intent.yaml").write_text("tasks:\n  intent: {train: intent.jsonl, text: t, label: y}\n")
    (tmp_path / "data" / "ner.yaml").write_text(
        "tasks:\n  ner: {train: ner.jsonl, text: words, label: tags, kind: tokens}\n"
    )
    base = ["--model", "tiny", "--batch-size", "4", "--method", "lora", "--d-s", "4", "--freeze-trunk"]
    steps = ["--steps", "4", "--eval-every", "4"]
    out = pals_train(
        *base, *steps, "--tasks-file", str(tmp_path / "data" / "intent.yaml"), "--out", "base", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    added = pals_train(
        "--from", "base", "--add-tasks", str(tmp_path / "data" / "ner.yaml"), *steps, "--out", "more", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    more = json.loads((tmp_path / "more" / "summary.json").read_text())
    first = json.loads((tmp_path / "base" / "summary.json").read_text())
    assert more["added"]["tasks"] == ["ner"] and "entity_f1" in more["scores"]["ner"]
    assert more["scores"]["intent"] == first["scores"]["intent"]


def test_one_pass_answers_a_tagging_row_and_a_sentence_row_together():
    from pals_core.base_model import tiny_config_dict
    from pals_core.model import MultiTaskModel

    torch.manual_seed(0)
    for method in ("pals", "lora", "shared"):
        cfg = AdapterConfig(method=method, d_s=12) if method != "shared" else AdapterConfig(method="shared")
        model = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"ner": 5, "intent": 3}, per_word=["ner"])
        ids = torch.randint(1000, 2000, (2, 7))
        mask = torch.ones_like(ids)
        mask[1, 5:] = 0
        out = model.forward_mixed(ids, mask, torch.zeros_like(ids), tasks=["ner", "intent"])
        assert out[0].shape == (7, 5) and out[1].shape == (3,)
        torch.testing.assert_close(out[0], model(task="ner", input_ids=ids[:1], attention_mask=mask[:1])[0])
        torch.testing.assert_close(out[1], model(task="intent", input_ids=ids[1:], attention_mask=mask[1:])[0])
        every = model.predict_all(ids, mask, torch.zeros_like(ids))
        assert every["ner"].shape == (2, 7, 5) and every["intent"].shape == (2, 3)


def test_a_tagging_tasks_weights_travel_in_a_task_file(tmp_path):
    from pals_core.base_model import tiny_config_dict
    from pals_core.model import MultiTaskModel

    torch.manual_seed(0)
    cfg = AdapterConfig(method="lora", d_s=4)
    model = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"ner": 5, "intent": 3}, per_word=["ner"])
    model.save_task("ner", tmp_path / "ner.safetensors")
    other = MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"intent": 3})
    other.bert.load_state_dict(model.bert.state_dict())
    assert other.load_task(tmp_path / "ner.safetensors") == "ner" and other.per_word == {"ner"}
    ids = torch.randint(1000, 2000, (2, 6))
    torch.testing.assert_close(other(task="ner", input_ids=ids), model(task="ner", input_ids=ids))
    with pytest.raises(ValueError, match="a sentence head in the model, a head on every token"):
        MultiTaskModel.from_base_config(tiny_config_dict(), cfg, {"ner": 5}).load_task(tmp_path / "ner.safetensors")
