"""Small middlewares: security headers Django does not send itself, a cap on the request body, and no-store on
private pages.

- ``SecurityHeadersMiddleware`` adds ``Content-Security-Policy`` (settings.CONTENT_SECURITY_POLICY) to every
  response that has none. Django 5.2 sends nosniff, Referrer-Policy, Cross-Origin-Opener-Policy (SecurityMiddleware)
  and X-Frame-Options (XFrameOptionsMiddleware) already.
- ``RequestSizeLimitMiddleware`` refuses a body whose declared length is over settings.ARENA_MAX_REQUEST_BYTES with
  a 413 that says the limit, before anything reads it. ``request_too_large`` is the same answer for Django's own
  ``RequestDataTooBig`` (form fields over DATA_UPLOAD_MAX_MEMORY_SIZE), used by ``portal.views.bad_request``.
- ``PrivatePagesMiddleware`` marks every answer that may show something private ``Cache-Control: no-store``: any
  answer to a signed-in person (their token, submissions, sources, proposals, account pages), to an API request
  that carries credentials, and every page under /accounts/ and /admin/. Anonymous readers' pages stay cacheable.
- ``SiteNotFoundMiddleware``: with DEBUG on (a local portal, `make run`) Django answers a missing page with its
  technical 404 (the URL patterns it tried) instead of handler404; this gives the site's page there too.
"""

from __future__ import annotations

from typing import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from leaderboard import formats
from portal.not_found import not_found


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", "")
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


def request_too_large(
    request: HttpRequest, *, declared: int | None = None, limit: int | None = None, what: str = "request"
) -> HttpResponse:
    """A 413 saying what the limit is and what to send instead: JSON under /api/, a page elsewhere."""
    limit = limit if limit is not None else settings.ARENA_MAX_REQUEST_BYTES
    size = f" ({formats.size(declared)})" if declared else ""
    archive = getattr(settings, "ARENA_MAX_ARCHIVE_BYTES", None)
    message = (
        f"The {what} is too large{size}; the limit is {formats.size(limit)}. A solution is one Python file of "
        f"at most {formats.size(settings.ARENA_MAX_SOURCE_BYTES)}"
        + (f", a model-run archive at most {formats.size(archive)}" if archive else "")
        + "; send just that."
    )
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, "errors": {"non_field_errors": [message]}}, status=413)
    body = render_to_string("errors/413.html", {"message": message}, request=None)
    return HttpResponse(body, status=413)


class RequestSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        raw = request.META.get("CONTENT_LENGTH") or ""
        try:
            declared = int(raw) if raw else 0
        except ValueError:
            declared = 0
        if declared > settings.ARENA_MAX_REQUEST_BYTES:
            # The body is not read. (No "Connection: close" here: WSGI apps may not set hop-by-hop headers; the
            # server in front drains or closes the connection itself.)
            return request_too_large(request, declared=declared)
        return self.get_response(request)


PRIVATE_PREFIXES = ("/accounts/", "/admin/")


class PrivatePagesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)
        private = (
            request.path.startswith(PRIVATE_PREFIXES)
            or "HTTP_AUTHORIZATION" in request.META
            or (user is not None and user.is_authenticated)
        )
        if private:
            response["Cache-Control"] = "no-store, private"
        return response


class SiteNotFoundMiddleware:
    """A missing page of a local portal (DEBUG on) is the site's 404 page, as in production, not Django's technical
    page listing URL patterns: a newcomer following a wrong link on `make run` met that. Only Django's technical
    page is replaced (it carries the robots marker below); the API's JSON 404s and pages a view answered itself pass
    untouched."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and not getattr(response, "streaming", False)
            and response.get("Content-Type", "").startswith("text/html")
            and b'<meta name="robots" content="NONE,NOARCHIVE">' in response.content
        ):
            return not_found(request)
        return response
