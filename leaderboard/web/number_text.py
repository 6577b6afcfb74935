"""Numbers and times written as Django's filters write them, without the filters' general machinery: a problem's
ranking writes two ``floatformat``s and a ``date`` a row, and those filters were a tenth of the page's CPU.

``fixed(value, places)`` is ``{{ value|floatformat:places }}`` and ``minute_text(value)`` is
``{{ value|date:"Y-m-d H:i" }}`` (of a value already in the page's time zone), byte for byte
(``tests/leaderboard/web/test_number_text.py`` holds them to the filters); anything outside their fast path goes
through the filter itself.
"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.template.defaultfilters import date as date_filter
from django.template.defaultfilters import floatformat
from django.utils.formats import get_format

_QUANTA = {places: Decimal(1).scaleb(-places) for places in range(1, 7)}


def fixed(value: Any, places: int) -> str:
    """``floatformat(value, places)`` for ``places`` 1..6: a float below 1,000 in size (no thousands to group) is
    rounded half up from its shortest text, as the filter rounds it, and written with the language's decimal
    separator; a negative value that rounds to zero loses its sign, as there (a value of over 200 digits the filter
    writes as it is)."""
    if type(value) is float and places in _QUANTA and math.isfinite(value) and -1000.0 < value < 1000.0:
        exact = Decimal(repr(value))
        _, digits, exponent = exact.as_tuple()
        if len(digits) + abs(int(exponent)) > 200:  # the filter writes such a value as it is
            return str(floatformat(value, places))
        rounded = exact.quantize(_QUANTA[places], ROUND_HALF_UP)
        written = format(rounded, "f")
        if not rounded and written.startswith("-"):
            written = written[1:]
        separator = get_format("DECIMAL_SEPARATOR")
        return written if separator == "." else written.replace(".", separator)
    return str(floatformat(value, places))


def minute_text(value: Any) -> str:
    """``date_filter(value, "Y-m-d H:i")`` of a datetime (the caller converted it to the page's time zone): the year
    in four digits, the rest in two."""
    if isinstance(value, datetime):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}"
    return str(date_filter(value, "Y-m-d H:i"))
