"""Logging filters for the console handler (settings.LOGGING)."""

from __future__ import annotations

import logging

# Answers the site gives on purpose (a refused page, a missing one): their one-line log is enough; the traceback of the
# PermissionDenied or Http404 that produced them says nothing an operator needs and buries real errors.
HANDLED_STATUSES = frozenset({400, 401, 403, 404, 405, 410, 413, 429})


class HandledRefusalTracebacks(logging.Filter):
    """Keeps django.request's line for a handled 4xx answer and drops the exception's traceback from it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "django.request" and getattr(record, "status_code", None) in HANDLED_STATUSES:
            record.exc_info = None
            record.exc_text = None
        return True
