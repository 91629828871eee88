"""Tiny tokenizers of every family's tokenizer class, trained here on a few sentences with the tokenizers library (no
download): WordPiece (``BertTokenizer`` — BERT, MiniLM, ELECTRA —, ``DistilBertTokenizer``, ``MPNetTokenizer``),
byte-level BPE (``RobertaTokenizer``; ModernBERT's generic ``PreTrainedTokenizerFast``) and SentencePiece Unigram
(``AlbertTokenizer``, ``XLMRobertaTokenizer``, ``CamembertTokenizer``, ``DebertaV2Tokenizer``)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

WORDS = (
    "Anna Mary John Ines Ahmed Smith visited welcomed met Paris Lagos Kyoto Ouagadougou near said Li the a and in on "
    "today yesterday reported by E1042 refund invoice please money back quick brown fox jumps over lazy dog"
).split()
SENTENCES = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(0, len(WORDS), 3)] * 4
"""What the tokenizers learn from: every word of ``WORDS``, in running text."""

BPE_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


@functools.lru_cache(maxsize=1)
def _wordpiece() -> dict:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer(lowercase=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<s>", "</s>", "<pad>", "<unk>", "<mask>"]
    t.train_from_iterator(SENTENCES, trainers.WordPieceTrainer(vocab_size=160, special_tokens=specials))
    return t.get_vocab()


@functools.lru_cache(maxsize=1)
def _bpe() -> tuple[dict, list]:
    """A byte-level BPE vocabulary and merges learnt on running text (its words after a space: "Ġsaid")."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=420, special_tokens=BPE_SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    t.train_from_iterator(SENTENCES, trainer)
    spec = json.loads(t.to_str())["model"]
    return spec["vocab"], [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in spec["merges"]]


@functools.lru_cache(maxsize=1)
def _unigram() -> list:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    t = Tokenizer(models.Unigram())
    t.pre_tokenizer = pre_tokenizers.Metaspace()
    specials = ["<pad>", "<s>", "</s>", "<unk>", "<mask>", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    t.train_from_iterator(
        SENTENCES, trainers.UnigramTrainer(vocab_size=150, special_tokens=specials, unk_token="<unk>")
    )
    return [tuple(x) for x in json.loads(t.to_str())["model"]["vocab"]]


def bpe_tokenizer():
    """RoBERTa's tokenizer class on the tiny byte-level BPE (as saved checkpoints hold it: add_prefix_space off)."""
    from transformers import RobertaTokenizer

    vocab, merges = _bpe()
    return RobertaTokenizer(vocab=vocab, merges=merges)


def family_tokenizers() -> dict:
    """name → a tokenizer of that class, as a checkpoint's tokenizer files would build it."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import (
        AlbertTokenizer,
        BertTokenizer,
        CamembertTokenizer,
        DebertaV2Tokenizer,
        DistilBertTokenizer,
        MPNetTokenizer,
        PreTrainedTokenizerFast,
        XLMRobertaTokenizer,
    )

    wp, (vocab, merges), uni = _wordpiece(), _bpe(), _unigram()
    generic = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    generic.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # ModernBERT's tokenizer.json
    generic.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> $B </s>",
        special_tokens=[("<s>", vocab["<s>"]), ("</s>", vocab["</s>"])],
    )
    return {
        "bert": BertTokenizer(vocab=wp),
        "distilbert": DistilBertTokenizer(vocab=wp),
        "mpnet": MPNetTokenizer(vocab=wp),
        "roberta": bpe_tokenizer(),
        "modernbert": PreTrainedTokenizerFast(
            tokenizer_object=generic,
            cls_token="<s>",
            sep_token="</s>",
            pad_token="<pad>",
            unk_token="<unk>",
            mask_token="<mask>",
        ),
        "albert": AlbertTokenizer(vocab=uni, unk_token="<unk>"),
        "xlm-roberta": XLMRobertaTokenizer(vocab=uni),
        "camembert": CamembertTokenizer(vocab=uni),
        "deberta-v2": DebertaV2Tokenizer(vocab=uni, unk_token="<unk>"),
    }


def save_family_tokenizers(folder: Path) -> dict[str, Path]:
    """Every family's tokenizer saved under ``folder/<name>`` (what ``AutoTokenizer.from_pretrained`` reads)."""
    out = {}
    for name, tok in family_tokenizers().items():
        tok.save_pretrained(folder / name)
        out[name] = folder / name
    return out
