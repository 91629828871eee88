"""What ``pals-export`` says: the ONNX graph's line gives each output's real axes (a tagging task's logits are
[batch, sequence, C], a sentence task's [batch, C]: the graph's own output shapes, read back with onnx), and a peft
adapter's model card names the trunk it was trained on in plain words."""

from __future__ import annotations

import re

import pytest
from test_export_onnx import adapter_for, graph_io, trained_run
from test_tokens_predict import write_tasks

from pals_core.cli.export import main as pals_export


@pytest.mark.slow  # a two-step run, traced and checked by onnxruntime (~10 s)
def test_the_printed_graph_line_gives_each_outputs_axes(tmp_path, capsys):
    run = trained_run(tmp_path / "run", write_tasks(tmp_path / "data"), "tiny", adapter_for("lora"))
    capsys.readouterr()
    assert pals_export([str(run), "--format", "onnx", "--out", str(tmp_path / "onnx")]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("graph:")]
    printed = dict(re.findall(r"(\w+) \[([^\]]+)\]", line.split(" · logits ")[1].split(" · opset")[0]))
    _, outputs = graph_io(tmp_path / "onnx")
    assert printed == {t: ", ".join(map(str, dims)) for t, dims in outputs.items()}
    assert printed == {"ner": "batch, sequence, 4", "intent": "batch, 2"}  # tags O, B-LOC, B-PER, I-PER


def test_the_model_card_names_the_trunk_in_plain_words():
    from pals_core.export.peft import trained_from
    from pals_core.families.bert.presets import EMBEDDED_MODEL

    assert trained_from(None, True) == f"the embedded {EMBEDDED_MODEL} as pretrained, frozen (not trained by the run)"
    assert (
        trained_from(None, False)
        == f"the embedded {EMBEDDED_MODEL} as the run fine-tuned it (not the pretrained checkpoint)"
    )
    assert trained_from("bert-base-uncased", True).startswith("`bert-base-uncased` as pretrained, frozen")
