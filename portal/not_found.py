"""The missing page (handler404, and portal.middleware.SiteNotFoundMiddleware for a local portal): a module of its
own, since the middleware needs it and the views import the middleware."""

from __future__ import annotations

import re

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404, and the missing page of a local portal too (``portal.middleware.SiteNotFoundMiddleware``): the
    site's page, saying why in words where the view said so. Never the URL resolver's pattern list or an exception's
    class name ("Resolver404"); get_object_or_404's "No ModelRun matches the given query." reads "there is no such
    model run"."""
    why = ""
    message = exception.args[0] if exception is not None and exception.args else None
    if isinstance(message, str):
        found = re.fullmatch(r"No (\w+) matches the given query\.", message)
        why = f"there is no such {re.sub(r'(?<!^)(?=[A-Z])', ' ', found[1]).lower()}" if found else message
    return render(request, "404.html", {"request_path": request.path, "why": why}, status=404)
