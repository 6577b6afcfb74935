"""Timestamps read from PostgreSQL through psycopg's compiled loader are the values Django's own loader gives: the
same dates and times on every page and export."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection

from portal import db_loaders

pytestmark = pytest.mark.django_db

LITERALS = (
    "2026-12-06 01:02:03.456789+00",
    "2026-12-06 01:02:03+05:30",
    "1999-02-28 23:59:59.999999-08",
    "2024-02-29 12:00:00+00",
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
)


def _read(sql: str) -> list[datetime]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return list(cursor.fetchone())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's loaders")
def test_timestamps_read_through_the_compiled_loader_equal_djangos_in_value_and_zone():
    if db_loaders.timestamptz_loader(connection.timezone) is None:
        pytest.skip("psycopg's compiled module is not installed: Django's loader reads them")
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(1184, 0)
    assert loader is db_loaders.timestamptz_loader(connection.timezone), "new connections use it"
    sql = "SELECT " + ", ".join(f"'{text}'::timestamptz" for text in LITERALS) + ", now(), NULL::timestamptz"
    ours = _read(sql)
    from django.db.backends.postgresql.psycopg_any import register_tzloader

    register_tzloader(connection.timezone, connection.connection)  # Django's own, as it registers it
    try:
        theirs = _read(sql)
    finally:
        db_loaders.use_compiled_timestamps(None, connection)
    assert ours[-1] is None and theirs[-1] is None
    for a, b in zip(ours[:-2], theirs[:-2]):
        assert a == b and a.tzinfo is b.tzinfo and a.isoformat() == b.isoformat() and str(a) == str(b)
    assert abs(ours[-2] - theirs[-2]) < timedelta(minutes=1) and ours[-2].tzinfo is theirs[-2].tzinfo
    assert ours[0] == datetime(2026, 12, 6, 1, 2, 3, 456789, tzinfo=timezone.utc)
