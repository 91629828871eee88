"""Command-line flags generated from a settings dataclass: a setting is declared once.

A field of a settings dataclass (``AdapterConfig``, ``TrainConfig``) declares its type, default and help
text; this module turns that one declaration into

- argparse flags ``--field-name`` (underscores → dashes) with that help text and default (``add_flags``),
- the typed values of the flags a person gave (``given_values``; absent flags stay absent, so a caller
  can tell "not given" from "given the default"),
- the inverse, the flags that reproduce an object (``to_argv``): ``parse(to_argv(x)) == x``.

Field metadata (all optional but ``help``): ``flag`` (another flag name), ``parse`` (str → value, raising
ValueError), ``format`` (value → str), ``choices`` (a callable giving the allowed values, or the name of a
list registered with ``register_choices``; read when the parser is built), ``metavar``, ``cli`` (False: not a
flag), ``always`` (``to_argv`` writes it even at its default), ``negative`` (a boolean's flag for False, e.g.
``--train-trunk``: with an ``Optional[bool]`` field the setting is three-way — the flag, its negative, or neither),
``default_text`` (a callable: the default in words, for ``--help``). Types without a ``parse`` are read from the annotation: bool, int, float, str, Optional[…] of
those (the word ``none`` gives None), list[str] / tuple[float, …] (comma-separated).

``names`` ({field: "--other-flag"}) gives a field another flag name in one CLI where its own name is taken
(``pals-study run --device`` is the worker's torch device, so the ``Machine`` profile is ``--device-profile``
there); help, default, parsing and checks stay the declaration's. Pass the same ``names`` to ``add_flags``,
``given_values`` and ``to_argv``.
Pure Python: the calculator's CLI uses it too.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


class UsageError(ValueError):
    """A command line that cannot run: every CLI reports it as one line on stderr and exits 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse for every CLI of the project: a bad flag is one line (``UsageError``), never argparse's usage dump."""

    def error(self, message: str) -> None:
        raise UsageError(message)


NONE = "none"
CHOICES: dict[str, Callable[[], Sequence[str]]] = {}
"""Named lists of allowed values (``metadata["choices"] = "method"``), registered by the module that owns them
(``register_choices``) so that a settings class need not import a registry that imports it."""


def register_choices(name: str, values: Callable[[], Sequence[str]]) -> None:
    CHOICES[name] = values


DEFAULT_TEXTS: dict[str, Callable[[], str]] = {}
"""Named defaults in words (``metadata["default_text"] = "trunk"``), registered by the module that knows them
(``register_default_text``), for the same reason as ``CHOICES``."""


def register_default_text(name: str, text: Callable[[], str]) -> None:
    DEFAULT_TEXTS[name] = text


@dataclasses.dataclass(frozen=True)
class Flag:
    """One field as a command-line flag."""

    name: str  # the dataclass field
    flag: str  # --field-name
    help: str
    default: Any  # the dataclass default (dataclasses.MISSING when the field has none)
    parse: Callable[[str], Any]
    format: Callable[[Any], str]
    boolean: bool
    optional: bool  # None is a valid value (written as ``none``)
    choices: Callable[[], Sequence[str]] | None
    metavar: str | None
    always: bool
    renamed: str | None = None  # the argparse dest when the flag is renamed in one CLI (``names``)
    negative: str | None = None  # a boolean's flag for False (``--train-trunk``); else ``--no-<flag>``
    default_text: str | None = None  # the name of the default in words (``DEFAULT_TEXTS``) where it is not one value

    @property
    def dest(self) -> str:
        return self.renamed or self.name

    def read(self, text: str) -> Any:
        """The typed value of ``text``; ValueError names the flag."""
        if self.optional and isinstance(text, str) and text.strip().lower() == NONE:
            return None
        try:
            value = self.parse(text)
        except (TypeError, ValueError) as e:
            detail = str(e)
            raise ValueError(
                f"{self.flag} {text!r}: {detail}" if detail else f"{self.flag} {text!r} is not valid"
            ) from None
        if self.choices is not None and value is not None:
            allowed = list(self.choices())
            if value not in allowed:
                raise ValueError(
                    f"unknown {self.name.replace('_', ' ')} {text!r} ({self.flag}: {', '.join(map(str, allowed))})"
                )
        return value

    def write(self, value: Any) -> list[str]:
        """The argv words that give ``value``."""
        if self.boolean:
            return [self.flag if value else (self.negative or "--no-" + self.flag[2:])]
        text = NONE if value is None else self.format(value)
        return [f"{self.flag}={text}"] if text.startswith("-") else [self.flag, text]  # "-3" would read as a flag


def _int(text: str) -> int:
    if isinstance(text, bool):
        raise ValueError("is not an integer")
    if isinstance(text, int):
        return text
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueError("is not an integer") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError("is not a number") from None
    if not math.isfinite(value):
        raise ValueError("is not a finite number")
    return value


def _str(text: str) -> str:
    return str(text)


def _fmt_float(x: float) -> str:
    return repr(float(x))  # exact round trip


def _split(text: str) -> list[str]:
    return [t.strip() for t in str(text).split(",") if t.strip()]


_SCALARS: dict[Any, tuple[Callable, Callable]] = {int: (_int, str), float: (_float, _fmt_float), str: (_str, str)}


def _infer(tp: Any) -> tuple[Callable, Callable, bool, bool]:
    """(parse, format, boolean, optional) for a type annotation."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    optional = False
    if origin in (typing.Union, types.UnionType) and type(None) in args:  # Optional[X] and X | None alike
        rest = [a for a in args if a is not type(None)]
        optional = True
        if len(rest) == 1:
            tp, origin, args = rest[0], typing.get_origin(rest[0]), typing.get_args(rest[0])
    if tp is bool:
        return (lambda t: t), str, True, optional
    if tp in _SCALARS:
        parse, fmt = _SCALARS[tp]
        return parse, fmt, False, optional
    if origin in (list, tuple) and args:
        item = args[0]
        parse_item, fmt_item = _SCALARS.get(item, (None, None))
        if parse_item is None:
            raise TypeError(f"no flag type for {tp!r}: give metadata parse/format")
        make = list if origin is list else tuple

        def parse(text: Any) -> Any:
            if isinstance(text, (list, tuple)):
                return make(parse_item(x) for x in text)
            return make(parse_item(x) for x in _split(text))

        return parse, (lambda v: ",".join(fmt_item(x) for x in v)), False, optional
    raise TypeError(f"no flag type for {tp!r}: give metadata parse/format")


def flags_of(cls: type, names: Mapping[str, str] | None = None) -> list[Flag]:
    """The flags of a settings dataclass, in field order (fields with ``metadata['cli'] is False`` skipped);
    ``names`` renames some ({field: "--flag"}, see the module docstring). Derived once per class and names (a CLI
    reads them to build its parser and again to type the values given)."""
    return list(_flags_of(cls, tuple(sorted((names or {}).items()))))


@functools.lru_cache(maxsize=64)
def _flags_of(cls: type, renamed: tuple[tuple[str, str], ...]) -> tuple[Flag, ...]:
    names = dict(renamed)
    unknown = set(names) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))} to rename")
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if meta.get("cli", True) is False:
            continue
        if "help" not in meta:
            raise TypeError(f"{cls.__name__}.{f.name} has no help text (metadata['help'])")
        parse, fmt, boolean, optional = (
            _infer(hints[f.name])
            if "parse" not in meta
            else (meta["parse"], meta.get("format", str), False, meta.get("optional", True))
        )
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else (f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        )
        choices = meta.get("choices")
        if isinstance(choices, str):
            choices = (lambda key: lambda: CHOICES[key]())(choices)
        out.append(
            Flag(
                f.name,
                meta.get("flag", "--" + f.name.replace("_", "-")),
                meta["help"],
                default,
                parse,
                meta.get("format", fmt),
                boolean,
                optional,
                choices,
                meta.get("metavar"),
                bool(meta.get("always", False)),
                negative=meta.get("negative"),
                default_text=meta.get("default_text"),
            )
        )
        if f.name in names:
            flag = names[f.name]
            out[-1] = dataclasses.replace(out[-1], flag=flag, renamed=flag.lstrip("-").replace("-", "_"))
    return tuple(out)


def _default_text(flag: Flag) -> str:
    if flag.default_text is not None:
        return DEFAULT_TEXTS[flag.default_text]()
    if flag.default is dataclasses.MISSING:
        return "required"
    if flag.boolean:
        return "on" if flag.default else "off"
    return NONE if flag.default is None else flag.format(flag.default)


def _metavar(flag: Flag) -> str:
    return {_int: "N", _float: "X"}.get(flag.parse, flag.name.upper())


def add_flags(
    parser: Any,
    cls: type,
    *,
    skip: Iterable[str] = (),
    title: str | None = None,
    names: Mapping[str, str] | None = None,
    defaults: Mapping[str, str] | None = None,
) -> list[Flag]:
    """Add one flag per field of ``cls`` to ``parser`` (or a new argument group titled ``title``). Each help ends in
    the flag's one default: the field's, or ``defaults[field]`` where this command does something else without the
    flag (``pals-budget`` without ``--method`` prices every method).

    Flags default to ``argparse.SUPPRESS``: an absent flag is absent from the namespace; values stay strings
    until ``given_values`` types and checks them (so every error names its flag in one line)."""
    skip = set(skip)
    target = parser.add_argument_group(title) if title else parser
    flags = [f for f in flags_of(cls, names) if f.name not in skip]
    for f in flags:
        help_text = f"{f.help} (default: {(defaults or {}).get(f.name) or _default_text(f)})"
        if f.choices is not None:
            help_text = f"{help_text}; one of: {', '.join(map(str, f.choices()))}"
        help_text = help_text.replace("%", "%%")
        if f.boolean and f.negative:  # a tri-state: the flag, its negative, or neither (the default)
            both = target.add_mutually_exclusive_group() if hasattr(target, "add_mutually_exclusive_group") else target
            both.add_argument(
                f.flag, dest=f.dest, action="store_const", const=True, default=argparse.SUPPRESS, help=help_text
            )
            both.add_argument(
                f.negative,
                dest=f.dest,
                action="store_const",
                const=False,
                default=argparse.SUPPRESS,
                help="the opposite",
            )
        elif f.boolean:
            target.add_argument(
                f.flag, dest=f.dest, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=help_text
            )
        else:
            target.add_argument(
                f.flag, dest=f.dest, default=argparse.SUPPRESS, metavar=f.metavar or _metavar(f), help=help_text
            )
    return flags


def given_values(
    namespace: Any, cls: type, *, skip: Iterable[str] = (), names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The typed values of the flags of ``cls`` present in ``namespace`` (a dict or an argparse Namespace), by field."""
    ns = namespace if isinstance(namespace, dict) else vars(namespace)
    skip = set(skip)
    out = {}
    for f in flags_of(cls, names):
        if f.dest in ns and f.name not in skip:
            value = ns[f.dest]
            out[f.name] = value if (f.boolean or not isinstance(value, str)) else f.read(value)
    return out


def to_argv(obj: Any, *, skip: Iterable[str] = (), names: Mapping[str, str] | None = None) -> list[str]:
    """Flags that reproduce ``obj``: every field that differs from its default (or is marked ``always``)."""
    skip = set(skip)
    argv: list[str] = []
    for f in flags_of(type(obj), names):
        if f.name in skip:
            continue
        value = getattr(obj, f.name)
        if value is None:
            if f.default is not None and f.default is not dataclasses.MISSING:
                argv += f.write(None)  # "none" overrides a default that is not None
        elif f.always or f.default is dataclasses.MISSING or value != f.default:
            argv += f.write(value)
    return argv
