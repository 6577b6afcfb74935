"""Rankings generations: numbers in Redis that every write a ranking shows increments, and that the page cache
(``leaderboard.web.cache``) puts in each cached page's key, so a page rendered before a write is never served after it.

The services name what they change (``rankings_changed(*scopes)``): a submission's state or result bumps its problem,
its author and (for a model run's attempt) its run and ``runs`` (``submission_changed``); a run's score bumps ``runs``,
the run and its owner; a new run ``run-list`` too; ``problems_sync``, admin edits and ``seed_demo`` bump the global
generation, which every page's key holds.

Each generation is incremented twice: at once, and again when the writing transaction commits. The second increment
is the one correctness rests on: a reader that rendered the page between the first increment and the commit (and so
saw the old rows) stored it under a generation nobody asks for any more. The first one makes the write visible at
once to readers inside the same transaction (tests run that way).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.db import transaction
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

PAGE_CACHE = "pages"  # the Django cache (settings.CACHES) that holds the generations and the pages
GENERATION_KEY = "rankings-generation"


def pages_cache():
    return caches[PAGE_CACHE]


RUNS = "runs"  # every run's score and progress, and which runs exist: the overall ranking and its filters
RUN_LIST = "run-list"  # which runs exist (id, model, protocol): the comparison's choices
# Any problem's standing, bumped with every problem's scope: the home page, which shows every problem's leader, is
# keyed by this one number instead of one per active problem (no query and one key fewer per problem on a cached hit).
CATALOGUE = "catalogue"


def run_scope(run_id: int) -> str:
    return f"run:{int(run_id)}"


def problem_scope(problem_id: str) -> str:
    return f"problem:{problem_id}"


def user_scope(username: str) -> str:
    return f"user:{username}"


def _generation_key(scope: str | None) -> str:
    if scope is None:
        return GENERATION_KEY
    if len(scope) > 150 or not re.fullmatch(r"[\w:./@+-]+", scope, re.ASCII):  # user names may hold anything
        scope = "sha256:" + hashlib.sha256(scope.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{GENERATION_KEY}:{scope}"


def generation_keys(scopes: list[str] = ()) -> list[str]:
    """The keys (in the pages cache) of the global generation and of each scope's, in that order."""
    return [_generation_key(None)] + [_generation_key(s) for s in scopes]


def generations(scopes: list[str] = ()) -> list[int] | None:
    """The global generation followed by each scope's (one round trip); None when Redis cannot be reached (then
    nothing is cached)."""
    keys = generation_keys(scopes)
    cache = pages_cache()
    try:
        found = cache.get_many(keys)
        missing = [k for k in keys if not isinstance(found.get(k), int)]
        if missing:
            # First use, or Redis lost the key (restart, eviction): start a sequence no earlier page can be under.
            for key in missing:
                cache.add(key, time.time_ns(), timeout=None)
            found.update(cache.get_many(missing))
    except RedisError:
        logger.warning("pages cache: Redis unreachable; serving pages uncached", exc_info=True)
        return None
    values = [found.get(k) for k in keys]
    return values if all(isinstance(v, int) for v in values) else None


def bump(scopes: tuple[str | None, ...] = (None,)) -> None:
    """Increments these generations now (the global one by default); ``rankings_changed`` is what services call."""
    cache = pages_cache()
    try:
        for scope in scopes:
            key = _generation_key(scope)
            cache.add(key, time.time_ns(), timeout=None)  # a key Redis lost starts a fresh sequence
            cache.incr(key)
    except (RedisError, ValueError):
        # Pages stored under the current generation may now be stale until the TTL (a Redis that lost this write
        # has usually lost the pages too). Logged loudly: this is the one way a reader could see an old verdict.
        logger.error(
            "pages cache: could not bump the rankings generation %s; cached pages may be stale for up to %s s",
            scopes,
            settings.ARENA_PAGE_CACHE_TTL_S,
            exc_info=True,
        )


def rankings_changed(*scopes: str) -> None:
    """Something ranking pages show changed: every cached page (no ``scopes``), or the pages of these scopes
    (``RUNS``, ``run_scope(id)``, ``problem_scope(id)``, ``user_scope(name)``; a problem's scope bumps ``CATALOGUE``
    too). Called by the services, inside their
    transaction or outside one; bumps the generations now and again once the transaction commits."""
    keys: tuple[str | None, ...] = tuple(scopes) or (None,)
    if any(scope.startswith("problem:") for scope in scopes):
        keys += (CATALOGUE,)
    bump(keys)
    transaction.on_commit(lambda: bump(keys))


def user_scope_of(user_id: int) -> str:
    """The scope of a user's pages, named from the user's id (one query)."""
    username = get_user_model().objects.filter(pk=user_id).values_list("username", flat=True).first() or ""
    return user_scope(username)


def submission_changed(*, problem_id: str, user_id: int, model_run_id: int | None) -> None:
    """A submission's state or result changed: the pages of its problem, its author, and its run (with the overall
    ranking, which shows each run's progress and score) are out of date."""
    scopes = [problem_scope(problem_id), user_scope_of(user_id)]
    if model_run_id is not None:
        scopes += [run_scope(model_run_id), RUNS]
    rankings_changed(*scopes)
