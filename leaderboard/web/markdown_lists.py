"""Lists written the way people write them in the project's Markdown ("...as follows:" then "- item" on the next
line) read as lists. Python-Markdown, like the original Markdown, wants a blank line between a paragraph and a list,
and without one renders the items as one paragraph of hyphens; GitHub, where the same files are read, does not."""

from __future__ import annotations

import re

_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])\s+\S")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def loosen_lists(text: str) -> str:
    """``text`` with a blank line put between a line of text and a list item that follows it directly, outside
    fenced code; items of one list and everything inside fences are left as they are."""
    out: list[str] = []
    fence: str | None = None
    previous = ""
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1) == fence:
                fence = None
        elif opened:
            fence = opened.group(1)
        elif _ITEM.match(line) and previous.strip() and not _ITEM.match(previous):
            # after text, a table or an item's indented paragraph alike: a blank line there never changes a list
            # that was already one (it only makes it loose)
            out.append("")
        out.append(line)
        previous = line if fence is None or opened else ""
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
