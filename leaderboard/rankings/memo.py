"""What a row of a table was built into (its HTML, its exported record and the text that record was written as), kept
per process and keyed by **everything it is built from**: the row's columns as read from the database, its rank range,
and what the page adds (link prefixes, time zone, language).

A key holds every input, so a changed run (a new score, one more attempt done, a renamed owner) is a new key: nothing is
ever invalidated, and nothing is served that the same inputs would not build again. After a result lands, the next
render of a ranking rebuilds the one row that changed and reuses the others, in whichever worker rendered them before.
The memo is bounded (``size`` entries, the oldest quarter dropped when full), so a process holds at most a few MB.
"""

from __future__ import annotations

import threading
from itertools import islice
from typing import Any, Callable, Hashable

MEMOS: list[Memo] = []  # every memo of the process (``forget_all``)


def forget_all() -> None:
    """Drops every kept row: the next render builds each row afresh (a benchmark's worst case: every run changed)."""
    for memo in MEMOS:
        memo.clear()


class Memo:
    """A bounded map from a row's inputs to what it was built into (``get_or_build``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._built: dict[Hashable, Any] = {}
        self._evicting = threading.Lock()
        MEMOS.append(self)

    def get_or_build(self, key: Hashable | None, build: Callable[[], Any]) -> Any:
        """What ``build()`` gives for ``key``, built once (``key`` None or unhashable: built every time, nothing
        kept)."""
        if key is None:
            return build()
        try:
            built = self._built.get(key)
        except TypeError:  # a value in the key that cannot be hashed (a list): not kept
            return build()
        if built is None:
            built = build()
            if len(self._built) >= self.size:
                self._evict()
            self._built[key] = built
        return built

    def _evict(self) -> None:
        with self._evicting:  # (another thread may be adding: copy the oldest keys first, then drop them)
            for key in list(islice(iter(self._built.copy()), max(self.size // 4, 1))):
                self._built.pop(key, None)

    def clear(self) -> None:
        self._built.clear()

    def __len__(self) -> int:
        return len(self._built)
