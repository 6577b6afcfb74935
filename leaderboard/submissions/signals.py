"""What the result-recording path tells the rooms above it, which it may not import.

``verdict_recorded`` is sent once per stored Result, after the transaction that stored it commits, with
``submission`` and ``result``; ``portal.accounts`` connects the verdict e-mail to it. A receiver's failure is logged
and does not touch the stored result (``send_robust``)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

verdict_recorded = Signal()


def verdict_recorded_after_commit(*, submission, result) -> None:
    def send() -> None:
        for receiver, outcome in verdict_recorded.send_robust(
            sender=type(submission), submission=submission, result=result
        ):
            if isinstance(outcome, Exception):
                logger.error(
                    "verdict_recorded receiver %r failed for submission %s: %r", receiver, submission.pk, outcome
                )

    transaction.on_commit(send)
