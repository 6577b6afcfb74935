"""Rate limits: the API's throttles (Django REST framework, counted in the cache settings' ``ARENA_THROTTLE_CACHE``
names, the ``throttle`` cache, which is Redis, so every gunicorn worker and every host shares the counts) and the
same throttles on the site's forms.

- ``anon`` and ``user``: every API request, per client address and per user (settings' ``DEFAULT_THROTTLE_RATES``;
  generous: the load test's 200 readers from one address stay well under ``anon``);
- ``uploads``: creating a submission, a model run or a proposal, per user, through the form or the API;
- ``signup`` and ``login``: the sign-up and log-in forms' POSTs, per client address (django-axes locks an account
  out after repeated wrong passwords on top of this; see settings' ``AXES_*``);
- test mode (``POST /api/tests/``): :class:`TestModeThrottle`, per API token, a rate (settings'
  ``ARENA_TEST_RATE_PER_MINUTE``) and a daily budget (``ARENA_TEST_DAILY_BUDGET``), two of these throttles counted
  together so that a request one of them refuses spends neither, with ``X-RateLimit-*`` headers.

An API request over a limit gets DRF's 429 JSON with ``Retry-After``; a form gets :func:`too_many_requests`, a page
with the same header. Reading pages (GET) is never limited here.
"""

from __future__ import annotations

import functools
import ipaddress
import math
from typing import Any, Callable, Iterable

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or, behind ``ARENA_TRUSTED_PROXIES`` proxies that each append to
    X-Forwarded-For, the address the outermost of them saw (what a client writes there itself is not trusted)."""
    proxies = getattr(settings, "ARENA_TRUSTED_PROXIES", 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [h.strip() for h in forwarded.split(",") if h.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def axes_client_ip(request: HttpRequest) -> str | None:
    """:func:`client_ip` for django-axes, which stores it in an address column: None when there is no address."""
    ip = client_ip(request)
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        return None
    return ip


class _Throttle(SimpleRateThrottle):
    """DRF's fixed-history throttle, counted in the shared ``throttle`` cache, keyed by user or client address."""

    by_user = True  # False: always by client address
    only_writes = False

    @property
    def cache(self):  # looked up on use, so tests' settings apply
        return caches[settings.ARENA_THROTTLE_CACHE]

    def get_ident(self, request) -> str:
        return client_ip(request)

    def get_cache_key(self, request, view) -> str | None:
        if self.only_writes and request.method in SAFE_METHODS:
            return None
        user = getattr(request, "user", None)
        if self.by_user and user is not None and user.is_authenticated:
            ident = f"user-{user.pk}"
        elif self.by_user is None and user is not None and user.is_authenticated:
            return None  # anonymous-only throttle
        else:
            ident = f"ip-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def get_rate(self):
        return settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {}).get(self.scope)


class ApiAnonThrottle(_Throttle):
    scope, by_user = "anon", None


class ApiUserThrottle(_Throttle):
    scope, by_user = "user", True

    def get_cache_key(self, request, view):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        return super().get_cache_key(request, view)


class UploadThrottle(_Throttle):
    scope, by_user, only_writes = "uploads", True, True


# Creating work is limited per user (form and API alike), on top of the API's own per-user and per-address rates.
UPLOAD_THROTTLES = [ApiAnonThrottle, ApiUserThrottle, UploadThrottle]


class SignupThrottle(_Throttle):
    scope, by_user, only_writes = "signup", False, True


class LoginThrottle(_Throttle):
    scope, by_user, only_writes = "login", False, True


def test_limits() -> tuple[int, int]:
    """Test mode's limits: tests a minute and tests a day, per API token (settings)."""
    return settings.ARENA_TEST_RATE_PER_MINUTE, settings.ARENA_TEST_DAILY_BUDGET


class _TestWindow(_Throttle):
    """One of test mode's two limits: counted per API token (each token its own budget), else per user."""

    def get_cache_key(self, request, view) -> str | None:
        key = getattr(getattr(request, "auth", None), "key", None)
        if key:
            return self.cache_format % {"scope": self.scope, "ident": f"token-{key}"}
        return super().get_cache_key(request, view)

    def peek(self, request, view) -> bool:
        """DRF's ``allow_request`` without counting the request: whether this limit would allow it."""
        self.key = self.get_cache_key(request, view)
        self.now = self.timer()
        self.history = [t for t in self.cache.get(self.key, []) if t > self.now - self.duration]
        return len(self.history) < self.num_requests

    @property
    def remaining(self) -> int:
        return max(0, self.num_requests - len(self.history))

    @property
    def resets_at(self) -> int:
        """When the oldest request counted leaves the window (one more is allowed then)."""
        return math.ceil((self.history[-1] if self.history else self.now) + self.duration)


class TestRateThrottle(_TestWindow):
    __test__ = False
    scope = "tests_burst"

    def get_rate(self) -> str:
        return f"{test_limits()[0]}/min"


class TestDailyThrottle(_TestWindow):
    __test__ = False
    scope = "tests_day"

    def get_rate(self) -> str:
        return f"{test_limits()[1]}/day"


class TestModeThrottle(BaseThrottle):
    """Test mode's rate and daily budget together, on DRF's cache-based throttles: a request is counted by both only
    when both allow it, so a refused request spends nothing. Windows slide (DRF's history of request times)."""

    __test__ = False

    def __init__(self) -> None:
        self.windows: list[_TestWindow] = [TestRateThrottle(), TestDailyThrottle()]
        self.refused: _TestWindow | None = None
        self.now = 0.0

    @property
    def cache(self) -> Any:
        return self.windows[0].cache

    def allow_request(self, request, view) -> bool:
        allowed = [w.peek(request, view) for w in self.windows]
        self.now = self.windows[0].now
        self.refused = next((w for w, ok in zip(self.windows, allowed) if not ok), None)
        if self.refused is not None:
            return False
        for w in self.windows:
            w.throttle_success()
        return True

    def wait(self) -> float | None:
        if self.refused is None:
            return None
        return max(1.0, self.refused.wait() or 1.0)

    def headers(self) -> dict[str, str]:
        burst, day = self.windows
        return {
            "X-RateLimit-Limit": str(day.num_requests),
            "X-RateLimit-Remaining": str(day.remaining),
            "X-RateLimit-Reset": str(day.resets_at),
            "X-RateLimit-Burst-Limit": str(burst.num_requests),
            "X-RateLimit-Burst-Remaining": str(burst.remaining),
            "X-RateLimit-Burst-Reset": str(burst.resets_at),
        }


def retry_after_s(wait: float | None) -> int:
    return max(1, math.ceil(wait or 1))


def too_many_requests(request: HttpRequest, wait_s: float | None, what: str) -> HttpResponse:
    """The page a form gets over a limit: 429 with Retry-After, saying what was limited and when to try again."""
    seconds = retry_after_s(wait_s)
    when = f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
    message = f"Too many {what} from you in a short time. Try again in {when}."
    body = render_to_string("errors/429.html", {"message": message}, request=request)
    response = HttpResponse(body, status=429)
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response


def throttled(*throttle_classes: type[_Throttle], what: str = "requests") -> Callable:
    """Applies the throttles to a Django view's writes (POST and the like); a request over any limit gets
    :func:`too_many_requests` and the view does not run."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            if request.method not in SAFE_METHODS:
                waits = check(request, throttle_classes)
                if waits is not None:
                    return too_many_requests(request, waits, what)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def check(request: HttpRequest, throttle_classes: Iterable[type[_Throttle]]) -> float | None:
    """None when every throttle allows the request (each counts it), else the longest wait in seconds."""
    waits = []
    for cls in throttle_classes:
        throttle = cls()
        if not throttle.allow_request(request, None):
            waits.append(throttle.wait() or 1)
    return max(waits) if waits else None
