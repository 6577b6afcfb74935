"""PostgreSQL's timestamps parsed by psycopg's compiled loader.

Django reads every ``timestamptz`` through a loader of its own that subclasses psycopg's pure-Python one (to set the
connection's time zone on each value), so each date a page reads is parsed by a regular expression in Python: a page
of 100 runs reads about 300 of them, a tenth of an export's CPU. ``CompiledTzLoader`` parses with psycopg's compiled
loader (installed with ``psycopg[binary]``) and sets the same time zone: the same values, byte for byte on every page
(``tests/portal/test_db_loaders.py`` holds them equal to Django's). Without the compiled loader nothing changes.
"""

from __future__ import annotations

from datetime import tzinfo
from functools import lru_cache
from typing import Any

from django.db.backends.signals import connection_created


def _compiled_parser() -> type | None:
    """psycopg's compiled text loader of ``timestamptz`` (None: psycopg 3's compiled module is not installed)."""
    try:
        from psycopg import adapters, postgres
        from psycopg.pq import Format
    except ImportError:  # psycopg 2, or no PostgreSQL driver
        return None
    loader = adapters.get_loader(postgres.types["timestamptz"].oid, Format.TEXT)
    return loader if loader is not None and loader.__module__.startswith("psycopg_binary") else None


@lru_cache
def timestamptz_loader(tz: tzinfo | None) -> type | None:
    """A loader class of ``timestamptz`` values in ``tz``, as Django's ``register_tzloader`` makes, that parses with
    the compiled loader (None without it)."""
    parser = _compiled_parser()
    if parser is None:
        return None
    from psycopg.adapt import Loader

    class CompiledTzLoader(Loader):
        timezone = tz  # Django's create_cursor compares this with the connection's before reading

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._parse = parser(oid, context).load

        def load(self, data: Any) -> Any:
            return self._parse(data).replace(tzinfo=tz)

    return CompiledTzLoader


def use_compiled_timestamps(sender: Any, connection: Any, **kwargs: Any) -> None:
    """On each new PostgreSQL connection (psycopg 3), ``timestamptz`` is read by ``timestamptz_loader``."""
    if connection.vendor != "postgresql" or not hasattr(connection.connection, "adapters"):
        return
    loader = timestamptz_loader(connection.timezone)
    if loader is not None:
        connection.connection.adapters.register_loader("timestamptz", loader)


def install() -> None:
    connection_created.connect(use_compiled_timestamps, dispatch_uid="portal_compiled_timestamps", weak=False)
