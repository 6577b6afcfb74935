"""Every `python -m <module>` the README and the docs tell a reader to run names a module that runs, and the model-run
archive check documented there works as written on an example archive."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# Commands described but not runnable here, each with where the docs say so.
ON_PAPER = {
    "evaluator.host.node": "docs/operations.md: 'On a real cluster (on paper; not run here)'",
    "pytest": "a tool, not a module of ours",
}


def documented_modules() -> dict[str, str]:
    found = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text()
        text = text.split("## Migration note", 1)[0]  # architecture.md's table of what was renamed
        for module in re.findall(r"python -m ([A-Za-z_][\w.]*)", text):
            found.setdefault(module, str(path.relative_to(ROOT)))
    return found


def test_every_documented_python_m_command_exists():
    modules = documented_modules()
    assert "leaderboard.model_runs" in modules
    missing = {
        m: where
        for m, where in modules.items()
        if m not in ON_PAPER
        and not (
            importlib.util.find_spec(m) is not None
            and (
                importlib.util.find_spec(m).submodule_search_locations is None
                or importlib.util.find_spec(m + ".__main__") is not None
            )
        )
    }
    assert not missing, f"documented but not runnable: {missing}"


def test_the_documented_archive_check_runs_as_written(tmp_path):
    archive = tmp_path / "run.zip"
    wrote = subprocess.run(
        [sys.executable, "-m", "leaderboard.model_runs", "example", str(archive)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrote.returncode == 0, wrote.stderr
    checked = subprocess.run(
        [sys.executable, "-m", "leaderboard.model_runs", "check", str(archive)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0 and "valid" in checked.stdout, checked.stderr
    # the example's two attempts at one problem, counted in words that agree ("at 1 problems" before)
    assert "2 attempts at 1 problem, 1 trajectory, " in checked.stdout, checked.stdout


def test_every_documented_curl_names_a_whole_address():
    """A `curl '/api/...'` in the README (the prompt pack's line) failed as copied: curl needs a host."""
    relative = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for line in path.read_text().splitlines():
            for target in re.findall(r"\bcurl\b[^'\"\n]*['\"]([^'\"]+)['\"]", line):
                if target.startswith("/"):
                    relative.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not relative, relative
