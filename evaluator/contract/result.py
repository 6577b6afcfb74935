"""The result document: a versioned, JSON-serialisable record of one evaluation."""

from __future__ import annotations

import enum
from typing import Any

RESULT_SCHEMA_VERSION = 1
# Which timing loop produced a result's figures; raised whenever a change can move the figures of the same code
# (docs/protocol.md lists the revisions), so a reader can tell results measured under different loops apart.
TIMING_PROTOCOL_REVISION = 6
LOG_LIMIT = 8000  # characters kept of each rank's log


class Verdict(str, enum.Enum):
    PASSED = "passed"
    WRONG_OUTPUT = "wrong_output"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"
    INFRA_ERROR = "infra_error"


def trim(text: str, limit: int = LOG_LIMIT) -> str:
    """Keeps the head and the tail of a long log; the middle is rarely what a reader needs."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n… [{len(text) - limit} characters cut] …\n" + text[-half:]


def empty_document() -> dict[str, Any]:
    """Every key a result carries, so readers never guess whether a field exists."""
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "verdict": None,
        "message": "",
        "failed_ranks": [],
        "problem": {},
        "solution": {},
        "profile": {},
        "trials": [],
        "timing": None,
        "roofline": None,
        "flags": {},
        "environment": {},
        "phases": {},
        "timeline": {},  # when each step of the set-up ended, seconds from the start
        "logs": {},
    }
