"""What an export streams: a table's rows written as CSV or JSON a chunk at a time, and the response that carries
them. Cells are written as data (every digit of a float) and text a spreadsheet would read as a formula is kept as
text."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterable, Iterator

from django.http import StreamingHttpResponse


class ExportResponse(StreamingHttpResponse):
    """A streamed export. ``content`` reads the rest of the stream whole, for a caller that wants the file at once
    (a test, a script); a server sends it chunk by chunk."""

    @property
    def content(self) -> bytes:  # type: ignore[override]
        return b"".join(self.streaming_content)

    @property
    def text(self) -> str:  # type: ignore[override]
        return self.content.decode(self.charset or "utf-8")


class KeptRecord(dict):
    """A row's exported record that keeps the text it was written as (``written``: by format, and for CSV by the
    fields), for a record kept and written again (``Table``'s memo of records, ``rankings/memo.py``)."""

    __slots__ = ("written",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.written: dict[Any, str] = {}


def json_lines(head: dict[str, Any], records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """``{**head, "rows": [...records]}`` written as ``json.dumps(..., indent=1, default=str)`` writes it, a row at
    a time."""
    opening = json.dumps({**head, "rows": []}, indent=1, default=str)
    assert opening.endswith('"rows": []\n}')
    yield opening[: -len("[]\n}")] + "["
    separator = "\n"
    for record in records:
        # json.dumps(record, indent=1, default=str), each line indented by two spaces (no line of it is blank)
        if type(record) is KeptRecord:
            text = record.written.get("json")
            if text is None:
                text = record.written["json"] = indented_json(record, "\n  ")
        else:
            text = indented_json(record, "\n  ")
        yield separator + "  " + text
        separator = ",\n"
    yield "]\n}" if separator == "\n" else "\n ]\n}"


_scalar = json.JSONEncoder(default=str).encode  # the C encoder: no indent
_string = json.encoder.encode_basestring_ascii  # how json writes a string (ensure_ascii)
_INFINITIES = (float("inf"), float("-inf"))
# A key of a record as written at an indentation ("\n  ": a row's), by indentation: the same few dozen keys start every
# row's lines, and escaping each anew was about a tenth of a JSON export whose rows were all built afresh.
_KEY_TEXT: dict[str, dict[Any, str]] = {}


def indented_json(value: Any, newline: str = "\n") -> str:
    """``json.dumps(value, indent=1, default=str)`` with every line after the first starting with ``newline``'s
    indentation: the same text, but each scalar written by the C encoder (``indent`` makes ``json`` write every value
    in Python, about half of an export's CPU)."""
    kind = type(value)
    if kind is dict or kind is KeptRecord:  # (a kept record is a dict, written as one)
        if not value:
            return "{}"
        inner = newline + " "
        keys = _KEY_TEXT.get(inner)
        if keys is None:
            keys = _KEY_TEXT[inner] = {}
        parts = []
        for key, item in value.items():
            opening = keys.get(key)
            if opening is None:
                if type(key) is not str:
                    return json.dumps(value, indent=1, default=str).replace("\n", newline)
                opening = f"{inner}{_string(key)}: "
                if len(keys) < 4096:  # (the keys of the site's records: a few hundred at most)
                    keys[key] = opening
            kind = type(item)  # the usual values written here, without a call each
            if kind is str:
                written = _string(item)
            elif item is None:
                written = "null"
            elif kind is int:
                written = int.__repr__(item)
            elif kind is float and item == item and item not in _INFINITIES:
                written = float.__repr__(item)
            else:
                written = indented_json(item, inner)
            parts.append(opening + written)
        return "{" + ",".join(parts) + newline + "}"
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = newline + " "
        items = []
        for item in value:
            kind = type(item)  # as for a dict's values: a run's intervals are pairs of floats, ten a row
            if kind is float and item == item and item not in _INFINITIES:
                written = float.__repr__(item)
            elif kind is str:
                written = _string(item)
            elif item is None:
                written = "null"
            elif kind is int:
                written = int.__repr__(item)
            else:
                written = indented_json(item, inner)
            items.append(inner + written)
        return "[" + ",".join(items) + newline + "]"
    if kind is str:
        return _string(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return float.__repr__(value) if value == value and value not in _INFINITIES else _scalar(value)
    if isinstance(value, (dict, list, tuple)):  # subclasses: as json writes them
        return json.dumps(value, indent=1, default=str).replace("\n", newline)
    return _scalar(value)


def _csv_row(fields: list[str], record: dict[str, Any]) -> list[Any]:
    """The cells of ``record`` in the order of ``fields``, as ``csv.DictWriter`` (extras ignored, a missing field
    empty) writes them, each converted by ``csv_cell``: only the cells written are converted, and no dict is built.
    A number or None is handed to the writer as it is, which writes it as ``csv_cell`` would (``str`` of a float is
    its ``repr``; None is empty): a call per cell was a tenth of an export whose rows were all built afresh."""
    cells = [record.get(name, "") for name in fields]
    for i, value in enumerate(cells):
        kind = type(value)
        if kind is str:
            if value.startswith(FORMULA_STARTS):
                cells[i] = "'" + value
        elif not (kind is float or kind is int or kind is bool or value is None):
            cells[i] = csv_cell(value)
    return cells


def csv_lines(fields: list[str], records: Iterable[dict[str, Any]]) -> Iterator[str]:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fields)  # the header, as DictWriter.writeheader writes it
    key = ("csv", tuple(fields))
    line = io.StringIO()  # a kept record's line, written apart to be kept with it
    line_writer = csv.writer(line, lineterminator="\n")
    for i, record in enumerate(records):
        if type(record) is KeptRecord:
            text = record.written.get(key)
            if text is None:
                line_writer.writerow(_csv_row(fields, record))
                text = record.written[key] = line.getvalue()
                line.seek(0)
                line.truncate()
            out.write(text)
        else:
            writer.writerow(_csv_row(fields, record))
        if i % 100 == 99:  # a chunk every hundred rows: few writes, little held
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


# A text cell a spreadsheet would read as a formula (=, +, -, @) or whose leading tab or carriage return hides one:
# written with a leading apostrophe, so a model's or user's name like =HYPERLINK(...) stays text (OWASP's rule).
# Numbers are written as numbers; only text written by people gets this.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


_PLAIN_NUMBER = {float: True, int: True, type(None): True}  # (exact types: a bool is written true/false)


def _number_json(value: float | int | None) -> str:
    """A number or None as ``json.dumps`` writes it (NaN and the infinities as it writes them too)."""
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    if value != value:
        return "NaN"
    if value in _INFINITIES:
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def csv_cell(value: Any) -> Any:
    kind = type(value)  # the common cases first, by exact type (an export writes thousands of cells)
    if kind is float:
        return repr(value)
    if kind is str:
        return "'" + value if value.startswith(FORMULA_STARTS) else value
    if value is None:
        return ""
    if kind is int or kind is bool:
        return value
    if kind is list and len(value) == 2 and all(_PLAIN_NUMBER.get(type(v)) for v in value):
        # an interval [low, high] (five a run's row): as json.dumps writes it, without building an encoder
        low, high = value
        return f"[{_number_json(low)}, {_number_json(high)}]"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float):
        return repr(value)  # every digit: the export is data, not a rounded display
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value
