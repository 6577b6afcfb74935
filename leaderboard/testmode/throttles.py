"""Per-token limits on test mode: a rate (tests a minute) and a daily budget (tests a UTC day), counted in the cache
named by settings' ``ARENA_THROTTLE_CACHE`` (the Redis ``throttle`` cache, so every web process counts together; the
limits are settings' ``ARENA_TEST_RATE_PER_MINUTE`` and ``ARENA_TEST_DAILY_BUDGET``).

Both windows are fixed (a minute, a UTC day) and counted with the cache's atomic ``incr``; a request is counted only
when both windows allow it, so a refused request does not spend the budget. ``headers()`` gives the
``X-RateLimit-*`` headers (the daily budget) and ``X-RateLimit-Burst-*`` (the rate); a refusal is DRF's 429 with
``Retry-After``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from rest_framework.throttling import BaseThrottle

DEFAULT_RATE_PER_MINUTE = 10
DEFAULT_DAILY_BUDGET = 200


@dataclass
class Window:
    name: str
    seconds: int
    limit: int
    used: int = 0
    resets_at: int = 0

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


def limits() -> tuple[int, int]:
    return (int(getattr(settings, "ARENA_TEST_RATE_PER_MINUTE", DEFAULT_RATE_PER_MINUTE)),
            int(getattr(settings, "ARENA_TEST_DAILY_BUDGET", DEFAULT_DAILY_BUDGET)))


class TestModeThrottle(BaseThrottle):
    __test__ = False
    """Who is counted: the API token (each token its own budget), else the signed-in user, else the address."""

    def __init__(self) -> None:
        per_minute, per_day = limits()
        self.windows = [Window("burst", 60, per_minute), Window("day", 86400, per_day)]
        self.refused: Window | None = None
        self.now = 0.0

    @property
    def cache(self):
        return caches[getattr(settings, "ARENA_THROTTLE_CACHE", "throttle")]

    def ident(self, request) -> str:
        auth = getattr(request, "auth", None)
        key = getattr(auth, "key", None)
        if key:
            return f"token:{key}"
        if request.user and request.user.is_authenticated:
            return f"user:{request.user.pk}"
        return f"addr:{self.get_ident(request)}"

    def _key(self, who: str, window: Window) -> str:
        return f"arena-test-throttle:{window.name}:{window.resets_at}:{who}"

    def allow_request(self, request, view) -> bool:
        self.now = time.time()
        who = self.ident(request)
        for w in self.windows:
            w.resets_at = int(self.now // w.seconds + 1) * w.seconds
            w.used = int(self.cache.get(self._key(who, w)) or 0)
        self.refused = next((w for w in self.windows if w.used >= w.limit), None)
        if self.refused is not None:
            return False
        for w in self.windows:
            key = self._key(who, w)
            self.cache.add(key, 0, timeout=w.seconds + 5)
            try:
                w.used = int(self.cache.incr(key))
            except ValueError:  # expired between add and incr
                self.cache.set(key, 1, timeout=w.seconds + 5)
                w.used = 1
        return True

    def wait(self) -> float | None:
        if self.refused is None:
            return None
        return max(1.0, self.refused.resets_at - self.now)

    def headers(self) -> dict[str, str]:
        burst, day = self.windows
        return {
            "X-RateLimit-Limit": str(day.limit), "X-RateLimit-Remaining": str(day.remaining),
            "X-RateLimit-Reset": str(day.resets_at),
            "X-RateLimit-Burst-Limit": str(burst.limit), "X-RateLimit-Burst-Remaining": str(burst.remaining),
            "X-RateLimit-Burst-Reset": str(burst.resets_at),
        }
