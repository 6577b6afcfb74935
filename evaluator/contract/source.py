"""The one check that a file is a solution: Python source that binds ``solution`` at module level.

Single uploads, model-run attempts and imported suites' solution files all use :func:`solution_problem`, so a
file is accepted or refused the same way wherever it arrives."""

from __future__ import annotations

import ast


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name and node.value is not None
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    return False


def defines(tree: ast.Module, name: str) -> bool:
    """True when the module binds ``name`` at top level (def, class, assignment or import)."""
    return any(_binds(node, name) for node in tree.body)


def solution_problem(source: str, where: str = "The file") -> str | None:
    """None when ``source`` is a solution file; otherwise a message that says what is wrong and what to do."""
    source = source.removeprefix("\ufeff")
    if not source.strip():
        return f"{where} is empty; upload a Python file that defines `solution`."
    if "\0" in source:
        line = source[: source.index("\0")].count("\n") + 1
        return f"{where} is not Python source (a NUL byte at line {line}); upload the .py file itself, as text."
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        where_at = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        shown = f": `{exc.text.strip()}`" if exc.text and exc.text.strip() else ""
        return (
            f"{where} is not valid Python: {exc.msg} at {where_at}{shown}. Fix it (`python -m py_compile "
            f"yourfile.py` checks it) and submit again."
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{where} cannot be parsed as Python ({type(exc).__name__}); simplify it and submit again."
    asyncs = [n for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "solution"]
    if asyncs:
        return f"{where}: line {asyncs[0].lineno}: `solution` is async; the evaluator calls it as a plain function."
    if not defines(tree, "solution"):
        return (
            f"{where} defines no top-level `solution`. A solution file must define `def solution(...)` (or bind "
            f"`solution = ...`) at module level, with the same arguments as the problem's reference (see the "
            f"problem page)."
        )
    return None
