"""How the REST API reports errors: the ``EXCEPTION_HANDLER`` of its settings."""

from __future__ import annotations
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import ValidationError as DrfValidationError
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    """Service errors (Django ValidationError) become 400s with the same messages the site shows:
    ``{"detail": "<first message>", "errors": {"<field>": ["..."]}}``."""
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            errors = exc.message_dict
        else:
            errors = {"non_field_errors": exc.messages}
        exc = DrfValidationError(detail=errors)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, DrfValidationError) and isinstance(response.data, dict):
        first = next(
            (m for msgs in response.data.values() for m in (msgs if isinstance(msgs, list) else [msgs])),
            "The request is invalid.",
        )
        response.data = {"detail": str(first), "errors": response.data}
    return response
