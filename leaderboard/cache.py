"""Rendered ranking pages kept in Redis, invalidated by the write path.

Every public read page (the model-run ranking, problem pages, run pages, the comparison, user pages, their CSV/JSON
exports and the read API) is stored whole in the ``pages`` cache (Django's RedisCache on REDIS_URL) under a key made
of the request's full URL (scheme, host, path, query string) and the **rankings generation**: a number in Redis that
``rankings_changed()`` increments. The services call it whenever something a ranking shows changes: a result is
recorded (or an attempt goes back to the queue), a submission starts running or is cancelled, a run's score is
refreshed, a model run is created, problems are synced. A new generation makes every stored page unreachable at
once, so a reader never gets a verdict older than the last write; the TTL (``ARENA_PAGE_CACHE_TTL_S``, 10 minutes)
only frees the memory of old generations.

The generation is incremented twice: at once, and again when the writing transaction commits. The second increment
is the one correctness rests on: a reader that rendered the page between the first increment and the commit (and so
saw the old rows) stored it under a generation nobody asks for any more. The first one makes the write visible at
once to readers inside the same transaction (tests run that way).

Who gets what (``cached_page``):

- HTML pages show the signed-in user's name in the header (and flash messages), so they are stored and served only
  for anonymous readers with no pending messages. Signed-in users get them rendered.
- Exports (CSV/JSON) and API answers do not differ by user: stored and served for everyone, except requests with
  an ``Authorization`` header (a bad token must still get its 401), which bypass the cache.
- Only complete 200 answers that set no cookie are stored.
- Pages that show private data to their owner (a submission's status page with its source and logs, "My
  submissions", account and token pages, contribution pages) are never decorated: never cached.

If Redis cannot be reached the pages are rendered as if there were no cache. The cache stores bytes only (no
pickle): see ``PageSerializer``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
import zlib
from typing import Any, Callable

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

PAGE_CACHE = "pages"
GENERATION_KEY = "rankings-generation"
HEADER = "X-Arena-Cache"  # "hit" or "miss" on every answer of a cached view (the load test counts them)
_SEPARATOR = b"\n\n"


class PageSerializer:
    """Values of the pages cache: integers as they are (so Redis can INCR the generation), bytes compressed.
    Nothing is pickled, so whoever can write to Redis cannot make the web server run code by planting a value."""

    def dumps(self, obj: Any) -> int | bytes:
        if type(obj) is int:
            return obj
        if not isinstance(obj, bytes):
            raise TypeError(f"the pages cache stores int or bytes, not {type(obj).__name__}")
        return zlib.compress(obj, 1)

    def loads(self, data: bytes) -> int | bytes:
        try:
            return int(data)
        except ValueError:
            return zlib.decompress(data)


def _cache():
    return caches[PAGE_CACHE]


def generation() -> int | None:
    """The current rankings generation; None when Redis cannot be reached (then nothing is cached)."""
    cache = _cache()
    try:
        value = cache.get(GENERATION_KEY)
        if value is None:
            # First use, or Redis lost the key (restart, eviction): start a sequence no earlier page can be under.
            cache.add(GENERATION_KEY, time.time_ns(), timeout=None)
            value = cache.get(GENERATION_KEY)
    except RedisError:
        logger.warning("pages cache: Redis unreachable; serving pages uncached", exc_info=True)
        return None
    return value if isinstance(value, int) else None


def _bump() -> None:
    cache = _cache()
    try:
        try:
            cache.incr(GENERATION_KEY)
        except ValueError:  # the key is gone: a fresh start is as good as an increment
            cache.add(GENERATION_KEY, time.time_ns(), timeout=None)
    except RedisError:
        # Pages stored under the current generation may now be stale until the TTL (a Redis that lost this write
        # has usually lost the pages too). Logged loudly: this is the one way a reader could see an old verdict.
        logger.error("pages cache: could not bump the rankings generation; cached pages may be stale for up to "
                     "%s s", settings.ARENA_PAGE_CACHE_TTL_S, exc_info=True)


def rankings_changed() -> None:
    """Something a ranking page shows changed: every cached page is out of date. Called by the services (inside
    their transaction, or outside one); bumps the generation now and again once the transaction commits."""
    _bump()
    transaction.on_commit(_bump)


def _key(request: HttpRequest, gen: int) -> str:
    url = request.build_absolute_uri()  # scheme + host + path + the whole query string
    return f"page:{gen}:{hashlib.sha256(url.encode('utf-8', 'surrogateescape')).hexdigest()}"


def _personal(request: HttpRequest) -> bool:
    """True when an HTML page would differ for this reader: signed in, or a flash message is waiting."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return True
    if "messages" in request.COOKIES:
        return True
    session = getattr(request, "session", None)
    return bool(session is not None and session.session_key and "_messages" in session)


def _pack(response: HttpResponse, public: bool) -> bytes:
    headers = {k: v for k, v in response.items() if k.lower() not in ("content-length", "set-cookie", HEADER.lower())}
    meta = {"public": public, "headers": headers}
    return json.dumps(meta, separators=(",", ":")).encode() + _SEPARATOR + response.content


def _unpack(data: bytes) -> tuple[bool, HttpResponse]:
    meta, _, body = data.partition(_SEPARATOR)
    meta = json.loads(meta)
    response = HttpResponse(body, headers=meta["headers"])
    response[HEADER] = "hit"
    return bool(meta["public"]), response


def _store(key: str, request: HttpRequest, response: HttpResponse) -> None:
    if response.status_code != 200 or response.streaming or response.cookies:
        return
    public = not response.get("Content-Type", "").startswith("text/html")
    if not public and _personal(request):
        return
    try:
        _cache().set(key, _pack(response, public), timeout=settings.ARENA_PAGE_CACHE_TTL_S)
    except RedisError:
        logger.warning("pages cache: could not store %s", request.path, exc_info=True)


def cached_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Serves a public read view from the pages cache and stores what it renders (rules in the module's doc).
    For function views, and for class-based views through ``method_decorator(cached_page, name="dispatch")``."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if (request.method not in ("GET", "HEAD") or "HTTP_AUTHORIZATION" in request.META
                or not settings.ARENA_PAGE_CACHE):
            return view(request, *args, **kwargs)
        gen = generation()
        if gen is None:
            return view(request, *args, **kwargs)
        key = _key(request, gen)
        try:
            data = _cache().get(key)
        except RedisError:
            data = None
        if isinstance(data, bytes):
            public, cached = _unpack(data)
            if public or not _personal(request):
                return cached
        response = view(request, *args, **kwargs)
        response[HEADER] = "miss"
        if callable(getattr(response, "render", None)) and not getattr(response, "is_rendered", True):
            response.add_post_render_callback(lambda r: _store(key, request, r))
        else:
            _store(key, request, response)
        return response

    return wrapper
