"""The OpenAPI schema as people read it: descriptions are Markdown (single backticks for code), never
reStructuredText, whatever a docstring slipped in. Registered in SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]."""

from __future__ import annotations

import re
from typing import Any

RST_LITERAL = re.compile(r"``(.+?)``", re.S)
RST_ROLE = re.compile(r":(?:class|meth|func|attr|mod|obj):`~?([^`]+)`")


def plain(text: str) -> str:
    """``code`` → `code`, :class:`X` → `X`."""
    return RST_ROLE.sub(r"`\1`", RST_LITERAL.sub(r"`\1`", text))


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: plain(v) if k == "description" and isinstance(v, str) else _walk(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_walk(v) for v in node]
    return node


def markdown_descriptions(result: dict, generator, request, public) -> dict:
    """drf-spectacular post-processing hook: every description in Markdown."""
    return _walk(result)
