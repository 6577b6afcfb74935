"""Removing an evaluation's folders, whatever the solution left in them."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

logger = logging.getLogger("arena.evaluate")


def remove_tree(path: Path) -> None:
    """Removes ``path`` and everything below it, never raising: the folders held what the sandbox wrote, and a tree
    thousands of levels deep (which Python's own removal walks by recursion, and fails on) must neither stay on the
    host nor turn a verdict into the evaluator's failure. ``rm`` walks any depth; what it cannot remove is logged."""
    if not Path(path).exists():
        return
    rm = shutil.which("rm")
    if rm is not None:
        done = subprocess.run(
            [rm, "-rf", "--one-file-system", "--", str(path)], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            return
        logger.warning("could not remove %s: %s", path, done.stderr.strip()[:500])
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        logger.warning("could not remove %s: its folders nest too deep", path)
