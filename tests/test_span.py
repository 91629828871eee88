"""Extractive question answering (kind: span), the parts that stand in its folder: SQuAD-layout answers read and
checked, the official SQuAD v1.1 / v2.0 scores, decoding as transformers' question-answering example, the positions a
window trains on, the loss, and the head priced against ``AutoModelForQuestionAnswering`` on every family.

The references below are the outside logic written out plainly, as the official scripts and the example lay it
out — the kind's code must agree with them on hand-made and random cases."""

from __future__ import annotations

import collections
import json
import re
import string
from types import SimpleNamespace

import numpy as np
import pytest

from pals_core.kinds.errors import TaskDataError, TaskRecordError
from pals_core.kinds.span import KIND
from pals_core.kinds.span.decoding import EMPTY, Question, Window, decode_answer
from pals_core.kinds.span.rows import answer_tokens
from pals_core.kinds.span.squad import normalize_answer, v1_scores, v2_scores
from pals_core.tasks.readers import read_columns

# --- the official evaluation scripts' logic (SQuAD v1.1 evaluate-v1.1.py, v2.0 evaluate-v2.0.py) ----------------


def _ref_normalize(s):
    def remove_articles(text):
        return re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _ref_v1(predictions, golds):
    def f1_score(prediction, ground_truth):
        prediction_tokens = _ref_normalize(prediction).split()
        ground_truth_tokens = _ref_normalize(ground_truth).split()
        common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
        num_same = sum(common.values())
        if num_same == 0:
            return 0
        precision = 1.0 * num_same / len(prediction_tokens)
        recall = 1.0 * num_same / len(ground_truth_tokens)
        return (2 * precision * recall) / (precision + recall)

    def exact_match_score(prediction, ground_truth):
        return _ref_normalize(prediction) == _ref_normalize(ground_truth)

    def best(fn, prediction, truths):
        return max(fn(prediction, t) for t in truths)

    em = sum(best(exact_match_score, p, g) for p, g in zip(predictions, golds))
    f1 = sum(best(f1_score, p, g) for p, g in zip(predictions, golds))
    return {"exact_match": 100.0 * em / len(golds), "f1": 100.0 * f1 / len(golds)}


def _ref_v2(predictions, golds, na_probs=None, na_prob_thresh=1.0):
    def get_tokens(s):
        return _ref_normalize(s).split() if s else []

    def compute_exact(a_gold, a_pred):
        return int(_ref_normalize(a_gold) == _ref_normalize(a_pred))

    def compute_f1(a_gold, a_pred):
        gold_toks, pred_toks = get_tokens(a_gold), get_tokens(a_pred)
        common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
        num_same = sum(common.values())
        if len(gold_toks) == 0 or len(pred_toks) == 0:
            return int(gold_toks == pred_toks)
        if num_same == 0:
            return 0
        precision = 1.0 * num_same / len(pred_toks)
        recall = 1.0 * num_same / len(gold_toks)
        return (2 * precision * recall) / (precision + recall)

    qids = [f"q{i}" for i in range(len(golds))]
    preds = dict(zip(qids, predictions))
    na = dict(zip(qids, na_probs or [0.0] * len(qids)))
    has = {q: bool(g) for q, g in zip(qids, golds)}
    exact_raw, f1_raw = {}, {}
    for q, g in zip(qids, golds):
        gold_answers = [a for a in g if _ref_normalize(a)] or [""]
        exact_raw[q] = max(compute_exact(a, preds[q]) for a in gold_answers)
        f1_raw[q] = max(compute_f1(a, preds[q]) for a in gold_answers)

    def apply(scores):
        return {q: float(not has[q]) if na[q] > na_prob_thresh else s for q, s in scores.items()}

    def find_best_thresh(scores):
        num_no_ans = sum(1 for k in has if not has[k])
        cur_score = best_score = num_no_ans
        best_thresh = 0.0
        for qid in sorted(na, key=lambda k: na[k]):
            diff = scores[qid] if has[qid] else (-1 if preds[qid] else 0)
            cur_score += diff
            if cur_score > best_score:
                best_score, best_thresh = cur_score, na[qid]
        return 100.0 * best_score / len(scores), best_thresh

    exact, f1 = apply(exact_raw), apply(f1_raw)
    out = {"exact": 100.0 * sum(exact.values()) / len(qids), "f1": 100.0 * sum(f1.values()) / len(qids)}
    for name, keep in (("HasAns", True), ("NoAns", False)):
        ids = [q for q in qids if has[q] == keep]
        if ids:
            out[f"{name}_exact"] = 100.0 * sum(exact[q] for q in ids) / len(ids)
            out[f"{name}_f1"] = 100.0 * sum(f1[q] for q in ids) / len(ids)
    out["best_exact"], out["best_exact_thresh"] = find_best_thresh(exact_raw)
    out["best_f1"], out["best_f1_thresh"] = find_best_thresh(f1_raw)
    return out


ANSWERED = [
    ("The Eiffel Tower!", ["Eiffel Tower", "the tower"]),
    ("an  apple,  a PEAR", ["apple pear"]),
    ("Denver Broncos", ["Broncos", "Denver  Broncos."]),
    ("1854–1856", ["1854"]),
    ("the the", ["the"]),
    ("", ["Paris"]),
    ("Paris Paris France", ["Paris France"]),
    ("Antarctica", ["Arctic"]),
    ("  ", ["a"]),
]
UNANSWERABLE = [("", []), ("something", []), ("", ["the"]), ("Paris", ["Paris", "."])]


def test_normalisation_is_the_official_scripts():
    for s in ["The  Eiffel-Tower!", "An apple, a PEAR.", "theatre The", "a.b", "  ", "Ángström’s — the", "an\tA\nthe"]:
        assert normalize_answer(s) == _ref_normalize(s)


def test_v1_scores_are_the_official_v1_1_scripts_on_hand_made_cases():
    preds, golds = [p for p, _ in ANSWERED], [g for _, g in ANSWERED]
    got, ref = v1_scores(preds, golds), _ref_v1(preds, golds)
    assert 100 * got["exact_match"] == pytest.approx(ref["exact_match"], abs=1e-12)
    assert 100 * got["f1"] == pytest.approx(ref["f1"], abs=1e-12)
    assert 0 < got["f1"] < 1 and 0 < got["exact_match"] < 1  # v1.1: "the the" matches "the" exactly, F1 0
    with pytest.raises(ValueError, match="no gold answer"):
        v1_scores(["x"], [[]])


@pytest.mark.parametrize("na_probs", [None, [0.9, 0.1, 0.5, 0.3, 0.95, 0.2, 0.7, 0.4, 0.6, 0.05, 0.85, 0.15, 0.45]])
@pytest.mark.parametrize("thresh", [1.0, 0.5])
def test_v2_scores_are_the_official_v2_0_scripts_with_the_no_answer_threshold(na_probs, thresh):
    rows = ANSWERED + UNANSWERABLE
    preds, golds = [p for p, _ in rows], [g for _, g in rows]
    got, ref = v2_scores(preds, golds, na_probs, thresh), _ref_v2(preds, golds, na_probs, thresh)
    for key, value in ref.items():
        scale = 1 if key.endswith("thresh") else 100
        assert scale * got[key] == pytest.approx(value, abs=1e-12), key
    assert got["NoAns_total"] == 2  # the record decides: ["the"] has an answer, though it normalises to nothing


def test_the_kind_scores_by_v1_when_every_question_is_answered_else_by_v2():
    preds = ["", "Paris", "the"]
    golds = [(("Paris", 0),), (("Paris", 3),), (("the", 0),)]
    # v1.1: an empty prediction scores 0 and a gold "the" normalises to "", matched exactly by "the"
    assert KIND.scores(None, preds, golds, ["exact_match", "f1"], 2) == pytest.approx(
        {"exact_match": 2 / 3, "f1": 1 / 3}
    )
    golds.append(())
    preds.append("")
    ref = _ref_v2(preds, [[a for a, _ in g] for g in golds])
    got = KIND.scores(None, preds, golds, ["exact_match", "f1"], 2)
    assert 100 * got["exact_match"] == pytest.approx(ref["exact"]) and 100 * got["f1"] == pytest.approx(ref["f1"])


# --- decoding: transformers' examples/pytorch/question-answering/utils_qa.py:postprocess_qa_predictions ----------


def _ref_postprocess(context, features, version_2_with_negative, n_best_size=20, max_answer_length=30, thresh=0.0):
    """postprocess_qa_predictions for one example: ``features`` = [(start_logits, end_logits, offset_mapping)] with
    None for a token outside the context."""
    min_null_prediction = None
    prelim_predictions = []
    for start_logits, end_logits, offset_mapping in features:
        feature_null_score = start_logits[0] + end_logits[0]
        if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
            min_null_prediction = {
                "offsets": (0, 0),
                "score": feature_null_score,
                "start_logit": start_logits[0],
                "end_logit": end_logits[0],
            }
        start_indexes = np.argsort(start_logits)[-1 : -n_best_size - 1 : -1].tolist()
        end_indexes = np.argsort(end_logits)[-1 : -n_best_size - 1 : -1].tolist()
        for start_index in start_indexes:
            for end_index in end_indexes:
                if (
                    start_index >= len(offset_mapping)
                    or end_index >= len(offset_mapping)
                    or offset_mapping[start_index] is None
                    or len(offset_mapping[start_index]) < 2
                    or offset_mapping[end_index] is None
                    or len(offset_mapping[end_index]) < 2
                ):
                    continue
                if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                    continue
                prelim_predictions.append(
                    {
                        "offsets": (offset_mapping[start_index][0], offset_mapping[end_index][1]),
                        "score": start_logits[start_index] + end_logits[end_index],
                        "start_logit": start_logits[start_index],
                        "end_logit": end_logits[end_index],
                    }
                )
    if version_2_with_negative and min_null_prediction is not None:
        prelim_predictions.append(min_null_prediction)
        null_score = min_null_prediction["score"]
    predictions = sorted(prelim_predictions, key=lambda x: x["score"], reverse=True)[:n_best_size]
    if (
        version_2_with_negative
        and min_null_prediction is not None
        and not any(p["offsets"] == (0, 0) for p in predictions)
    ):
        predictions.append(min_null_prediction)
    for pred in predictions:
        offsets = pred.pop("offsets")
        pred["text"] = context[offsets[0] : offsets[1]]
    if len(predictions) == 0 or (len(predictions) == 1 and predictions[0]["text"] == ""):
        predictions.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})
    scores = np.array([pred.pop("score") for pred in predictions])
    exp_scores = np.exp(scores - np.max(scores))
    probs = exp_scores / exp_scores.sum()
    for prob, pred in zip(probs, predictions):
        pred["probability"] = prob
    if not version_2_with_negative:
        return predictions[0]["text"], predictions[0]["probability"]
    i = 0
    while predictions[i]["text"] == "":
        i += 1
    best_non_null_pred = predictions[i]
    score_diff = null_score - best_non_null_pred["start_logit"] - best_non_null_pred["end_logit"]
    if score_diff > thresh:
        return "", next(p["probability"] for p in predictions if p["text"] == "")
    return best_non_null_pred["text"], best_non_null_pred["probability"]


CONTEXT = "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region."


def _random_windows(rng, context, n_windows):
    """Windows as a tokenizer would cut them: [CLS] + 4 question tokens + [SEP] + a slice of the context's words +
    [SEP], each word one token, consecutive windows overlapping."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", context)]
    size = -(-len(words) // n_windows) + 3
    out = []
    for k in range(n_windows):
        piece = words[max(0, k * (size - 3)) : k * (size - 3) + size]
        offsets = [(-1, -1)] * 6 + piece + [(-1, -1)]
        n = len(offsets)
        out.append((rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32), offsets))
    return out


@pytest.mark.parametrize("v2", [False, True])
def test_decoding_is_the_question_answering_examples_on_random_logits(v2):
    rng = np.random.default_rng(0)
    kinds = collections.Counter()
    for trial in range(300):
        n_windows = 1 + trial % 3
        n_best, longest = (20, 30) if trial % 2 else (3, 4)  # few candidates: the placeholder and no-answer paths
        feats = _random_windows(rng, CONTEXT, n_windows)
        if trial % 5 == 0:  # question tokens above every context token: nothing qualifies
            for s, e, _ in feats:
                s[:6] += 10
                e[:6] += 10
        ref_text, ref_prob = _ref_postprocess(
            CONTEXT, [(s, e, [None if o[0] < 0 else o for o in off]) for s, e, off in feats], v2, n_best, longest
        )
        windows = tuple(Window(s, e, np.asarray(off)) for s, e, off in feats)
        got = decode_answer(CONTEXT, windows, v2, n_best, longest)
        assert (got.text, got.prob) == (ref_text, pytest.approx(ref_prob, rel=1e-12)), trial
        if got.start >= 0:
            assert CONTEXT[got.start : got.end] == got.text
        else:
            assert got.text in ("", EMPTY)
        kinds["empty" if got.text == EMPTY else "none" if got.text == "" else "span"] += 1
    assert kinds["span"] > 100 and kinds["empty"] > 0 and (kinds["none"] > 0) == v2


def test_decode_gives_each_rows_answer_with_its_characters_and_probability():
    rng = np.random.default_rng(1)
    rows = [Question(CONTEXT, tuple(Window(s, e, np.asarray(o)) for s, e, o in _random_windows(rng, CONTEXT, 2)))]
    out = KIND.decode("qa", (), rows, scale={"unanswerable": False})
    ((start, end),) = out.spans.tolist()
    assert out.label[0] == CONTEXT[start:end] and 0 < out.prob[0] <= 1 and out.logits[0] is rows[0]


# --- the rows: SQuAD's layout, read from a file made here ------------------------------------------------------

SQUAD_ROWS = [
    {
        "id": "1",
        "question": "Who gave their name to Normandy?",
        "context": CONTEXT,
        "answers": {"text": ["The Normans", "Normans"], "answer_start": [0, 4]},
    },
    {
        "id": "2",
        "question": "Which century?",
        "context": CONTEXT,
        "answers": {"text": ["10th"], "answer_start": [CONTEXT.index("10th")]},
    },
    {"id": "3", "question": "Who is the king?", "context": CONTEXT, "answers": {"text": [], "answer_start": []}},
    {  # the official JSON's layout: a list of {text, answer_start}
        "id": "4",
        "question": "Which region?",
        "context": CONTEXT,
        "answers": [{"text": "Normandy", "answer_start": CONTEXT.index("Normandy")}],
    },
]
RECORD = SimpleNamespace(text=("question", "context"), label="answers")


def _read(tmp_path, rows):
    f = tmp_path / "squad.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return read_columns(f, ["question", "context", "answers"])


def test_squad_rows_are_read_with_their_answers_and_unanswerable_questions(tmp_path):
    cols = _read(tmp_path, SQUAD_ROWS)
    gold = KIND.targets(RECORD, cols, (), "train")
    assert gold == [(("The Normans", 0), ("Normans", 4)), (("10th", 39),), (), (("Normandy", 82),)]
    assert KIND.scale(gold) == {"unanswerable": True} and KIND.scale(gold[:2]) == {"unanswerable": False}
    assert KIND.label_array(gold, 2)[2] == ()
    train, dev = KIND.distribution(gold, {"": gold[:2]}, ())
    assert (train["questions"], train["unanswerable"], train["answer_words"]["max"]) == (4, 1, 2)
    assert dev["unanswerable_share"] == 0.0
    assert "25.0 %" in KIND.profile_lines({"distribution": {"train": train, "dev": dev}}, None)[0]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_squad_file_needs_only_its_paths_and_its_kind(tmp_path, fmt):
    """A tasks-file entry ``{train, dev, kind: span}`` reads SQuAD's columns (question, context, answers): the
    questions and contexts as pairs, each question's answers checked, the head's two outputs."""
    from pals_core.tasks.rows import num_labels, read_rows
    from pals_core.tasks.taskfile import read_tasks_file

    rows = [dict(r, answers=r["answers"]) for r in SQUAD_ROWS[:3]]  # one layout a file: datasets' dict of lists
    if fmt == "jsonl":
        for name in ("train", "dev"):
            (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for name in ("train", "dev"):
            pq.write_table(pa.Table.from_pylist(rows), tmp_path / f"{name}.parquet")
    (tmp_path / "tasks.yaml").write_text(f"tasks:\n  qa: {{train: train.{fmt}, dev: dev.{fmt}, kind: span}}\n")
    record = read_tasks_file(tmp_path / "tasks.yaml")["qa"]
    assert (record.text, record.label, record.pair) == (("question", "context"), "answers", True)
    assert num_labels(record) == 2
    train, dev, names = read_rows(record)
    assert names == () and train.text_a == [r["question"] for r in rows] and dev.text_b == [CONTEXT] * 3
    assert train.labels == [(("The Normans", 0), ("Normans", 4)), (("10th", 39),), ()]
    # what a user names still wins over the defaults
    (tmp_path / "renamed.jsonl").write_text(
        "".join(json.dumps({"q": r["question"], "c": r["context"], "a": r["answers"]}) + "\n" for r in rows)
    )
    (tmp_path / "tasks.yaml").write_text("tasks:\n  qa: {train: renamed.jsonl, kind: span, text: [q, c], label: a}\n")
    record = read_tasks_file(tmp_path / "tasks.yaml")["qa"]
    assert (record.text, record.label) == (("q", "c"), "a")
    assert read_rows(record, seed=0)[0].text_b == [CONTEXT] * 2  # train less the held-out dev row


@pytest.mark.parametrize(
    "answers, message",
    [
        ({"text": ["Normans"], "answer_start": [0]}, r"line 1, column 'answers', answer 1: 'Normans' is not at char"),
        ({"text": ["Normans"]}, r"line 1, column 'answers': answers are \{text"),
        ({"text": ["a", "b"], "answer_start": [0]}, "lists of one length"),
        ({"text": [""], "answer_start": [0]}, "answer 1: the text is a non-empty string"),
        ({"text": ["The"], "answer_start": [-1]}, "an integer ≥ 0"),
        ("The Normans", "answers are"),
    ],
)
def test_a_bad_answer_is_one_line_naming_file_row_and_column(tmp_path, answers, message):
    cols = _read(tmp_path, [dict(SQUAD_ROWS[0], answers=answers)])
    with pytest.raises(TaskDataError, match=message):
        KIND.targets(RECORD, cols, (), "train")


def test_a_span_record_names_the_question_and_the_context():
    from pals_core.tasks.record import TaskRecord

    with pytest.raises(TaskRecordError, match="two columns, the question's and the context's"):
        KIND.check(SimpleNamespace(text=("context",)), "tasks.yaml, task 'qa'")
    with pytest.raises(TaskRecordError, match=r"'text' is two columns, the question's and the context's, got \['c'\]"):
        TaskRecord("qa", kind="span", train="x", text=("c",), label="answers").check()


# --- what a window trains on: transformers' run_qa prepare_train_features ------------------------------------------


def _ref_positions(sequence_ids, offsets, answers, pad_right=True):
    """prepare_train_features for one window (the [CLS] token first), its start loop kept inside the context."""
    cls_index = 0
    if len(answers["answer_start"]) == 0:
        return cls_index, cls_index
    start_char = answers["answer_start"][0]
    end_char = start_char + len(answers["text"][0])
    token_start_index = 0
    while sequence_ids[token_start_index] != 1:
        token_start_index += 1
    token_end_index = len(offsets) - 1
    while sequence_ids[token_end_index] != 1:
        token_end_index -= 1
    if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
        return cls_index, cls_index
    # run_qa's loop runs on into [SEP] (offsets (0, 0)) when the answer starts at the window's last context token,
    # labelling the [SEP] as the start; the loop here, and the kind's, stop at the context's end
    while (
        token_start_index < len(offsets)
        and sequence_ids[token_start_index] == 1
        and offsets[token_start_index][0] <= start_char
    ):
        token_start_index += 1
    while offsets[token_end_index][1] >= end_char:
        token_end_index -= 1
    return token_start_index - 1, token_end_index + 1


def test_each_window_trains_on_the_answer_tokens_as_run_qa_prepares_them():
    from pals_core.data.load import load_tokenizer, minilm_path

    tok = load_tokenizer(minilm_path())
    checked = collections.Counter()
    for row in SQUAD_ROWS:
        enc = tok(
            row["question"],
            row["context"],
            truncation="only_second",
            max_length=24,
            stride=8,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
        )
        answers = row["answers"]
        if isinstance(answers, list):
            answers = {"text": [a["text"] for a in answers], "answer_start": [a["answer_start"] for a in answers]}
        first = (answers["text"][0], answers["answer_start"][0]) if answers["text"] else None
        for k in range(len(enc["input_ids"])):
            seq = enc.sequence_ids(k)
            ref = _ref_positions(seq, enc["offset_mapping"][k], answers)
            offsets = [o if s == 1 else (-1, -1) for o, s in zip(enc["offset_mapping"][k], seq)]
            assert answer_tokens(offsets, first) == ref
            checked["answer" if ref != (0, 0) else "cls"] += 1
            if ref != (0, 0):
                a, b = offsets[ref[0]][0], offsets[ref[1]][1]
                assert row["context"][a:b].lower() == first[0].lower()
    assert checked["answer"] >= 3 and checked["cls"] >= 3  # windows holding the answer and windows without it


def _long_pairs(words, n=5, seed=0):
    """(question, context, answers) rows of ``words``: contexts long enough for several windows, an answer of one to
    three words at a random place (one in five unanswerable), questions of 1-3 words (one with leading spaces)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        context = " ".join(rng.choice(words, size=int(rng.integers(8, 40))))
        k = int(rng.integers(1, 4))
        spots = [m.start() for m in re.finditer(r"(?<!\S)\S", context)]
        start = spots[int(rng.integers(0, max(1, len(spots) - k)))]
        text = " ".join(context[start:].split()[:k])
        answers = {"text": [text], "answer_start": [start]} if i % 5 != 4 else {"text": [], "answer_start": []}
        question = ("  " if i == 1 else "") + " ".join(rng.choice(words, size=int(rng.integers(1, 4))))
        out.append((question, context, answers))
    return out


@pytest.mark.parametrize("stride", [0, 2, 5])
def test_pair_windows_are_the_fast_tokenizers_only_second_overflow_windows_on_every_family(stride):
    """(question, context) pairs read by ``pair_windows``: every window's ids, token types and context offsets are
    the fast tokenizer's with ``truncation="only_second"``, the stride and ``return_overflowing_tokens`` (what the
    question-answering example and the card read), each mapped to its question as ``overflow_to_sample_mapping``;
    each window trains on the tokens run_qa's ``prepare_train_features`` gives it."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_tokenizers import WORDS, family_tokenizers

    from pals_core.data.load import load_tokenizer, minilm_path
    from pals_core.data.windows import count_windows, pair_tokens, pair_windows
    from pals_core.kinds.span.rows import window_labels

    tokenizers = {"minilm": load_tokenizer(minilm_path()), **family_tokenizers()}
    max_len, several, trained = 32, 0, collections.Counter()
    for name, tok in tokenizers.items():
        pairs = _long_pairs(list(WORDS))
        questions, contexts = [p[0] for p in pairs], [p[1] for p in pairs]
        got = pair_windows(tok, questions, contexts, max_len, stride)
        want = tok(
            [q.lstrip() for q in questions],
            contexts,
            truncation="only_second",
            max_length=max_len,
            stride=stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            return_token_type_ids=True,
        )
        assert got["input_ids"] == want["input_ids"], name
        if "token_type_ids" in tok.model_input_names:  # a model that reads none (XLM-R, ModernBERT) is given none;
            assert got["token_type_ids"] == want["token_type_ids"], name  # their overflow marks the context 1 (its
            # first window 0)
        assert got["row"] == list(want["overflow_to_sample_mapping"]), name
        golds = [tuple(zip(a["text"], a["answer_start"])) for _, _, a in pairs]
        labels = window_labels(got["offsets"], got["row"], golds)
        for k in range(len(want["input_ids"])):
            side = want.sequence_ids(k)
            offsets = [tuple(o) if s == 1 else (-1, -1) for o, s in zip(want["offset_mapping"][k], side)]
            assert [tuple(o) for o in got["offsets"][k].tolist()] == offsets, (name, k)
            ref = _ref_positions(side, want["offset_mapping"][k], pairs[got["row"][k]][2])
            assert tuple(labels[k]) == ref, (name, k)
            trained["answer" if ref != (0, 0) else "cls"] += 1
        n, fixed = pair_tokens(tok, questions, contexts)
        counts = [count_windows(int(a), int(b), max_len, stride) for a, b in zip(n, fixed)]
        assert counts == list(np.bincount(got["row"], minlength=len(pairs))), name
        several += sum(c > 1 for c in counts)
    assert several >= 10 and trained["answer"] >= 10 and trained["cls"] >= 10, (several, trained)


def test_a_question_leaving_no_room_to_step_is_refused_naming_its_row():
    from pals_core.data.load import load_tokenizer, minilm_path
    from pals_core.data.windows import pair_windows

    tok = load_tokenizer(minilm_path())
    with pytest.raises(ValueError, match=r"row 2: its question and special tokens take 15 of the 16 tokens"):
        pair_windows(tok, ["who?", "a b c d e f g h i j k l"], [CONTEXT, CONTEXT], 16, 3)


# --- the loss: transformers' ForQuestionAnswering ------------------------------------------------------------------


def test_the_loss_is_transformers_question_answering_loss():
    import torch
    from transformers import AutoConfig, AutoModelForQuestionAnswering

    from pals_core.kinds.span.module import loss

    torch.manual_seed(0)
    model = AutoModelForQuestionAnswering.from_config(
        AutoConfig.for_model("bert", hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    ).eval()
    ids = torch.randint(5, 100, (3, 12))
    starts, ends = torch.tensor([0, 4, 30]), torch.tensor([0, 6, 31])  # a window past the sequence is ignored
    out = model(input_ids=ids, start_positions=starts, end_positions=ends)
    logits = torch.stack([out.start_logits, out.end_logits], dim=-1)
    assert torch.allclose(loss(logits, torch.stack([starts, ends], dim=1)), out.loss)


# --- the head: AutoModelForQuestionAnswering's, priced on every family ---------------------------------------------


@pytest.mark.parametrize(
    "family_name",
    ["bert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet", "albert", "xlm-roberta"],
)
def test_the_head_is_priced_as_auto_model_for_question_answering_holds_and_runs_it(family_name):
    import sys
    from pathlib import Path

    import torch
    from transformers import AutoConfig, AutoModelForQuestionAnswering

    sys.path.insert(0, str(Path(__file__).parent))
    from flops import count_flops
    from tiny_models import tiny_config

    from pals_core.families.registry import get_family
    from pals_core.families.shapes import from_hf_config

    config = AutoConfig.for_model(family_name, **tiny_config(family_name))
    torch.manual_seed(0)
    qa = AutoModelForQuestionAnswering.from_config(config).eval()
    trunk = getattr(qa, qa.base_model_prefix)
    head = sum(p.numel() for p in qa.parameters()) - sum(p.numel() for p in trunk.parameters())
    m = from_hf_config({"model_type": family_name, **tiny_config(family_name)}, name="tiny")
    family = get_family(m.family)
    assert KIND.head_params(family, m, 2, False) == head
    n = 20
    ids = torch.randint(5, 1000, (1, n))
    with torch.no_grad():
        flops = count_flops(qa, input_ids=ids) - count_flops(trunk, input_ids=ids)
        out = qa(input_ids=ids)
    assert KIND.head_flops(family, m, 2, n) == flops
    assert KIND.logits_floats(1, n, 2) == out.start_logits.numel() + out.end_logits.numel()


# --- the hf card's code: the example's decoding on AutoModelForQuestionAnswering --------------------------------


@pytest.mark.parametrize("unanswerable", [False, True])
def test_the_cards_code_answers_as_the_kinds_decoding_on_the_same_windows(tmp_path, unanswerable):
    import torch
    from transformers import AutoConfig, AutoModelForQuestionAnswering, AutoTokenizer

    from pals_core.data.load import minilm_path

    torch.manual_seed(0)
    config = AutoConfig.for_model(
        "bert", hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8
    )
    model = AutoModelForQuestionAnswering.from_config(config).eval()
    model.save_pretrained(tmp_path)
    tok = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    tok.save_pretrained(tmp_path)
    scope: dict = {}
    exec(KIND.card_code(str(tmp_path), 24, 8, {"unanswerable": unanswerable}), scope)
    seen = []
    for row in SQUAD_ROWS:
        question, context = row["question"], row["context"]
        enc = tok(
            question,
            context,
            truncation="only_second",
            max_length=24,
            stride=8,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
        )
        windows = []
        for k, ids in enumerate(enc["input_ids"]):
            with torch.no_grad():
                out = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([enc["token_type_ids"][k]]))
            offsets = [o if s == 1 else (-1, -1) for o, s in zip(enc["offset_mapping"][k], enc.sequence_ids(k))]
            windows.append(Window(out.start_logits[0].numpy(), out.end_logits[0].numpy(), np.asarray(offsets)))
        assert len(windows) > 1  # the context is read in several windows
        want = decode_answer(context, windows, unanswerable)
        text, start, end, prob = scope["answer"](question, context)
        assert (text, start, end) == (want.text, want.start, want.end)
        assert prob == pytest.approx(want.prob, rel=1e-5)
        seen.append(text)
    assert any(t not in ("", EMPTY) for t in seen), seen  # spans of the context, not only placeholders


# --- MT-Uncertainty: a window's start and end distributions ------------------------------------------------------


def test_mt_uncertainty_scores_a_span_window_by_its_start_and_end_entropies():
    """H' of a span task's window is the mean of its start and end distributions' entropies over its real tokens,
    each over log n (scipy's entropy written out here); padding changes nothing; a sentence task beside it keeps its
    softmax over C."""
    import torch
    from scipy.stats import entropy

    from pals_core.data.mt_uncertainty import normalised_entropies
    from pals_core.model import MultiTaskModel
    from pals_core.pricing.config import AdapterConfig

    torch.manual_seed(0)
    model = MultiTaskModel.from_base("tiny", AdapterConfig(method="shared"), {"qa": 2, "cls": 3}, spans=["qa"])
    ids = torch.randint(5, 100, (3, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # a shorter window, padded
    batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
    qa, cls = normalised_entropies(model, [("qa", batch), ("cls", batch)])
    with torch.no_grad():
        logits = model(task="qa", **batch).numpy()
    for i in range(3):
        n = int(mask[i].sum())
        want = np.mean([entropy(np.exp(z - z.max()) / np.exp(z - z.max()).sum()) / np.log(n) for z in logits[i, :n].T])
        assert qa[i] == pytest.approx(want, rel=1e-5)
    short = {k: v[1:2, :6] for k, v in batch.items()}  # the padded window alone, unpadded
    assert normalised_entropies(model, [("qa", short)])[0][0] == pytest.approx(qa[1], rel=1e-5)
    assert cls.shape == (3,) and np.all((cls > 0) & (cls <= 1))


def test_a_span_task_names_its_outputs_for_the_exports():
    assert KIND.export_refusal("peft") is None and KIND.export_refusal("onnx") is None  # tests/test_span_export.py
    assert KIND.output_axes == ("batch", "sequence", "C") and KIND.output_names == ("start", "end")
