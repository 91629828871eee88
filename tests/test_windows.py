"""A row of words longer than the max length is read in overlapping windows — the very windows transformers' fast
tokenizers cut with a stride (what the token-classification pipeline reads) — each word predicted once, from the
window that gives it the most context; words are tokenised as each family's tokenizer learned them (each word's
start marked); a word the tokenizer reduces to nothing is refused, naming file, line and word."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_tokenizers import WORDS, bpe_tokenizer, family_tokenizers, save_family_tokenizers

from pals_core.data.load import load_tokenizer, minilm_path
from pals_core.data.windows import check_stride, count_windows, default_stride, max_context, spans
from pals_core.data.words import empty_words, first_subtokens, word_sequences, words_tokenizer


@pytest.fixture(scope="module")
def minilm():
    return load_tokenizer(minilm_path())


def _long_rows(n: int = 6) -> list[list[str]]:
    rng = np.random.default_rng(0)
    return [list(rng.choice(WORDS, size=k)) for k in (3, 9, 17, 30, 41, 58)[:n]]


# --- the windows ---------------------------------------------------------------------------------------------------


def test_spans_step_by_room_minus_stride_and_end_at_the_last_token():
    assert spans(10, 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert spans(11, 4, 1) == [(0, 4), (3, 7), (6, 10), (9, 11)]
    assert spans(4, 4, 2) == [(0, 4)] and spans(0, 4, 2) == [(0, 0)]
    assert spans(9, 3, 0) == [(0, 3), (3, 6), (6, 9)]
    with pytest.raises(ValueError, match="stride must be below the room"):
        spans(10, 4, 4)
    assert count_windows(12, 2, 12, 3) == 1 and count_windows(13, 2, 12, 3) == 2 == len(spans(11, 10, 3))
    assert default_stride(128) == 42 and default_stride(384) == 128  # run_qa's doc_stride at its max length
    check_stride(64, 128)
    for bad in (-1, 65, 2.0, True):
        with pytest.raises(ValueError, match="stride must be an integer from 0 to max_len // 2 = 64"):
            check_stride(bad, 128)


def test_each_position_is_read_from_the_window_where_it_has_the_most_context():
    """BERT's run_squad ``_check_is_max_context``, written out: min(left, right) + 0.01 × length, first on a tie."""
    for length, room, stride in [(10, 4, 1), (23, 8, 3), (40, 9, 4), (7, 7, 2), (30, 6, 0)]:
        windows = spans(length, room, stride)
        got = max_context(windows)
        for p in range(length):
            scores = [(min(p - a, b - 1 - p) + 0.01 * (b - a), -k) for k, (a, b) in enumerate(windows) if a <= p < b]
            assert got[p] == -max(scores)[1], (length, room, stride, p)


@pytest.mark.parametrize("stride", [0, 3, 5])
def test_the_windows_are_the_fast_tokenizers_overflow_windows(minilm, stride):
    """WordPiece (MiniLM) and byte-level BPE (word starts marked): every window's ids are those the tokenizer gives
    with ``stride`` and ``return_overflowing_tokens`` — what ``pipeline(..., stride=stride)`` reads — none longer
    than the max length; each word's tag trains on its first sub-token in every window that holds it."""
    rows = _long_rows()
    split = [0]  # windows that open inside a word
    for tok in (minilm, bpe_tokenizer()):
        words = words_tokenizer(tok)
        got = word_sequences(tok, 12, rows, stride)
        for i, row in enumerate(rows):
            want = words(
                row,
                is_split_into_words=True,
                truncation=True,
                max_length=12,
                stride=stride,
                return_overflowing_tokens=True,
            )
            mine = [k for k, r in enumerate(got["row"]) if r == i]
            assert [got["input_ids"][k] for k in mine] == want["input_ids"], (type(tok).__name__, i)
            whole = words(row, is_split_into_words=True).word_ids()
            for w, (k, (a, _)) in enumerate(zip(mine, spans(len(whole) - 2, 10, stride))):
                firsts = first_subtokens(want.word_ids(w))
                if whole.index(want.word_ids(w)[1]) < 1 + a:  # a window opening inside a word: not its first piece
                    firsts[1], split[0] = -1, split[0] + 1
                assert got["firsts"][k] == firsts
        assert max(map(len, got["input_ids"])) == 12 and len(got["row"]) > len(rows)
        assert [len(a) for a in got["input_ids"]] == [len(b) for b in got["token_type_ids"]]
    assert split[0] > 0, "no window opened inside a word: that case went untested"


def test_every_word_is_predicted_once_from_its_most_context_window(minilm):
    rows = _long_rows()
    got = word_sequences(minilm, 10, rows, 3)
    for i, row in enumerate(rows):
        mine = [k for k, r in enumerate(got["row"]) if r == i]
        owned = [w for k in mine for w in got["starts"][k] if w >= 0]
        assert sorted(owned) == list(range(len(row))), i  # every word, exactly once
        for k in mine:  # a word is owned where its first sub-token has the most context of the windows holding it
            for j, w in enumerate(got["starts"][k]):
                if w < 0:
                    continue
                room = len(got["input_ids"][k]) - 2
                here = min(j - 1, room - j) + 0.01 * room
                for other in mine:
                    if other != k and w in got["firsts"][other]:
                        jj, rr = got["firsts"][other].index(w), len(got["input_ids"][other]) - 2
                        assert here >= min(jj - 1, rr - jj) + 0.01 * rr
    cut = word_sequences(minilm, 10, rows, None)  # --truncate: one sequence per row, its later words unpredicted
    assert cut["row"] == list(range(len(rows))) and max(map(len, cut["input_ids"])) == 10
    assert sum(w >= 0 for s in cut["starts"] for w in s) < sum(map(len, rows))


def test_an_encoded_split_holds_windows_counts_rows_and_selects_a_row_with_all_its_windows(minilm, tmp_path):
    from pals_core.data.glue_rows import RawSplit
    from pals_core.data.load import encode
    from pals_core.kinds import get_kind

    rows = _long_rows()
    tags = [[(i + j) % 3 for j in range(len(r))] for i, r in enumerate(rows)]
    kind = get_kind("tokens")
    enc, _ = encode(
        RawSplit(rows, None, tags),
        kind.label_array(tags, 3),
        minilm,
        12,
        cache_dir=tmp_path,
        per_word=True,
        names=("O", "B-X", "I-X"),
        stride=3,
    )
    assert enc.rows == len(rows) and len(enc) > enc.rows and enc.cut_words == 0
    assert enc.windows.tolist() == np.bincount(enc.row_of).tolist() and enc.windows[0] == 1 and enc.windows[-1] > 2
    assert enc.gold.values.shape == (len(rows), max(map(len, rows)))
    picked = enc.select([5, 1])
    assert picked.rows == 2 and len(picked) == enc.windows[5] + enc.windows[1]
    assert picked.row_of.tolist() == [0] * enc.windows[5] + [1] * enc.windows[1]
    assert picked.gold.values[1, : len(rows[1])].tolist() == tags[1]
    b = picked.batch(np.arange(len(picked)))
    assert (b["words"][: enc.windows[5], : len(rows[5])] == picked.gold.values[0]).all()
    # each word's tag on its first sub-token in every window holding it: a row's labels cover its words, repeats too
    first = enc.row_of == 4
    labelled = sum(int((enc.labels[enc.offsets[k] : enc.offsets[k + 1]] >= 0).sum()) for k in np.flatnonzero(first))
    assert labelled > len(rows[4])
    cut, _ = encode(
        RawSplit(rows, None, tags),
        kind.label_array(tags, 3),
        minilm,
        12,
        cache_dir=tmp_path,
        per_word=True,
        names=("O", "B-X", "I-X"),
        stride=None,
    )
    assert len(cut) == cut.rows == len(rows) and cut.cut_words > 0


# --- words tokenised as the model learned them ---------------------------------------------------------------------


def test_every_familys_tokenizer_reads_words_as_running_text_and_its_saved_copy_keeps_it(tmp_path):
    """Each family's tokenizer class (WordPiece, byte-level BPE, SentencePiece): the words of a row tokenised one by
    one are the tokens of the same words in running text (each word after a space), the words' first sub-tokens are
    transformers' ``word_ids()`` alignment with the prefix space, and the tokenizer an export saves reads them so."""
    from transformers import AutoTokenizer

    rows = [["Anna", "said", "E1042", "near", "Li"], ["Ouagadougou", "welcomed", "Mary", "yesterday"]]
    for name, folder in save_family_tokenizers(tmp_path / "checkpoints").items():
        tok = load_tokenizer(str(folder))
        got = word_sequences(tok, 64, rows, 21)
        words = words_tokenizer(tok)
        for i, row in enumerate(rows):
            running = words(" " + " ".join(row), add_special_tokens=False)["input_ids"]
            ids = got["input_ids"][i]
            assert [t for t in ids if t not in tok.all_special_ids] == running, (name, tok.convert_ids_to_tokens(ids))
        if name in ("roberta", "modernbert"):  # byte-level BPE: as saved, the words' start marker is off
            assert not getattr(tok, "add_prefix_space", False) and words is not tok
            plain = tok(rows[0], is_split_into_words=True)["input_ids"]
            assert plain != got["input_ids"][0], name  # which is what the run would otherwise have trained on
        if name != "modernbert":  # transformers' own way, as its run_ner example asks (a generic class ignores it)
            prefixed = AutoTokenizer.from_pretrained(folder, add_prefix_space=True)
            for i, row in enumerate(rows):
                want = prefixed(row, is_split_into_words=True)
                assert got["input_ids"][i] == want["input_ids"], name
                assert got["firsts"][i] == first_subtokens(want.word_ids()), name
        words.save_pretrained(tmp_path / "export" / name)  # what an export of a tagging task writes
        saved = AutoTokenizer.from_pretrained(tmp_path / "export" / name)
        for i, row in enumerate(rows):
            again = saved(row, is_split_into_words=True)
            assert again["input_ids"] == got["input_ids"][i] and first_subtokens(again.word_ids()) == got["firsts"][i]


def test_the_tokenizers_built_here_are_every_familys_tokenizer_class():
    """Each model type a family takes loads one of the tokenizer classes the test above builds (ELECTRA's and
    DistilBERT's checkpoints load ``BertTokenizer``, ModernBERT's the generic fast class, ``TokenizersBackend``)."""
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

    from pals_core.families.registry import FAMILIES

    built = {type(t).__name__ for t in family_tokenizers().values()}
    for family in FAMILIES.values():
        for model_type in family.model_types:
            wanted = TOKENIZER_MAPPING_NAMES[model_type]
            wanted = wanted if isinstance(wanted, str) else next(c for c in wanted if c)
            assert wanted in built, (model_type, wanted)


def test_a_byte_level_bpe_tokenizer_marks_each_words_start_and_the_sentence_tasks_keep_theirs():
    tok = bpe_tokenizer()
    words = words_tokenizer(tok)
    row = ["near", "said", "Li"]
    marked = words.convert_ids_to_tokens(word_sequences(tok, 32, [row], 10)["input_ids"][0])
    assert marked == ["<s>", "Ġnear", "Ġsaid", "ĠLi", "</s>"]
    unmarked = tok.convert_ids_to_tokens(tok(row, is_split_into_words=True)["input_ids"])
    assert not {"Ġnear", "Ġsaid", "ĠLi"} & set(unmarked)  # what the words gave before: pieces pretraining never saw
    assert tok.convert_ids_to_tokens(tok("a said Li")["input_ids"])[2:4] == ["Ġsaid", "ĠLi"]  # a text: as it is
    assert words_tokenizer(tok) is words and words_tokenizer(words) is words  # made once
    minilm = load_tokenizer(minilm_path())
    assert words_tokenizer(minilm) is minilm  # WordPiece marks continuations, not starts: read as it is


# --- a word with no sub-token --------------------------------------------------------------------------------------


def test_the_words_a_tokenizer_reduces_to_nothing_are_found(minilm):
    odd = ["\u200b", "\u00ad", "\ufffd", "\x7f", "\u0301"]
    assert empty_words(minilm, [["Anna", *odd, "x\u00ad"]]) == [(0, k) for k in range(1, 6)]
    assert empty_words(bpe_tokenizer(), [["Anna", *odd]]) == []  # byte-level BPE keeps every byte


def _conll_task(folder, word: str = "\u200b"):
    folder.mkdir(parents=True, exist_ok=True)
    good = "John B-PER\nvisited O\nParis B-LOC\n\n"
    (folder / "train.conll").write_text(good * 3 + f"Mary B-PER\n{word} O\nsmiled O\n\n")
    (folder / "dev.conll").write_text(good)
    (folder / "tasks.yaml").write_text("tasks:\n  ner: {train: train.conll, dev: dev.conll, kind: tokens}\n")
    return folder / "tasks.yaml"


def _refusal(tmp_path) -> str:
    return f"{tmp_path / 'data' / 'train.conll'}, line 14, column 0: word '\\u200b' (U+200B) has no sub-token"


def test_a_training_file_with_a_word_of_no_sub_token_is_refused_by_pals_tasks(tmp_path, capsys):
    """One line naming file, line and word, exit 2; never "cut by max length"."""
    from pals_core.cli.tasks import main as tasks_main

    f = _conll_task(tmp_path / "data")
    assert tasks_main([str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and _refusal(tmp_path) in err and "cut" not in err


@pytest.mark.slow  # pals-train's imports: ~5 s
def test_a_training_file_with_a_word_of_no_sub_token_is_refused_by_pals_train_before_any_weight(tmp_path, capsys):
    from pals_core.cli.train import main as train_main

    f = _conll_task(tmp_path / "data")
    line = _refusal(tmp_path)
    args = ["--tasks-file", str(f), "--model", "tiny", "--method", "lora", "--d-s", "4", "--steps", "1"]
    code = train_main([*args, "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and line in err.splitlines()[-1] and not (tmp_path / "run" / "checkpoints").exists()


def test_a_run_declares_its_windows_once_and_a_run_written_before_them_cuts(tmp_path):
    from pals_core.data.windows import window_stride
    from pals_core.train.args import build_parser, config_from_args

    assert window_stride({"max_len": 128, "truncate": False, "stride": None}) == 42  # the default: a third
    assert window_stride({"max_len": 128, "truncate": False, "stride": 0}) == 0
    assert window_stride({"max_len": 128, "truncate": True, "stride": 10}) is None  # --truncate: cut at max_len
    assert window_stride({"max_len": 128}) is None  # a run's config.json from before windows: read as it trained
    text = " ".join(build_parser().format_help().split())
    assert "--stride N" in text and "--truncate" in text and "run_qa's --doc_stride" in text
    argv = ["--tasks", "rte", "--method", "lora", "--d-s", "4", "--max-len", "64", "--stride", "16", "--truncate"]
    cfg, _ = config_from_args(vars(build_parser().parse_args([*argv, "--out", str(tmp_path / "run")])))
    again = cfg.to_argv()  # what a launcher runs: the same run
    assert (
        (cfg.stride, cfg.truncate) == (16, True)
        and again[again.index("--stride") + 1] == "16"
        and "--truncate" in again
    )
    cfg.stride = 40
    with pytest.raises(ValueError, match="stride must be an integer from 0 to max_len // 2 = 32, got 40"):
        cfg.validate([])
