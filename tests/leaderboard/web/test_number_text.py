"""A problem's ranking writes its intervals and times with ``number_text``: the same text as Django's ``floatformat``
and ``date`` filters for every value a row can hold (random floats of every size and sign, halves at the rounding
digit, values that round to zero, and what the fast path leaves to the filters)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from django.template.defaultfilters import date as date_filter
from django.template.defaultfilters import floatformat
from django.utils import translation

from leaderboard.web.number_text import fixed, minute_text

EDGES = [
    0.0,
    -0.0,
    0.0005,
    -0.0005,
    0.0004999,
    1.0005,
    2.675,
    1.2345,
    -1.2345,
    999.9995,
    999.99949,
    -999.9995,
    1000.0,
    123456.789,
    1e-12,
    -1e-12,
    5e-324,
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    3,
    None,
    "2.5",
]


def _values():
    rng = random.Random(20261206)
    for _ in range(3000):
        yield rng.uniform(-2, 2) * 10 ** rng.randint(-6, 4)
    for _ in range(500):  # exactly at a rounding half of the third decimal, as intervals often are
        yield round(rng.uniform(0, 50), 3) + 0.0005
    yield from EDGES


@pytest.mark.parametrize("language", ["en-us", "de"])
@pytest.mark.parametrize("places", [1, 3])
def test_fixed_writes_what_floatformat_writes(language, places):
    with translation.override(language):
        for value in _values():
            assert fixed(value, places) == str(floatformat(value, places)), (value, places, language)


def test_minute_text_writes_what_the_date_filter_writes():
    rng = random.Random(7)
    start = datetime(1999, 1, 1, tzinfo=timezone.utc)
    moments = [start + timedelta(seconds=rng.randrange(10**9)) for _ in range(500)]
    moments += [datetime(9, 3, 4, 5, 6), datetime(2026, 12, 6, 0, 0, 59, 999999, tzinfo=timezone.utc)]
    for moment in moments:
        assert minute_text(moment) == str(date_filter(moment, "Y-m-d H:i"))
    assert minute_text(None) == str(date_filter(None, "Y-m-d H:i")) == ""
