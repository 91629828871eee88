"""Writes the example's data: five small tasks of one's own, one of each kind, built from templates × slots.

    python examples/tasks/make_data.py            # → examples/tasks/data/
    python examples/tasks/make_data.py --out DIR

* ``intent_train.csv`` / ``intent_dev.csv`` — classification: a customer message → its intent (``billing``,
  ``delivery``, ``account``; string labels, uneven shares so the majority class is a real reference);
* ``reviews.jsonl`` — regression: a product review → its score in [1, 5] (no dev file: the run holds out
  ``dev_fraction`` of it);
* ``tickets.parquet`` — multilabel: a support ticket → its tags out of ``bug``, ``billing``, ``mobile``,
  ``urgent`` (a list column);
* ``entities_train.conll`` / ``entities_dev.conll`` — tokens: each word of a support message → its entity tag
  (BIO: ``PRODUCT``, ``CITY``, ``ORDER``, ``DATE``, ``AMOUNT``; a CoNLL column file, word and tag), and
  ``entities_train.jsonl``, the same training sentences as list columns (``words``, ``tags``);
* ``replies_train.csv`` / ``replies_dev.csv`` — choice: a customer message and the start of an agent's reply → which
  of four endings fits the message (SWAG's layout: ``sent1``, ``sent2``, ``ending0`` … ``ending3``, ``label``).

Every text is synthetic (no real customer, product or person) and every label is learnable from its words:
each intent, score level and tag has its own phrases. The output is deterministic (one fixed seed, stdlib
``random`` and pyarrow only): running it twice writes the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

SEED = 25
HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------------------- slots

PRODUCTS = [
    "blender",
    "desk lamp",
    "kettle",
    "backpack",
    "headphones",
    "coffee grinder",
    "yoga mat",
    "phone case",
    "rain jacket",
    "water bottle",
    "keyboard",
    "toaster",
    "bike light",
    "travel mug",
    "office chair",
]
CITIES = ["Lisbon", "Leeds", "Austin", "Osaka", "Graz", "Porto", "Dundee", "Halifax", "Tartu", "Bergen"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "yesterday", "last week"]
PLANS = ["basic", "family", "premium", "annual", "student"]
STATUSES = ["in transit", "out for delivery", "delivered", "label created", "held at depot"]
OPENERS = ["", "", "Hi, ", "Hello, ", "Hey there. ", "Good morning, ", "Hi team, ", "Quick question: "]
CLOSERS = ["", "", " Thanks.", " Thank you!", " Please help.", " Any update?", " Cheers.", " Regards."]


def _fill(rng: random.Random, template: str) -> str:
    """``template`` with each {slot} drawn from its list (order numbers, amounts and counts made up)."""
    return template.format(
        product=rng.choice(PRODUCTS),
        city=rng.choice(CITIES),
        month=rng.choice(MONTHS),
        day=rng.choice(DAYS),
        plan=rng.choice(PLANS),
        status=rng.choice(STATUSES),
        order=f"#{rng.randint(10000, 99999)}",
        amount=f"${rng.randint(5, 250)}.{rng.randint(0, 99):02d}",
        n=rng.randint(2, 9),
        email=f"user{rng.randint(1, 999)}@example.com",
    )


# -------------------------------------------------------------------------------------- intent

INTENTS = {
    "billing": [
        "I was charged twice for order {order}.",
        "Why is there an extra fee of {amount} on my invoice?",
        "Can I get a refund for the {plan} plan?",
        "My card was billed {amount} even though I cancelled.",
        "The invoice for {month} looks wrong.",
        "Please explain the charge of {amount} on my statement.",
        "I want to switch to the {plan} plan and pay less.",
        "My payment failed but the money left my account.",
        "Do you send receipts for the {plan} subscription?",
        "I was overcharged for the {product}.",
    ],
    "delivery": [
        "My package has not arrived yet, order {order}.",
        "Where is my parcel? Tracking says {status}.",
        "The courier left the box at the wrong address.",
        "Can you ship order {order} to {city} instead?",
        "Delivery was due {day} but nothing came.",
        "The {product} arrived damaged in the post.",
        "Tracking for {order} has said {status} for days.",
        "How long does shipping to {city} take?",
        "Only half of my order {order} was delivered.",
        "Can I pick up the {product} instead of waiting for the courier?",
    ],
    "account": [
        "I cannot log in to my account.",
        "How do I reset my password?",
        "Please change the email on my profile to {email}.",
        "My account got locked after {n} attempts.",
        "I want to delete my account and my data.",
        "The two-factor code never arrives on my phone.",
        "Someone else may have signed in to my account {day}.",
        "How do I change my username?",
        "The login page keeps saying my password is wrong.",
        "Can I merge my two accounts into one?",
    ],
}
INTENT_WEIGHTS = {"billing": 0.45, "delivery": 0.33, "account": 0.22}


def intent_rows(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """``n`` (message, intent) rows, intents drawn by ``INTENT_WEIGHTS``."""
    names = list(INTENT_WEIGHTS)
    out = []
    for _ in range(n):
        intent = rng.choices(names, weights=[INTENT_WEIGHTS[k] for k in names])[0]
        opener, body = rng.choice(OPENERS), _fill(rng, rng.choice(INTENTS[intent]))
        if opener.endswith(", ") and not body.startswith("I "):
            body = body[0].lower() + body[1:]
        text = opener + body + rng.choice(CLOSERS)
        out.append((text.lower() if rng.random() < 0.15 else text, intent))
    return out


# ------------------------------------------------------------------------------------- reviews

VERDICTS = {  # score level → overall verdicts
    1: [
        "Terrible {product}.",
        "Worst purchase I have made.",
        "Complete waste of money.",
        "The {product} broke at once.",
    ],
    2: ["Disappointing {product}.", "Not great, sadly.", "Below what I expected.", "The {product} is flimsy."],
    3: ["An okay {product}.", "Average, nothing special.", "It does the job, barely.", "Fine for the price."],
    4: ["A good {product}.", "Pretty happy with it.", "Solid and well made.", "Works well most days."],
    5: ["Excellent {product}!", "Absolutely love it.", "Best {product} I have owned.", "Perfect in every way."],
}
GOOD = [
    "Delivery to {city} was quick.",
    "Easy to set up.",
    "Feels sturdy after {n} weeks.",
    "Great value.",
    "Looks lovely on my desk.",
    "Battery lasts ages.",
    "Quiet and fast.",
    "Nicer than my old {product}.",
    "Arrived {day}, well packed.",
]
BAD = [
    "It arrived scratched.",
    "Instructions were useless.",
    "Stopped working after {n} days.",
    "Support never replied.",
    "Feels cheap.",
    "Much louder than advertised.",
    "Parts were missing.",
    "Worse than my old {product}.",
    "Took {n} weeks to reach {city}.",
]
ENDINGS = {
    1: ["Returning it.", "Avoid."],
    2: ["Would not buy again.", ""],
    3: ["", "Maybe."],
    4: ["Would recommend.", ""],
    5: ["Buy it!", "Would buy again."],
}


def review_rows(rng: random.Random, n: int) -> list[dict]:
    """``n`` reviews with a score in [1, 5] (steps of 0.5): the verdict's level sets the score, the remarks
    lean with it."""
    out = []
    for _ in range(n):
        score = rng.randint(2, 10) / 2  # 1.0, 1.5, …, 5.0
        level = min(5, max(1, int(score + 0.5)))
        good_share = (score - 1) / 4
        remarks = [_fill(rng, rng.choice(GOOD if rng.random() < good_share else BAD)) for _ in range(rng.randint(1, 2))]
        parts = [_fill(rng, rng.choice(VERDICTS[level])), *remarks, rng.choice(ENDINGS[level])]
        out.append({"review": " ".join(p for p in parts if p), "score": score})
    return out


# ------------------------------------------------------------------------------------- tickets

TAG_PHRASES = {
    "bug": [
        "The app crashes when I open settings.",
        "I get error 500 when saving order {order}.",
        "The export button does nothing since {day}.",
        "Search returns an empty page.",
        "Uploads freeze at {n}0 percent.",
        "The report for {month} shows a stack trace.",
        "Saving a {product} listing throws an error.",
    ],
    "billing": [
        "I was charged {amount} twice.",
        "The {month} invoice is missing.",
        "My refund of {amount} has not arrived.",
        "The {plan} plan price changed without notice.",
        "We were billed for {n} seats, not {n}0.",
    ],
    "mobile": [
        "This happens on the Android app.",
        "On my iPhone the screen goes blank.",
        "The tablet version logs me out.",
        "Push notifications stopped on my phone {day}.",
        "The mobile app shows an old version of order {order}.",
    ],
    "urgent": [
        "Please fix this today, our whole team is blocked.",
        "This is urgent, production is down.",
        "We need an answer ASAP.",
        "Customers in {city} are waiting, please hurry.",
        "Critical: our launch is on {day}.",
    ],
}
TAG_SHARES = {"bug": 0.55, "billing": 0.3, "mobile": 0.35, "urgent": 0.25}
FILLERS = [
    "",
    "",
    "Ticket opened from the web form.",
    "We have used the service since {month}.",
    "Thanks in advance.",
    "Our office is in {city}.",
    "Reported by {email}.",
]


def ticket_rows(rng: random.Random, n: int) -> list[tuple[str, list[str]]]:
    """``n`` tickets, each with one to four tags (drawn by ``TAG_SHARES``) and one phrase of each tag's."""
    out = []
    for _ in range(n):
        tags = [t for t in TAG_SHARES if rng.random() < TAG_SHARES[t]] or [rng.choice(list(TAG_SHARES))]
        parts = [_fill(rng, rng.choice(TAG_PHRASES[t])) for t in tags]
        rng.shuffle(parts)
        parts.append(_fill(rng, rng.choice(FILLERS)))
        out.append((" ".join(p for p in parts if p), tags))
    return out


# ------------------------------------------------------------------------------------ entities

ENTITY_TEMPLATES = [  # {slot}: an entity of the slot's type; the rest is tagged O
    "I ordered the {product} on {date} but it never reached {city}.",
    "My order {order} was charged {amount} twice.",
    "Can you ship the {product} to {city} instead?",
    "The {product} from order {order} arrived broken.",
    "Tracking for {order} has not moved since {date}.",
    "Please refund {amount} for the {product}.",
    "Is there a store in {city} that has the {product}?",
    "I was billed {amount} on {date} for nothing.",
    "Order {order} to {city} is late.",
    "The courier in {city} lost my {product}.",
    "Why did the price of the {product} go up to {amount}?",
    "I returned the {product} on {date}, where is my refund of {amount}?",
    "How long does delivery to {city} take?",
    "I cannot log in to my account.",
    "Thanks for the quick help!",
    "Can I change the address on order {order}?",
]
ENTITY_SLOTS = {"product": "PRODUCT", "city": "CITY", "order": "ORDER", "date": "DATE", "amount": "AMOUNT"}
WORD = r"\{\w+\}|\w+(?:'\w+)?|[^\w\s]"  # a template's words: a {slot}, a word, a punctuation mark


def _entity_value(rng: random.Random, slot: str) -> str:
    if slot == "date":
        return rng.choice([rng.choice(DAYS), f"{rng.randint(1, 28)} {rng.choice(MONTHS)}"])
    return _fill(rng, "{" + slot + "}")


def entity_rows(rng: random.Random, n: int) -> list[tuple[list[str], list[str]]]:
    """``n`` support messages as words with one BIO tag each (IOB2: B- on an entity's first word, I- on the rest):
    products, cities, order numbers, dates and amounts, the slots of ``ENTITY_TEMPLATES``."""
    out = []
    for _ in range(n):
        words: list[str] = []
        tags: list[str] = []
        for piece in re.findall(WORD, rng.choice(ENTITY_TEMPLATES)):
            slot = piece[1:-1] if piece.startswith("{") else None
            if slot is None:
                words.append(piece)
                tags.append("O")
                continue
            value = _entity_value(rng, slot).split()
            words += value
            tags += [f"B-{ENTITY_SLOTS[slot]}"] + [f"I-{ENTITY_SLOTS[slot]}"] * (len(value) - 1)
        if rng.random() < 0.15:
            words = [w.lower() for w in words]
        out.append((words, tags))
    return out


# -------------------------------------------------------------------------------------- replies

REPLY_STARTS = [
    "Sorry about that, we will",
    "Thanks for writing in, I will",
    "No problem, our team will",
    "Happy to help: I will",
    "Right away, we will",
]
REPLY_ENDINGS = {  # intent → the endings of a reply that answer it; "other": never the right one
    "billing": [
        "refund the extra charge to your card today.",
        "send you a corrected invoice within the hour.",
        "cancel the duplicate payment at once.",
        "move you to the {plan} plan from next month.",
    ],
    "delivery": [
        "ask the courier where your parcel is now.",
        "ship a replacement {product} tomorrow.",
        "send order {order} to {city} instead.",
        "book a new delivery slot for {day}.",
    ],
    "account": [
        "send a password reset link to your email.",
        "unlock your account so you can sign in.",
        "change the email on your profile to {email}.",
        "turn off two-factor codes until you are back in.",
    ],
    "other": [
        "recommend a {product} that suits you.",
        "add a {product} to our spring catalogue.",
        "tell you about the {plan} plan offers.",
        "open a new store in {city} next year.",
    ],
}


def reply_rows(rng: random.Random, n: int) -> list[list[str]]:
    """``n`` rows in SWAG's layout (sent1, sent2, ending0 … ending3, label): a customer message (``intent_rows``), the
    start of a reply, and four endings — the one answering the message's intent, one for each other intent and one
    off-topic — at random places; the label is the right ending's index."""
    out = []
    for message, intent in intent_rows(rng, n):
        wrong = [k for k in REPLY_ENDINGS if k != intent]
        endings = [_fill(rng, rng.choice(REPLY_ENDINGS[k])) for k in [intent, *wrong]]
        order = list(range(4))
        rng.shuffle(order)
        out.append([message, rng.choice(REPLY_STARTS), *(endings[j] for j in order), str(order.index(0))])
    return out


def _conll_text(rows: Sequence[tuple[list[str], list[str]]]) -> str:
    """A CoNLL column file: a -DOCSTART- line, then one word and its tag a line, a blank line after a sentence."""
    lines = ["-DOCSTART- O", ""]
    for words, tags in rows:
        lines += [f"{w} {t}" for w, t in zip(words, tags)] + [""]
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- writing


def _write_atomic(path: Path, write: Callable[[str], None]) -> None:
    """``write(tmp_path)`` then rename over ``path``: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a data file is for everyone to read
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _csv_text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _write_text(path: Path, text: str) -> None:
    _write_atomic(path, lambda tmp: Path(tmp).write_bytes(text.encode("utf-8")))


def _write_parquet(path: Path, rows: Sequence[tuple[str, list[str]]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "body": pa.array([b for b, _ in rows], pa.string()),
            "tags": pa.array([t for _, t in rows], pa.list_(pa.string())),
        }
    )
    _write_atomic(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def make_data(out: Path) -> list[Path]:
    """Write the data files into ``out``; returns their paths. Each task has its own random stream, so
    changing one task's generator leaves the others' files as they were."""
    out = Path(out)
    written = []
    rng = random.Random(f"{SEED}:intent")
    for split, n in (("train", 300), ("dev", 90)):
        path = out / f"intent_{split}.csv"
        _write_text(path, _csv_text(["message", "intent"], intent_rows(rng, n)))
        written.append(path)
    path = out / "reviews.jsonl"
    rows = review_rows(random.Random(f"{SEED}:reviews"), 400)
    _write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    written.append(path)
    path = out / "tickets.parquet"
    _write_parquet(path, ticket_rows(random.Random(f"{SEED}:tickets"), 400))
    written.append(path)
    rng = random.Random(f"{SEED}:entities")
    splits = {split: entity_rows(rng, n) for split, n in (("train", 300), ("dev", 90))}
    for split, rows in splits.items():
        path = out / f"entities_{split}.conll"
        _write_text(path, _conll_text(rows))
        written.append(path)
    path = out / "entities_train.jsonl"  # the same training sentences as list columns (words, tags)
    _write_text(
        path, "".join(json.dumps({"words": w, "tags": t}, separators=(",", ":")) + "\n" for w, t in splits["train"])
    )
    written.append(path)
    rng = random.Random(f"{SEED}:replies")
    for split, n in (("train", 300), ("dev", 90)):
        path = out / f"replies_{split}.csv"
        header = ["sent1", "sent2", "ending0", "ending1", "ending2", "ending3", "label"]
        _write_text(path, _csv_text(header, reply_rows(rng, n)))
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--out", type=Path, default=HERE / "data", help="folder to write into (default: data/ beside this file)"
    )
    args = p.parse_args(argv)
    for path in make_data(args.out):
        print(f"{path}  {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
