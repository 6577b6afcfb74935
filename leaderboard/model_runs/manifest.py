"""A model run's manifest: its schema, declared once as typed fields, and how a manifest file is read.

:class:`ManifestSerializer` checks every field by its declared type and range (Django REST framework fields that
refuse what is not already of the right JSON/TOML type: ``"3"`` is not an integer, ``true`` is not 1), so one upload
reports every bad field at once; :func:`parse_manifest` turns each error into a sentence that names the file, the
field, what is wrong and what to set. The validated manifest is a frozen :class:`Manifest`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass
from typing import Any

from rest_framework import serializers

from evaluator.contract.profiles import PROFILES
from leaderboard.names import invisible_character
from leaderboard.rankings.metrics import PROTOCOL_MODES, Protocol

MAX_K = 100
MAX_TOKENS = 2**63 - 1  # what the database's column holds
MAX_TURN_BUDGET = 1_000_000
MAX_WALL_TIME_S = 10**9  # about 32 years
SUITE_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
SUITE_VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
PROMPT_PACK_RE = re.compile(r"pp-[0-9a-f]{12}")  # evaluator/prompts.py pack_version


@dataclass(frozen=True)
class Manifest:
    """The validated manifest; ``date`` is ``YYYY-MM-DD``."""

    model: str
    provider: str
    protocol: str
    k: int
    turn_budget: int
    tokens: int
    wall_time_s: float
    hardware: str
    date: str
    open_weights: bool
    notes: str = ""
    precision: str | None = None
    suite: str = "arena"
    prompt_pack: str | None = None  # the prompt pack's version the attempts were generated from (`arena prompts`)
    suite_version: str | None = None  # the suite version the attempts answered; default: its version at upload

    def as_protocol(self) -> Protocol:
        """The :class:`~leaderboard.metrics.Protocol` every score of this run is shown with."""
        mode: Any = self.protocol
        return Protocol(mode, self.k, self.turn_budget, self.tokens, self.wall_time_s)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_FIELD_HINTS: dict[str, str] = {
    "model": '"model": the model\'s name, e.g. "gpt-x-2026-11"',
    "provider": '"provider": who serves or trained it, e.g. "OpenAI"',
    "protocol": f'"protocol": one of {", ".join(repr(m) for m in PROTOCOL_MODES)}',
    "k": '"k": attempts per problem, an integer from 1',
    "turn_budget": '"turn_budget": the agent\'s turns per attempt, 0 for zero-shot',
    "tokens": '"tokens": tokens the whole run spent, an integer',
    "wall_time_s": '"wall_time_s": seconds the whole run took',
    "hardware": f'"hardware": one of {", ".join(PROFILES)}',
    "date": '"date": the run\'s date, "YYYY-MM-DD"',
    "open_weights": '"open_weights": true or false',
    "notes": '"notes": free text',
    "precision": '"precision": e.g. "bf16"',
    "suite": '"suite": the problem suite, "arena" unless you ran an imported one such as "pkb"',
    "prompt_pack": '"prompt_pack": the pack_version of the prompts the model was given, e.g. "pp-1a2b3c4d5e6f" '
    "(`arena prompts` writes it on every line)",
    "suite_version": '"suite_version": the version of the suite the attempts answered, e.g. "2026.12" (default: '
    "the current one)",
}
REQUIRED = (
    "model",
    "provider",
    "protocol",
    "k",
    "turn_budget",
    "tokens",
    "wall_time_s",
    "hardware",
    "date",
    "open_weights",
)
OPTIONAL = ("notes", "precision", "suite", "prompt_pack", "suite_version")


def _type_name(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
        type(None): "null",
    }.get(type(value), type(value).__name__)


# --- the fields: a JSON/TOML value of exactly the declared type, then its range ------------------------------------


class _Typed(serializers.Field):
    """A value of one of ``kinds`` (a bool is never an int here), then :meth:`check`; every message continues
    "the field '<name>' ..." """

    kinds: tuple[type, ...] = ()
    type_label = ""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error_messages.update(required="is missing", null=f"must be {self.type_label}, not null (None)")

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) and bool not in self.kinds or not isinstance(data, self.kinds):
            raise serializers.ValidationError(f"must be {self.type_label}, not {_type_name(data)} ({data!r})")
        return self.check(data)

    def check(self, value: Any) -> Any:
        return value

    def to_representation(self, value: Any) -> Any:
        return value


class _Text(_Typed):
    kinds, type_label = (str,), "a string"

    def __init__(
        self,
        *,
        max_length: int,
        blank: bool = False,
        choices: tuple[str, ...] = (),
        pattern: re.Pattern[str] | None = None,
        pattern_label: str = "",
        **kwargs: Any,
    ) -> None:
        self.max_length, self.blank, self.choices = max_length, blank, choices
        self.pattern, self.pattern_label = pattern, pattern_label
        super().__init__(**kwargs)

    def check(self, value: str) -> str:
        bad = invisible_character(value, allow="\n\t\r" if self.blank else "")
        if bad:
            raise serializers.ValidationError(f"contains {bad}, an invisible or control character; remove it")
        if self.choices and value not in self.choices:
            raise serializers.ValidationError(f"is {value!r}")
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise serializers.ValidationError(f"is {value!r}, not {self.pattern_label}")
        if self.blank:
            if len(value) > self.max_length:
                raise serializers.ValidationError(f"is longer than {self.max_length:,} characters")
            return value
        if not value.strip() or len(value) > self.max_length:
            raise serializers.ValidationError(f"must be 1 to {self.max_length} characters")
        return value.strip()


class _Integer(_Typed):
    kinds, type_label = (int,), "an integer"

    def __init__(self, *, low: int, high: int | None = None, **kwargs: Any) -> None:
        self.low, self.high = low, high
        super().__init__(**kwargs)

    def check(self, value: int) -> int:
        if value < self.low or (self.high is not None and value > self.high):
            raise serializers.ValidationError(
                f"is {value}, outside {self.low}..{self.high if self.high is not None else '∞'}"
            )
        return value


class _Seconds(_Typed):
    kinds, type_label = (int, float), "a number"

    def check(self, value: float) -> float:
        if not math.isfinite(value) or value < 0 or value > MAX_WALL_TIME_S:
            raise serializers.ValidationError(f"is {value!r}, not a number of seconds from 0 to {MAX_WALL_TIME_S:,}")
        return float(value)


class _Boolean(_Typed):
    kinds, type_label = (bool,), "true or false"


class _Hardware(_Typed):
    kinds, type_label = (str,), "a string"

    def check(self, value: str) -> str:
        if value not in PROFILES:
            raise serializers.ValidationError(f"is {value!r}, not a known hardware profile")
        return value


class _Date(_Typed):
    """``YYYY-MM-DD`` as a string, or a TOML date (never a date and time)."""

    kinds, type_label = (str, dt.date), "a string"

    def check(self, value: str | dt.date) -> str:
        if isinstance(value, dt.datetime):
            raise serializers.ValidationError(f"is a date and time ({value.isoformat()}); give the date only")
        if isinstance(value, dt.date):
            return value.isoformat()
        try:
            if not DATE_RE.fullmatch(value):
                raise ValueError
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            raise serializers.ValidationError(f"is {value!r}, not a real date written YYYY-MM-DD") from None


class ManifestSerializer(serializers.Serializer):
    """The manifest's fields, their types and ranges; unknown fields are refused by :func:`parse_manifest`."""

    model = _Text(max_length=200)
    provider = _Text(max_length=200)
    protocol = _Text(max_length=32, choices=PROTOCOL_MODES)
    k = _Integer(low=1, high=MAX_K)
    turn_budget = _Integer(low=0, high=MAX_TURN_BUDGET)
    tokens = _Integer(low=0, high=MAX_TOKENS)
    wall_time_s = _Seconds()
    hardware = _Hardware()
    date = _Date()
    open_weights = _Boolean()
    notes = _Text(max_length=20_000, blank=True, required=False)
    precision = _Text(max_length=32, required=False)
    suite = _Text(
        max_length=64,
        pattern=SUITE_RE,
        required=False,
        pattern_label="a suite name (lower-case letters, digits, '-' and '_')",
    )
    prompt_pack = _Text(
        max_length=15,
        pattern=PROMPT_PACK_RE,
        required=False,
        pattern_label="a prompt pack version such as pp-1a2b3c4d5e6f (`arena prompts`)",
    )
    suite_version = _Text(
        max_length=32,
        pattern=SUITE_VERSION_RE,
        required=False,
        pattern_label="a version such as 2026.12 (letters, digits, '.', '-' and '_')",
    )

    def validate_turn_budget(self, value: int) -> int:
        protocol = self.initial_data.get("protocol")
        if protocol == "zero-shot" and value != 0:
            raise serializers.ValidationError(f"is {value} but the protocol is zero-shot")
        if protocol == "agentic" and value < 1:
            raise serializers.ValidationError("is 0 but the protocol is agentic (an agent has at least one turn)")
        return value


# --- reading a manifest file ---------------------------------------------------------------------------------------


def decode(name: str, data: bytes, problems: list[str]) -> dict[str, Any] | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(f"{name}: not UTF-8 text (byte {exc.start}); save it as UTF-8.")
        return None
    if name.endswith(".json"):

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in items]
            dupes = sorted({k for k in keys if keys.count(k) > 1})
            if dupes:
                raise ValueError(f"the field {dupes[0]!r} appears twice")
            return dict(items)

        def constant(token: str) -> Any:
            raise ValueError(f"{token} is not a JSON number")

        try:
            value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
        except json.JSONDecodeError as exc:
            problems.append(
                f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); fix the syntax."
            )
            return None
        except (ValueError, RecursionError) as exc:
            problems.append(f"{name}: not valid JSON ({exc}); fix it.")
            return None
    else:
        try:
            value = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            problems.append(f"{name}: not valid TOML ({exc}); fix the syntax.")
            return None
    if not isinstance(value, dict):
        problems.append(
            f"{name}: must hold one object of fields (model, provider, protocol, ...), not {_type_name(value)}."
        )
        return None
    return value


def parse_manifest(name: str, data: bytes, problems: list[str]) -> Manifest | None:
    """Checks every field, appending one problem per bad field; returns the manifest when all are good."""
    raw = decode(name, data, problems)
    if raw is None:
        return None
    before = len(problems)
    unknown = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        problems.append(
            f"{name}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"the fields are {', '.join(REQUIRED + OPTIONAL)}."
        )
    fields = ManifestSerializer(data=raw)
    if not fields.is_valid():
        for key, errors in fields.errors.items():
            for why in errors:
                problems.append(f"{name}: the field '{key}' {why}; set {_FIELD_HINTS[key]}.")
    if len(problems) > before:
        return None
    return Manifest(**fields.validated_data)
