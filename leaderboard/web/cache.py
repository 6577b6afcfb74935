"""Rendered ranking pages kept in Redis, invalidated by the write path.

Every public read page (the model-run ranking, problem pages, run pages, the comparison, user pages, the home page,
their CSV/JSON exports and the read API) is stored whole in the ``pages`` cache (Django's RedisCache on REDIS_URL)
under a key made of the request's full URL (scheme, host, path, query string) and **rankings generations**: numbers in
Redis that ``rankings_changed()`` increments. A page's key holds the global generation and the generations of its
scopes, the parts of the data it shows:

| page | scopes |
|---|---|
| the overall ranking (``/runs/``, its exports, ``/api/rankings/model-runs/``) | ``runs`` |
| a model run's page, its exports, ``/api/model-runs/<id>/[attempts/]`` | ``run:<id>`` |
| the comparison (page and API) | ``run-list``, ``run:<a>``, ``run:<b>`` |
| a problem's page, its export, ``/api/problems/<id>/ranking|results/`` | ``problem:<id>`` |
| a user's page and ``/api/users/<name>/`` | ``user:<name>`` |
| the home page | ``catalogue``, bumped with every ``problem:<id>`` (each active problem's leader) |
| ``/api/problems/[<id>/]`` | the global generation only |

The services name what they change (``leaderboard.rankings.generations``, which also says who bumps what). A bumped
generation makes every page under it unreachable at once, so a reader never gets a verdict older than the last write;
the TTL (``ARENA_PAGE_CACHE_TTL_S``, 10 minutes) only frees the memory of old generations. **A page's scopes must
cover everything it shows that a service changes**: a page that starts showing another run's or the overall
ranking's figures needs those scopes too (or none: ``@cached_page`` alone keys on the global generation, which is
bumped only by the rare global writes, so such a page must show nothing that results change).

Who gets what (``cached_page``):

- HTML pages show the signed-in user's name in the header (and flash messages), so they are stored and served only
  for anonymous readers with no pending messages. Signed-in users get them rendered.
- Exports (CSV/JSON) and API answers do not differ by user: stored and served for everyone, except requests with
  an ``Authorization`` header (a bad token must still get its 401), which bypass the cache.
- Only complete 200 answers that set no cookie and do not say ``Cache-Control: no-store`` are stored; a streamed
  export once its last chunk went out.
- Pages that show private data to their owner (a submission's status page with its source and logs, "My
  submissions", account and token pages, contribution pages) are never decorated: never cached.

A page is stored with its body gzipped, and a hit goes out as stored (``Content-Encoding: gzip``) to a reader whose
``Accept-Encoding`` names gzip (every browser): the hit inflates nothing. Other readers get the body inflated, as it was
rendered; every answer of a cached view says ``Vary: Accept-Encoding``. Stored pages are public pages with no secret
in them (no CSRF token, nothing of a signed-in reader), so compressing them gives nothing away.

A hit is one round trip: a Lua script reads the page's generations and then the page under the key they make
(``KeptClientRedisCache.generations_and_page``); a generation Redis lost, or a page of more than four generations, takes
a second. If Redis cannot be reached the pages are rendered as if there were no cache. The cache stores bytes only (no
pickle): see ``PageSerializer``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import time
import zlib
from typing import Any, Callable, Iterable, Iterator

from django.conf import settings
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from leaderboard.rankings.generations import (
    CATALOGUE,
    RUN_LIST,
    RUNS,
    generation_keys,
    generations,
    problem_scope,
    run_scope,
    user_scope,
)
from leaderboard.rankings.generations import pages_cache as _cache

logger = logging.getLogger(__name__)

HEADER = "X-Arena-Cache"  # "hit" or "miss" on every answer of a cached view (the load test counts them)
_SEPARATOR = b"\n\n"
# A stored page whose body is kept gzipped (``_pack``): sent as it is to a reader that accepts gzip, so a hit
# decompresses nothing (inflating the home page cost a hit 0.3-0.7 ms, more than the rest of it).
_GZIPPED = b"gzipped-page\n"
_ACCEPTS_GZIP = re.compile(r"\bgzip\b")  # as Django's GZipMiddleware reads Accept-Encoding


class PageSerializer:
    """Values of the pages cache: integers as they are (so Redis can INCR the generation), a page whose body is
    gzipped already as it is, other bytes compressed. Nothing is pickled, so whoever can write to Redis cannot make
    the web server run code by planting a value."""

    def dumps(self, obj: Any) -> int | bytes:
        if type(obj) is int:
            return obj
        if not isinstance(obj, bytes):
            raise TypeError(f"the pages cache stores int or bytes, not {type(obj).__name__}")
        return obj if obj.startswith(_GZIPPED) else zlib.compress(obj, 1)

    def loads(self, data: bytes) -> int | bytes:
        try:
            return int(data)
        except ValueError:
            return data if data.startswith(_GZIPPED) else zlib.decompress(data)


class _ClientKept(RedisCacheClient):
    """Django's Redis client, which builds a new ``redis.Redis`` (and its table of about 160 reply parsers) for every
    command, keeping one per connection pool instead: a cached page's two reads spent a quarter of their CPU building
    them. A ``redis.Redis`` over a pool is safe to share between threads, and its pool starts afresh in a forked
    process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            # (the pool of this index: Django's own method picks again, at random among replicas, for reads)
            if index not in self._pools:
                self._pools[index] = self._pool_class.from_url(self._servers[index], **self._pool_options)
            client = self._clients[index] = self._client(connection_pool=self._pools[index])
        return client


# A cached page's generations and the page stored under them, read in one round trip: the generations (KEYS), then
# the page's key written from them as ``_key`` writes it (ARGV: the key before and after the generations' stamp).
# {false} when a generation is missing (the caller starts it), {gens...} alone when there are too many generations
# for the stamp to be their plain list (``_key`` digests them, which Lua cannot).
_READ_PAGE_LUA = """
local gens = redis.call('MGET', unpack(KEYS))
for i = 1, #gens do
  if not gens[i] then return {false} end
end
if #gens > tonumber(ARGV[3]) then return gens end
gens[#gens + 1] = redis.call('GET', ARGV[1] .. table.concat(gens, '.') .. ARGV[2])
return gens
"""


class KeptClientRedisCache(RedisCache):
    """Django's ``RedisCache`` with one Redis client per server kept for the process (``_ClientKept``): the pages
    cache's backend (settings.CACHES)."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _ClientKept
        self._scripts: dict[int, Any] = {}

    def generations_and_page(
        self, generation_keys: list[str], page_key: tuple[str, str], most: int
    ) -> tuple[list[int] | None, Any]:
        """The values of ``generation_keys`` (ints) and the value stored under ``page_key[0] + stamp + page_key[1]``
        (``stamp``: the generations joined by dots), in one round trip: (None, None) when a generation is missing (or
        the cache's key function hides the page's key), (generations, None) when the page is not there or there are
        more than ``most`` generations (not read). Keys are given as ``get`` takes them (this cache's prefix and version
        are added here). The page's key is not among the script's declared keys: one Redis server, not a cluster."""
        client = self._cache.get_client()
        script = self._scripts.get(id(client))
        if script is None:
            script = self._scripts[id(client)] = client.register_script(_READ_PAGE_LUA)
        before, marked, after = self.make_key(f"{page_key[0]}\x00{page_key[1]}").partition("\x00")
        if not marked:  # a key function that does not keep the key as it is: the page's key cannot be written here
            return None, None
        found = script(keys=[self.make_key(key) for key in generation_keys], args=[before, after, most])
        if not found or found[0] is None:
            return None, None
        gens = [int(value) for value in found[: len(generation_keys)]]
        page = found[len(generation_keys)] if len(found) > len(generation_keys) else None
        return gens, (None if page is None else self._cache._serializer.loads(page))


# --- the decorator --------------------------------------------------------------------------------------


PLAIN_STAMP_MOST = 4  # generations a page's key lists as they are; more are keyed by their digest


def _url_digest(request: HttpRequest) -> str:
    url = request.build_absolute_uri()  # scheme + host + path + the whole query string
    return hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()


def _key(request: HttpRequest, gens: list[int], digest: str | None = None) -> str:
    """The page's key under these generations (``digest``: ``_url_digest(request)``, when known). The read of
    ``_generations_and_page`` writes the same key in Redis: the two change together."""
    stamp = ".".join(map(str, gens))
    if len(gens) > PLAIN_STAMP_MOST:  # a page of many scopes is keyed by their digest
        stamp = "g" + hashlib.sha256(stamp.encode()).hexdigest()[:32]
    return f"page:{stamp}:{digest or _url_digest(request)}"


def _generations_and_page(request: HttpRequest, names: list[str]) -> tuple[list[int] | None, str, Any]:
    """The generations of ``names`` (the global one first; None: Redis cannot be reached, nothing is cached), the
    page's key under them and what is stored there (None: nothing, or Redis cannot say). A hit is one round trip
    (``KeptClientRedisCache.generations_and_page``); a cache without it, a generation missing, or a key of many
    generations take two, as ``generations`` and ``get`` do."""
    digest = _url_digest(request)
    cache = _cache()
    read = getattr(cache, "generations_and_page", None)
    if read is not None:
        try:
            gens, data = read(generation_keys(names), ("page:", f":{digest}"), PLAIN_STAMP_MOST)
        except (RedisConnectionError, RedisTimeoutError):  # not there: not asked twice
            logger.warning("pages cache: Redis unreachable; serving pages uncached", exc_info=True)
            return None, "", None
        except RedisError:  # (a Redis that runs no scripts, say: the two-step read below)
            gens = None
        if gens is not None:
            key = _key(request, gens, digest)
            if data is None and len(gens) > PLAIN_STAMP_MOST:
                data = _get(key)
            return gens, key, data
    gens = generations(names)
    if gens is None:
        return None, "", None
    key = _key(request, gens, digest)
    return gens, key, _get(key)


def _get(key: str) -> Any:
    try:
        return _cache().get(key)
    except RedisError:
        return None


def _personal(request: HttpRequest) -> bool:
    """True when an HTML page would differ for this reader: signed in, or a flash message is waiting."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return True
    if "messages" in request.COOKIES:
        return True
    session = getattr(request, "session", None)
    return bool(session is not None and session.session_key and "_messages" in session)


def _pack(response: HttpResponse, public: bool, body: bytes | None = None) -> bytes:
    """The page as stored: its headers and whether anyone may get it, then its body gzipped (level 1; no name or
    time in the gzip header, so the same body is always the same bytes), or as it is if that is no longer."""
    headers = {k: v for k, v in response.items() if k.lower() not in ("content-length", "set-cookie", HEADER.lower())}
    meta = {"public": public, "headers": headers}
    body = response.content if body is None else body
    gzip = zlib.compressobj(1, zlib.DEFLATED, 31)
    gzipped = gzip.compress(body) + gzip.flush()
    head = json.dumps(meta, separators=(",", ":")).encode() + _SEPARATOR
    if len(gzipped) >= len(body):  # a body too small to gain anything (gzip's header and trailer are 18 bytes)
        return head + body
    return _GZIPPED + head + gzipped


def _unpack(data: bytes, request: HttpRequest) -> tuple[bool, HttpResponse]:
    """A stored page as the answer to ``request``: its body gzipped (``Content-Encoding: gzip``) when the request
    accepts gzip, else as it was rendered."""
    gzipped = data.startswith(_GZIPPED)
    head, _, body = data[len(_GZIPPED) :].partition(_SEPARATOR) if gzipped else data.partition(_SEPARATOR)
    meta = json.loads(head)
    as_is = not gzipped or _ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", ""))
    response = HttpResponse(body if as_is else zlib.decompress(body, 31), headers=meta["headers"])
    if gzipped and as_is:
        response["Content-Encoding"] = "gzip"
    response[HEADER] = "hit"
    return bool(meta["public"]), response


RENDER_LOCK_S = 10  # how long a render may hold a page's lock (it is released as soon as the page is stored)
WAIT_S = 2.0  # how long a request waits for another's render before rendering the page itself
_POLL_S = 0.02


def _lock(key: str) -> bool:
    """True if this request is to render the page (it took the page's lock, or Redis cannot say)."""
    try:
        return _cache().add(f"lock:{key}", 1, timeout=RENDER_LOCK_S)
    except RedisError:
        return True


def _unlock(key: str) -> None:
    try:
        _cache().delete(f"lock:{key}")
    except RedisError:
        pass


def _wait_for(key: str, request: HttpRequest) -> HttpResponse | None:
    """The page another request is rendering, once it is stored; None if it is not there within WAIT_S, or is a
    page this reader may not get (then the caller renders it)."""
    deadline = time.monotonic() + WAIT_S
    cache = _cache()
    while time.monotonic() < deadline:
        time.sleep(_POLL_S)
        try:
            data = cache.get(key)
            if data is None and not cache.has_key(f"lock:{key}"):
                return None  # the render ended without storing (an error, a page not to store)
        except RedisError:
            return None
        if isinstance(data, bytes):
            public, cached = _unpack(data, request)
            return cached if public or not _personal(request) else None
    return None


def _store(key: str, request: HttpRequest, response: HttpResponse) -> None:
    try:
        # (a page that marks itself no-store, e.g. a comparison still being computed, is not kept either)
        if response.status_code != 200 or response.cookies or "no-store" in response.get("Cache-Control", ""):
            return
        public = not response.get("Content-Type", "").startswith("text/html")
        if not public and _personal(request):
            return
        if response.streaming:  # an export: stored once the whole of it went out (not at all if the reader left)
            response.streaming_content = _kept_when_sent(
                response.streaming_content, lambda body: _put(key, request, _pack(response, public, body))
            )
            return
        _put(key, request, _pack(response, public))
    finally:
        _unlock(key)


def _put(key: str, request: HttpRequest, packed: bytes) -> None:
    try:
        _cache().set(key, packed, timeout=settings.ARENA_PAGE_CACHE_TTL_S)
    except RedisError:
        logger.warning("pages cache: could not store %s", request.path, exc_info=True)


def _kept_when_sent(chunks: Iterable[bytes], keep: Callable[[bytes], None]) -> Iterator[bytes]:
    """The chunks of a streamed answer as they go out, handed to ``keep`` whole after the last one."""
    sent = []
    for chunk in chunks:
        sent.append(chunk)
        yield chunk
    keep(b"".join(sent))


def canonical_int(value: str | None) -> int | None:
    """The integer a query parameter names, only if it is written the one plain way (``12``, not ``012`` or
    ``12.0``): a page whose scope cannot be named for sure is not cached."""
    return int(value) if value and value.isascii() and value.isdigit() and str(int(value)) == value else None


Scopes = Callable[..., "list[str] | None"]


def cached_page(view: Callable[..., HttpResponse] | None = None, *, scopes: Scopes | None = None):
    """Serves a public read view from the pages cache and stores what it renders (rules in the module's doc).

    ``scopes(request, **view_kwargs)`` names what the page shows beyond what only the global generation covers
    (problem metadata, run metadata, user names): ``[problem_scope(problem_id)]`` for a problem page, and so on. It
    must cover **everything** the page shows that a service changes, or the page goes stale; None means "do not
    cache this request". Without ``scopes`` only the global generation keys the page.

    ``@cached_page`` or ``@cached_page(scopes=...)`` on function views; on class-based views
    ``method_decorator(cached_page(scopes=...), name="dispatch")``."""
    if view is None:
        return functools.partial(cached_page, scopes=scopes)

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if (
            request.method not in ("GET", "HEAD")
            or "HTTP_AUTHORIZATION" in request.META
            or not settings.ARENA_PAGE_CACHE
        ):
            return view(request, *args, **kwargs)
        names = scopes(request, **kwargs) if scopes is not None else []
        if names is None:
            return view(request, *args, **kwargs)
        gens, key, data = _generations_and_page(request, names)
        if gens is None:
            return view(request, *args, **kwargs)
        if isinstance(data, bytes):
            public, cached = _unpack(data, request)
            if public or not _personal(request):
                return cached
        elif data is None and not _lock(key):
            # Another request is rendering this very page for these generations: wait for its copy rather than
            # render it again (after a write, every reader of a popular page misses at once).
            cached = _wait_for(key, request)
            if cached is not None:
                return cached
        try:
            response = view(request, *args, **kwargs)
        except BaseException:  # a 404 and the like: let the next reader render it without waiting
            _unlock(key)
            raise
        response[HEADER] = "miss"
        patch_vary_headers(response, ("Accept-Encoding",))  # a hit is gzipped for readers that accept it
        if callable(getattr(response, "render", None)) and not getattr(response, "is_rendered", True):
            response.add_post_render_callback(lambda r: _store(key, request, r))
        else:
            _store(key, request, response)
        return response

    return wrapper


# Scopes of the pages (views and API views share them).


def problem_page_scopes(request: HttpRequest, problem_id: str, **_) -> list[str]:
    return [problem_scope(problem_id)]


def run_page_scopes(request: HttpRequest, run_id: int, **_) -> list[str]:
    return [run_scope(run_id)]


def user_page_scopes(request: HttpRequest, username: str, **_) -> list[str]:
    return [user_scope(username)]


def catalogue_scopes(request: HttpRequest, **_) -> list[str]:
    """The home page shows each active problem's leader: ``CATALOGUE``, which every problem's scope bumps (which
    problems are active changes only with the global generation: ``problems_sync``)."""
    return [CATALOGUE]


def ranking_scopes(request: HttpRequest, **_) -> list[str]:
    return [RUNS]


def comparison_scopes(request: HttpRequest, **_) -> list[str] | None:
    """The two runs (from ?a= and ?b=) and the list of every run the form offers."""
    scopes = [RUN_LIST]
    for name in ("a", "b"):
        value = request.GET.get(name)
        if value is None or value == "":
            continue
        number = canonical_int(value)
        if number is None:
            return None
        scopes.append(run_scope(number))
    return scopes
