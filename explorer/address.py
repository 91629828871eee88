"""The page's address: its question in the URL query string (docs/design.md §12), both ways. Pure Python.

Keys: ``model`` (a preset, ``embedded-minilm``, ``tiny`` or a checkpoint folder), ``tasks`` (GLUE names
``cola,rte`` or a count ``8``) or ``tasks_file`` (the path of a tasks file on the server), one of ``budget``
(a ratio) / ``extra`` / ``per_task`` (counts such as ``15M``),
``budget_of`` (what a ratio is taken against: ``base`` or ``non-embedding``, ``Budget.OF``; written with a ratio),
``methods`` (comma list), ``location`` (``every``, ``all``, ``top``, ``bottom`` or layers ``0,1``), ``heads``,
``seq_len``, ``convention``; and the page's own ``view`` and ``design`` (the chosen row).

``to_query(raw, view, design)`` writes the sidebar's values; ``from_query(params)`` reads a link back into
sidebar widget values, returning one error line per bad key (the page shows them with ``st.error``; a bad
key is ignored, the rest of the link still applies). Every value is checked by the calculator's own parsers and
limits (``Budget.parse``, the model family's ``check_seq_len``), and a number the sidebar's field cannot hold is
refused with its range — never left to Streamlit, which would silently reset it to the field's minimum.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

from pals_core.budget import CONVENTIONS, PRESETS, Budget, get_method, parse_tasks, resolve_layers
from pals_core.budget.models import ALIASES
from pals_core.budget.units import parse_positive_int

from .inputs import (BUDGET_KINDS, EMBEDDED, LOCAL, LOCATION_CHOICES, LOCATION_CUSTOM, LOCATION_EVERY, TASKS_COUNT,
                     TASKS_FILE, TASKS_GLUE, TINY, RawInputs, check_sidebar_range, model_of, seq_len_for)

KEYS = ("model", "tasks", "tasks_file", "budget", "budget_of", "extra", "per_task", "methods", "location", "heads", "seq_len",
        "convention",
        "view", "design")
BUDGET_KEYS = {"ratio": "budget", "extra": "extra", "per-task": "per_task"}  # sidebar budget kind → URL key
MODEL_KEYS = {EMBEDDED: "embedded-minilm", TINY: "tiny"}
EVERY = "every"


@dataclass
class FromLink:
    """What a link sets: sidebar widget values (by widget key), the view and chosen design, and the
    lines that say which values were bad."""

    widgets: dict = field(default_factory=dict)
    view: Optional[str] = None
    design: Optional[str] = None
    errors: list = field(default_factory=list)


def to_query(raw: RawInputs, view: Optional[str] = None, design: Optional[str] = None) -> dict[str, str]:
    """The question (and the view) as query-string keys. A model from an uploaded file has no address:
    ``model`` is left out and the link opens the default model."""
    q: dict[str, str] = {}
    if raw.model in MODEL_KEYS:
        q["model"] = MODEL_KEYS[raw.model]
    elif raw.model == LOCAL:
        if raw.model_path.strip():
            q["model"] = raw.model_path.strip()
    elif raw.model in PRESETS:
        q["model"] = raw.model
    if raw.task_mode == TASKS_FILE:
        if (raw.tasks_file or "").strip():
            q["tasks_file"] = raw.tasks_file.strip()
    else:
        q["tasks"] = ",".join(raw.glue_tasks) if raw.task_mode == TASKS_GLUE else str(int(raw.task_count))
    q[BUDGET_KEYS.get(raw.budget_kind, "budget")] = (raw.budget_value or "").strip()
    if raw.budget_kind == "ratio":
        q["budget_of"] = raw.budget_of
    q["methods"] = ",".join(raw.methods)
    if raw.location == LOCATION_EVERY:
        q["location"] = EVERY
    elif raw.location == LOCATION_CUSTOM:
        q["location"] = (raw.location_custom or "").replace(" ", "")
    else:
        q["location"] = raw.location
    q["heads"], q["seq_len"], q["convention"] = str(raw.heads), str(raw.seq_len), raw.convention
    if view:
        q["view"] = view
    if design:
        q["design"] = design
    return q


def _one(value: Union[str, list]) -> str:
    return str(value[-1] if isinstance(value, list) and value else value).strip()


def from_query(params: Mapping[str, Union[str, list]], views: tuple[str, ...] = ()) -> FromLink:
    """Read a link. Unknown keys are errors too (a typo should not pass silently)."""
    out = FromLink()
    w = out.widgets

    def bad(key: str, value: str, why: str) -> None:
        out.errors.append(f"the link's {key}={value!r} was not used: {why}")

    for key in params:
        if key not in KEYS:
            bad(key, _one(params[key]), f"unknown key (the address knows {', '.join(KEYS)})")
    if "model" in params:
        v = _one(params["model"])
        name = ALIASES.get(v, v)
        if name in PRESETS:
            w["model"] = name
        elif v in MODEL_KEYS.values():
            w["model"] = next(k for k, key in MODEL_KEYS.items() if key == v)
        elif os.path.isfile(os.path.join(v, "config.json")):
            w["model"], w["model_path"] = LOCAL, v
        else:
            bad("model", v, f"not a preset ({', '.join(PRESETS)}), embedded-minilm, tiny, nor a folder holding config.json")
    if "tasks_file" in params:
        v = _one(params["tasks_file"])
        if not os.path.isfile(os.path.expanduser(v)):
            bad("tasks_file", v, "no such file on this server")
        else:
            w["task_mode"], w["tasks_file"] = TASKS_FILE, v
    if "tasks" in params and w.get("task_mode") == TASKS_FILE:
        bad("tasks", _one(params["tasks"]), "give tasks or tasks_file, not both (the tasks file's tasks are used)")
    elif "tasks" in params:
        v = _one(params["tasks"])
        try:
            tasks = parse_tasks(v)
        except ValueError as e:
            bad("tasks", v, str(e))
        else:
            if v.lstrip("+").isdigit():
                w["task_mode"], w["task_count"] = TASKS_COUNT, len(tasks)
            else:
                w["task_mode"], w["glue_tasks"] = TASKS_GLUE, [t.name for t in tasks]
    given = [k for k in BUDGET_KINDS if BUDGET_KEYS[k] in params]
    if len(given) > 1:
        bad(BUDGET_KEYS[given[1]], _one(params[BUDGET_KEYS[given[1]]]), "give one budget: budget, extra or per_task")
        given = given[:1]
    for kind in given:
        key = BUDGET_KEYS[kind]
        v = _one(params[key])
        try:
            Budget.parse(kind, v)  # the CLIs' reader, with the calculator's limits (limits.MAX_RATIO, MAX_COUNT)
        except ValueError as e:
            bad(key, v, str(e))
        else:
            w["budget_kind"], w[f"budget_{kind}"] = kind, v
    if "budget_of" in params:
        v = _one(params["budget_of"])
        if v not in Budget.OF:
            bad("budget_of", v, f"use {' or '.join(Budget.OF)}")
        elif given and given[0] != "ratio":
            bad("budget_of", v, "a ratio is taken of the base or the non-embedding parameters; extra and per_task are counts")
        else:
            w["budget_of"] = v
    if "methods" in params:
        v = _one(params["methods"])
        try:
            names = [get_method(m.strip()).name for m in v.split(",") if m.strip()]
            if not names:
                raise ValueError("no method given")
        except ValueError as e:
            bad("methods", v, str(e))
        else:
            w["methods"] = list(dict.fromkeys(names))
    if "location" in params:
        v = _one(params["location"])
        if v == EVERY:
            w["location"] = LOCATION_EVERY
        elif v in LOCATION_CHOICES:
            w["location"] = v
        else:
            try:
                resolve_layers(v, 10**6)  # the form (0-based integers); the model's depth is checked on the page
            except ValueError as e:
                bad("location", v, str(e))
            else:
                w["location"], w["location_custom"] = LOCATION_CUSTOM, v
    for key in ("heads", "seq_len"):
        if key in params:
            v = _one(params[key])
            try:
                w[key] = _number(key, v, w)
            except ValueError as e:
                bad(key, v, str(e))
    if "convention" in params:
        v = _one(params["convention"])
        if v in CONVENTIONS:
            w["convention"] = v
        else:
            bad("convention", v, f"use {' or '.join(CONVENTIONS)}")
    if "view" in params:
        v = _one(params["view"])
        if not views or v in views:
            out.view = v
        else:
            bad("view", v, f"the views are {', '.join(views)}")
    if "design" in params:
        out.design = _one(params["design"])  # checked against the table on the page
    return out


NUMBER_NAMES = {"heads": "adapter heads h_s", "seq_len": "sequence length"}


def _number(key: str, text: str, widgets: dict) -> int:
    """A link's ``heads`` or ``seq_len``: an integer the sidebar's field can hold (Streamlit would reset any other to
    the field's minimum without a word), and a sequence length the link's model takes (its family's
    ``check_seq_len``; a model that cannot be read is named by the page instead). ``ValueError`` in one line."""
    value = parse_positive_int(text, key)
    if key == "seq_len":  # the model's own limit first: it is the range that matters to the question
        try:
            model = model_of(widgets.get("model", RawInputs.model), widgets.get("model_path", ""))
        except (ValueError, TypeError, OSError):  # the page names what is wrong with the model
            model = None
        if model is not None:
            seq_len_for(model, value)
    check_sidebar_range(key, NUMBER_NAMES[key], value)
    return value


def link_budget(kind: str, value: float) -> str:
    """A budget value as a person types it: ratios rounded UP to 6 decimals (so the design still fits), counts whole."""
    if kind == "ratio":
        return f"{math.ceil(value * 1e6) / 1e6:.6f}".rstrip("0").rstrip(".")
    return str(int(math.ceil(value)))
