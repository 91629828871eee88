"""What ``pals-export`` says: the ONNX outputs line gives each output's real axes (a tagging task's logits are
[batch, sequence, C], a sentence task's [batch, C]: the graph's own output shapes, read back with onnx)."""

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
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("outputs (logits):")]
    printed = dict(re.findall(r"(\w+) \[([^\]]+)\]", line))
    _, outputs = graph_io(tmp_path / "onnx")  # the graph's own shapes: C printed as C=<its size>
    assert printed == {t: ", ".join(d if isinstance(d, str) else f"C={d}" for d in dims) for t, dims in outputs.items()}
    assert printed == {"ner": "batch, sequence, C=4", "intent": "batch, C=2"}  # tags O, B-LOC, B-PER, I-PER
