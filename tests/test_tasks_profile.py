"""The data profile (``pals_core.data.profile``), ``pals-tasks``, and the example in ``examples/tasks/``: what a user
sees before training — rows, label shares, the majority reference, token lengths — checked against the files and
against the tokenizer called directly."""

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from pals_core.cli.tasks import main
from pals_core.data.profile import profile_task, profile_tasks
from pals_core.tasks.glue_tasks import glue_record
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.rows import dev_rows
from pals_core.tasks.taskfile import read_tasks_file

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tasks"
TASKS_FILE = EXAMPLE / "tasks.yaml"
DATA_FILES = (
    "intent_train.csv",
    "intent_dev.csv",
    "reviews.jsonl",
    "tickets.parquet",
    "entities_train.conll",
    "entities_dev.conll",
    "entities_train.jsonl",
    "replies_train.csv",
    "replies_dev.csv",
)
SHAPE = {"name", "kind", "train_rows", "dev_rows", "dev_source", "labels", "distribution", "majority", "tokens"}


@pytest.fixture(scope="module")
def records():
    return read_tasks_file(TASKS_FILE)


@pytest.fixture(scope="module")
def profiles(records):
    """The example's profiles without a tokenizer (no token statistics): fast."""
    return {name: profile_task(r) for name, r in records.items()}


def _intent_rows(split):
    with open(EXAMPLE / "data" / f"intent_{split}.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _reviews():
    return [json.loads(line) for line in (EXAMPLE / "data" / "reviews.jsonl").read_text().splitlines()]


def _tickets():
    return pq.read_table(EXAMPLE / "data" / "tickets.parquet").to_pylist()


# ------------------------------------------------------------------------------------ the example's profile


def test_example_profile_rows_and_shape(profiles):
    assert [p["name"] for p in profiles.values()] == ["intent", "reviews", "tickets", "entities", "replies"]
    for p in profiles.values():
        assert set(p) == SHAPE and p["tokens"] is None
        assert set(p["distribution"]) == {"train", "dev"} and set(p["majority"]) == {"metric", "main", "scores"}
    intent, reviews, tickets = profiles["intent"], profiles["reviews"], profiles["tickets"]
    assert (intent["kind"], intent["train_rows"], intent["dev_rows"]) == ("classification", 300, 90)
    assert intent["dev_source"] == str(EXAMPLE / "data" / "intent_dev.csv")
    assert intent["labels"] == ["billing", "delivery", "account"]  # the declared order
    assert (reviews["kind"], reviews["train_rows"], reviews["dev_rows"], reviews["labels"]) == (
        "regression",
        360,
        40,
        [],
    )
    assert reviews["dev_source"] == f"{EXAMPLE / 'data' / 'reviews.jsonl'} (dev: 0.1 of train, seed 0)"
    assert (tickets["kind"], tickets["train_rows"], tickets["dev_rows"]) == ("multilabel", 360, 40)
    assert tickets["labels"] == ["bug", "billing", "mobile", "urgent"]
    entities = profiles["entities"]
    assert (entities["kind"], entities["train_rows"], entities["dev_rows"]) == ("tokens", 300, 90)
    assert entities["dev_source"] == str(EXAMPLE / "data" / "entities_dev.conll")
    assert entities["labels"][0] == "O" and {t[2:] for t in entities["labels"][1:]} == {
        "PRODUCT",
        "CITY",
        "ORDER",
        "DATE",
        "AMOUNT",
    }
    replies = profiles["replies"]  # SWAG's layout (its candidate columns named: priced without a read)
    assert (replies["kind"], replies["train_rows"], replies["dev_rows"]) == ("choice", 300, 90)
    assert replies["labels"] == ["0", "1", "2", "3"] and replies["majority"]["metric"] == "accuracy"
    rows = list(csv.DictReader(open(EXAMPLE / "data" / "replies_train.csv", encoding="utf-8")))
    assert replies["distribution"]["train"] == {str(j): sum(r["label"] == str(j) for r in rows) for j in range(4)}


def test_example_distributions_match_the_files(profiles):
    intent = profiles["intent"]["distribution"]
    for split, n in (("train", 300), ("dev", 90)):
        rows = _intent_rows(split)
        assert sum(intent[split].values()) == len(rows) == n
        assert intent[split] == {k: sum(r["intent"] == k for r in rows) for k in ("billing", "delivery", "account")}
    tickets = profiles["tickets"]["distribution"]  # rows carrying each tag; train + dev = the whole file
    every = _tickets()
    for tag in ("bug", "billing", "mobile", "urgent"):
        assert tickets["train"][tag] + tickets["dev"][tag] == sum(tag in r["tags"] for r in every)
    reviews = profiles["reviews"]["distribution"]
    scores = np.array([r["score"] for r in _reviews()])
    assert reviews["train"]["mean"] * 360 + reviews["dev"]["mean"] * 40 == pytest.approx(scores.sum())
    assert min(reviews["train"]["min"], reviews["dev"]["min"]) == scores.min() == 1.0
    assert max(reviews["train"]["max"], reviews["dev"]["max"]) == scores.max() == 5.0
    assert set(reviews["train"]) == {"mean", "std", "min", "max"}


def test_majority_reference_is_the_hand_computed_one(profiles):
    # classification: the most frequent train intent on every dev row
    train, dev = _intent_rows("train"), _intent_rows("dev")
    counts = {k: sum(r["intent"] == k for r in train) for k in ("billing", "delivery", "account")}
    top = max(counts, key=counts.get)
    share = sum(r["intent"] == top for r in dev) / len(dev)  # precision of the one predicted class; recall 1
    m = profiles["intent"]["majority"]
    assert m["metric"] == "macro_f1" and m["main"] == pytest.approx((2 * share / (1 + share)) / 3)
    assert m["scores"]["accuracy"] == pytest.approx(share) and m["scores"]["mcc"] == 0.0
    # multilabel: each tag predicted when most train rows carry it (dev = seed 0's held-out rows)
    every = _tickets()
    held = set(dev_rows(len(every), 0.1, 0))
    tr = [r for i, r in enumerate(every) if i not in held]
    dv = [r for i, r in enumerate(every) if i in held]
    keep = {t for t in ("bug", "billing", "mobile", "urgent") if sum(t in r["tags"] for r in tr) > len(tr) / 2}
    assert keep == {"bug"}  # the example makes one tag a majority, so the reference is not zero
    tp = sum(len(keep & set(r["tags"])) for r in dv)
    fp = len(dv) * len(keep) - tp
    fn = sum(len(r["tags"]) for r in dv) - tp
    m = profiles["tickets"]["majority"]
    assert m["metric"] == "micro_f1" and m["main"] == pytest.approx(2 * tp / (2 * tp + fp + fn)) and m["main"] > 0
    # regression: the train mean on every row correlates with nothing
    m = profiles["reviews"]["majority"]
    assert m["metric"] == "pearson" and m["main"] == 0.0
    assert {k: m["scores"][k] for k in ("pearson", "spearman")} == {"pearson": 0.0, "spearman": 0.0}
    # ... and misses by its RMSE: mean((y - c)²) = var(y) + (mean(y) - c)², c the train mean
    train, dev = profiles["reviews"]["distribution"]["train"], profiles["reviews"]["distribution"]["dev"]
    rmse = math.sqrt(dev["std"] ** 2 + (dev["mean"] - train["mean"]) ** 2)
    assert m["scores"]["rmse"] == pytest.approx(rmse) and 0 < m["scores"]["mae"] <= m["scores"]["rmse"]


def test_the_runs_views_reference_is_the_profiles_for_every_kind(records, profiles):
    """The measured view's majority line (``measured.majority_average``) scores each task's baseline as its profile
    does: a tagging task's all-O tags with their names, a choice task's most frequent position."""
    from pals_core import measured

    for name, record in records.items():
        assert measured.majority_average([record]) == pytest.approx(100 * profiles[name]["majority"]["main"]), name
    assert measured.majority_average(list(records.values())) == pytest.approx(
        100 * sum(p["majority"]["main"] for p in profiles.values()) / len(profiles)
    )


def test_seed_draws_the_held_out_dev_rows(records):
    a, b = profile_task(records["reviews"], seed=0), profile_task(records["reviews"], seed=1)
    assert b["dev_source"].endswith("(dev: 0.1 of train, seed 1)") and b["dev_rows"] == 40
    assert a["distribution"]["dev"] != b["distribution"]["dev"]


def test_glue_task_profile(glue_dir):
    p = profile_task(glue_record("rte"), glue_dir=str(glue_dir))
    assert (p["train_rows"], p["dev_rows"], p["labels"]) == (2490, 277, ["entailment", "not_entailment"])
    assert p["dev_source"] == str(glue_dir / "RTE" / "dev.tsv")
    assert sum(p["distribution"]["dev"].values()) == 277
    assert p["majority"]["main"] == pytest.approx(max(p["distribution"]["dev"].values()) / 277)  # entailment is train's


def test_missing_glue_files_name_them(tmp_path):
    with pytest.raises(ValueError, match=r"GLUE files missing .*RTE/train\.tsv"):
        profile_task(glue_record("rte"), glue_dir=str(tmp_path))


def test_bad_max_len_refused(records):
    with pytest.raises(ValueError, match="max_len must be an integer of at least 8"):
        profile_task(records["intent"], max_len=4)


# ----------------------------------------------------------------------------------------- token lengths


def _direct_lengths(tokenizer, a, b=None):
    return np.array([len(ids) for ids in tokenizer(a, b, truncation=False)["input_ids"]])


def _stats(lengths, max_len):
    return {
        "max_len": max_len,
        "p50": math.ceil(np.percentile(lengths, 50)),
        "p95": math.ceil(np.percentile(lengths, 95)),
        "max": int(lengths.max()),
        "truncated": float(np.mean(lengths > max_len)),
    }


@pytest.mark.parametrize("model", ["tiny", None])
def test_token_stats_match_the_tokenizer_called_directly(records, model):
    from transformers import AutoTokenizer

    from pals_core.data.load import tokenizer_path

    tok = AutoTokenizer.from_pretrained(tokenizer_path(model), local_files_only=True)
    got = {p["name"]: p["tokens"] for p in profile_tasks(list(records.values()), model=model, max_len=24)}
    texts = {
        "intent": [r["message"] for r in _intent_rows("train") + _intent_rows("dev")],
        "reviews": [r["review"] for r in _reviews()],
        "tickets": [r["body"] for r in _tickets()],
    }
    for name, t in texts.items():
        lengths = _direct_lengths(tok, t)
        assert got[name] == _stats(lengths, 24), name
    assert got["tickets"]["truncated"] > 0  # 24 tokens cut some tickets: the share is measured, not assumed


def test_pair_lengths_count_both_texts_and_special_tokens(tmp_path):
    from transformers import AutoTokenizer

    from pals_core.data.load import tokenizer_path

    rows = [
        (f"premise number {i} " + "word " * (i % 7), f"hypothesis {i}" + " more" * (i % 5), str(i % 2))
        for i in range(30)
    ]
    path = tmp_path / "pairs.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("a", "b", "y"), *rows])
    record = TaskRecord(name="pairs", train=str(path), text=("a", "b"), label="y").check()
    tok = AutoTokenizer.from_pretrained(tokenizer_path("tiny"), local_files_only=True)
    p = profile_task(record, tokenizer=tok, max_len=12)
    lengths = _direct_lengths(tok, [r[0] for r in rows], [r[1] for r in rows])
    single = _direct_lengths(tok, [r[0] for r in rows]) + _direct_lengths(tok, [r[1] for r in rows]) - 1
    assert np.array_equal(lengths, single)  # [CLS] a [SEP] b [SEP]: both texts, three special tokens
    assert p["tokens"] == _stats(lengths, 12) and p["train_rows"] + p["dev_rows"] == 30


# ------------------------------------------------------------------------------------------------- the CLI


def test_cli_table(capsys):
    assert main([str(TASKS_FILE), "--max-len", "32", "--model", "tiny"]) == 0
    out = capsys.readouterr()
    for name in ("intent  (classification)", "reviews  (regression)", "tickets  (multilabel)", "entities  (tokens)"):
        assert name in out.out
    assert (
        "replies  (choice)" in out.out and "4 candidates a row, each (context, candidate) pair one sequence" in out.out
    )
    assert "majority reference, all O (entity F1 0): entity_f1 0.0" in out.out
    assert "majority reference, always 'billing': macro_f1 19.0" in out.out
    assert "longer than 32" in out.out and "train 300 rows · dev 90 rows" in out.out
    assert out.out.rstrip().splitlines()[-1].startswith("suggested: --max-len 40 (pals-train) / --seq-len 40")
    assert "tokenising" not in out.err  # no progress bar for a few hundred rows


def test_cli_json(capsys):
    assert main([str(TASKS_FILE), "--model", "tiny", "--json", "--seed", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in out["tasks"]] == ["intent", "reviews", "tickets", "entities", "replies"]
    assert out["suggested_max_len"] == max(t["tokens"]["p95"] for t in out["tasks"])
    assert out["tasks"][1]["dev_source"].endswith("seed 2)")


def test_cli_progress_bar_above_5k_rows(tmp_path, capsys):
    path = tmp_path / "many.csv"
    path.write_text("text,label\n" + "".join(f"row {i} says {'yes' if i % 2 else 'no'},{i % 2}\n" for i in range(6000)))
    (tmp_path / "t.yaml").write_text("tasks:\n  many: {train: many.csv}\n")
    assert main([str(tmp_path / "t.yaml"), "--model", "tiny"]) == 0
    out = capsys.readouterr()
    assert "many  (classification) · train 5,400 rows · dev 600 rows" in out.out
    assert "tokenising" in out.err


@pytest.mark.parametrize(
    "args, message",
    [
        (["/no/such/tasks.yaml"], "tasks file not found"),
        ([str(TASKS_FILE), "--model", "/no/such/model"], "not a local model folder"),
        ([str(TASKS_FILE), "--max-len", "3"], "max_len must be an integer of at least 8"),
        ([str(TASKS_FILE), "--max-len", "many"], "invalid int value"),
    ],
)
def test_cli_bad_input_one_line_exit_2(args, message, capsys):
    assert main(args) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1 and message in out.err


def test_cli_model_folder_without_tokenizer(tmp_path, capsys):
    assert main([str(TASKS_FILE), "--model", str(tmp_path)]) == 2
    assert "holds no tokenizer" in capsys.readouterr().err


def test_installed_script_bad_row_and_bad_record(tmp_path):
    """The real console script: a bad row is one line naming file, row and column; exit 2, no traceback."""
    exe = Path(sys.executable).with_name("pals-tasks")
    assert exe.is_file(), "pals-tasks is not installed: pip install -e . --no-deps"
    (tmp_path / "bad.csv").write_text("message,intent\nhello,a\n   ,b\nbye,a\n")
    (tmp_path / "t.yaml").write_text("tasks:\n  t: {train: bad.csv, text: message, label: intent}\n")
    (tmp_path / "r.yaml").write_text("tasks:\n  t: {train: bad.csv, text: message, label: intent, kind: sorting}\n")
    for file, message in (
        ("t.yaml", "bad.csv, row 2, column 'message': empty text"),
        ("r.yaml", "unknown kind 'sorting'"),
    ):
        p = subprocess.run([str(exe), str(tmp_path / file)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stderr)
        assert p.stderr.count("\n") == 1 and message in p.stderr and "Traceback" not in p.stderr


def test_example_prices_with_pals_budget(capsys):
    from pals_core.cli.budget import main as budget_main

    assert budget_main(["--tasks-file", str(TASKS_FILE), "--budget", "1.13"]) == 0
    out = capsys.readouterr().out
    header = " ".join(out.split("\n\n")[0].splitlines())  # the file names its model: no line before the question
    assert header.startswith("all-MiniLM-L6-v2 (the tasks file's model) (22,713,216 params")
    assert "5 tasks (intent, reviews, tickets, entities, replies" in header and "replies 4 sequences a row" in header
    assert " yes" in out
    assert "\nRecommended: " in out  # the explorer's answer, above the table


# ------------------------------------------------------------------------------------------ the example data


@pytest.mark.slow  # 1-3 s of real tokenising/training: make test, not make test-fast
def test_make_data_is_reproducible_and_matches_the_committed_files(tmp_path):
    script = EXAMPLE / "make_data.py"
    for out in ("a", "b"):
        subprocess.run(
            [sys.executable, str(script), "--out", str(tmp_path / out)], check=True, capture_output=True, timeout=60
        )
    for name in DATA_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    for name in DATA_FILES:  # the text files byte for byte; Parquet by content (its bytes name the pyarrow version)
        if not name.endswith(".parquet"):
            assert (tmp_path / "a" / name).read_bytes() == (EXAMPLE / "data" / name).read_bytes(), name
    assert pq.read_table(tmp_path / "a" / "tickets.parquet").equals(pq.read_table(EXAMPLE / "data" / "tickets.parquet"))
    assert sum((EXAMPLE / "data" / n).stat().st_size for n in DATA_FILES) < 250_000  # commit-sized (five tasks)


def test_example_runs_from_a_copy_of_its_folder(tmp_path):
    """Paths in tasks.yaml are relative to the file: the folder works wherever it is copied."""
    shutil.copytree(EXAMPLE / "data", tmp_path / "data")
    shutil.copy(TASKS_FILE, tmp_path / "tasks.yaml")
    got = {r.name: profile_task(r)["train_rows"] for r in read_tasks_file(tmp_path / "tasks.yaml").values()}
    assert got == {"intent": 300, "reviews": 360, "tickets": 360, "entities": 300, "replies": 300}


def test_example_labels_are_learnable_from_words(records):
    """A bag of words already separates the labels: the example gives a model something to learn."""
    from scipy.stats import pearsonr
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier

    train, dev = _intent_rows("train"), _intent_rows("dev")
    vec = CountVectorizer().fit([r["message"] for r in train])
    clf = LogisticRegression(max_iter=1000).fit(
        vec.transform([r["message"] for r in train]), [r["intent"] for r in train]
    )
    pred = clf.predict(vec.transform([r["message"] for r in dev]))
    assert f1_score([r["intent"] for r in dev], pred, average="macro") > 0.9

    reviews = _reviews()
    vec = CountVectorizer().fit([r["review"] for r in reviews[:360]])
    reg = Ridge().fit(vec.transform([r["review"] for r in reviews[:360]]), [r["score"] for r in reviews[:360]])
    assert (
        pearsonr(reg.predict(vec.transform([r["review"] for r in reviews[360:]])), [r["score"] for r in reviews[360:]])[
            0
        ]
        > 0.8
    )

    tickets, tags = _tickets(), ["bug", "billing", "mobile", "urgent"]
    y = np.array([[t in r["tags"] for t in tags] for r in tickets])
    vec = CountVectorizer().fit([r["body"] for r in tickets[:360]])
    ovr = OneVsRestClassifier(LogisticRegression(max_iter=1000)).fit(
        vec.transform([r["body"] for r in tickets[:360]]), y[:360]
    )
    assert f1_score(y[360:], ovr.predict(vec.transform([r["body"] for r in tickets[360:]])), average="micro") > 0.9

    # replies: which ending answers the message — a logistic regression on (message word, ending word) pairs
    from sklearn.feature_extraction.text import HashingVectorizer

    def pairs(split: str) -> tuple[list[str], list[int], int]:
        rows = list(csv.DictReader(open(EXAMPLE / "data" / f"replies_{split}.csv", encoding="utf-8")))
        docs, right = [], []
        for r in rows:
            words = r["sent1"].lower().split()
            for j in range(4):
                docs.append(" ".join(f"{w}|{v}" for w in words for v in r[f"ending{j}"].lower().split()))
                right.append(int(r["label"] == str(j)))
        return docs, right, len(rows)

    hashed = HashingVectorizer(token_pattern=r"\S+", n_features=2**18)
    docs, right, _ = pairs("train")
    pair_clf = LogisticRegression(max_iter=2000).fit(hashed.transform(docs), right)
    docs, right, n = pairs("dev")
    scores = pair_clf.decision_function(hashed.transform(docs)).reshape(n, 4)
    assert (scores.argmax(1) == np.array(right).reshape(n, 4).argmax(1)).mean() > 0.75  # the reference: 0.2
