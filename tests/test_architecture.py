"""The rooms and who may import whom (docs/architecture.md), checked on the source with :mod:`ast`.

- No import cycle among the project's modules (leaderboard/, portal/, evaluator/, problems/). The graph has an edge
  from a module to every project module it imports **anywhere** in its source (``ast.walk``): at module level, inside
  functions and methods (lazy imports still tie the two modules together: each needs the other to work), and under
  ``if TYPE_CHECKING:`` (a type that must come from a module that imports you is a circle too). ``from package import
  name`` counts as importing ``package.name`` when that is a module, else as importing ``package``.
- Nothing under evaluator/ or problems/ imports Django, Django REST framework, the leaderboard or the portal, at any
  level: GPU hosts run them alone. Nothing under problems/ imports the evaluator: problems (and their known answers)
  do not know the runner.
- The leaderboard and the portal take from evaluator/ only ``evaluator.contract`` (standard library only), except
  through ``leaderboard/beyond_contract.py``, the one module that lists what the web side still needs beyond it.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("leaderboard", "portal", "evaluator", "problems")
WORKER_SIDE = ("evaluator", "problems")
WEB_ONLY = ("django", "rest_framework", "drf_spectacular", "django_rq", "django_filters", "leaderboard", "portal")
BRIDGE = "leaderboard.beyond_contract"

# Cycles known today, each to be removed by the owner of its modules; delete an entry once its cycle is gone (the test
# warns when an entry no longer matches a cycle).
ALLOWED_CYCLES: list[frozenset[str]] = []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[_module_name(path)] = path
    return found


def _every_import(tree: ast.Module):
    """Every import statement of a module, wherever it is (see the module's doc)."""
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement imports (absolute; relative ones resolved against ``module``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([base] if base else []))
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def _graph(modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    modules = _modules() if modules is None else modules
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _every_import(tree):
            names = _targets(node, name, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                # `from a import b`: the module a.b if there is one, else the module a
                submodules = [t for t in names[:-1] if t in modules]
                hits = submodules or ([names[-1]] if names[-1] in modules else [])
            else:
                hits = [t for t in names if t in modules]
            graph[name].update(h for h in hits if h != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_and_under_type_checking_count(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    from b import g\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import c\n")
    (tmp_path / "c.py").write_text("class K:\n    def m(self):\n        import a\n")
    graph = _graph({name: tmp_path / f"{name}.py" for name in ("a", "b", "c")})
    assert graph == {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    assert _cycles(graph) == [frozenset({"a", "b", "c"})]


def test_no_import_cycle_among_the_projects_modules():
    cycles = _cycles(_graph())
    unexpected = [sorted(c) for c in cycles if c not in ALLOWED_CYCLES]
    assert not unexpected, f"import cycles (imports at any depth): {unexpected}"
    for stale in set(ALLOWED_CYCLES) - set(cycles):
        warnings.warn(
            f"the allowed cycle {sorted(stale)} no longer exists: delete its entry in ALLOWED_CYCLES", stacklevel=1
        )


def test_the_worker_side_imports_nothing_of_django_or_the_web_side():
    offending = []
    for name, path in _modules().items():
        if not name.startswith(WORKER_SIDE):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _every_import(tree):
            for target in _targets(node, name, path.name == "__init__.py"):
                if target.split(".")[0] in WEB_ONLY:
                    offending.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    assert not offending, "\n".join(offending)


def test_problems_import_nothing_of_the_evaluator():
    """References and known answers run where the evaluator decides; what they share with it (the backends' helpers)
    lives in problems/ and the evaluator re-exports it."""
    offending = []
    for name, path in _modules().items():
        if not name.startswith("problems"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _every_import(tree):
            for target in _targets(node, name, path.name == "__init__.py"):
                if target.split(".")[0] == "evaluator":
                    offending.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    assert not offending, "\n".join(offending)


def test_the_web_side_takes_from_the_evaluator_only_its_contract():
    offending = []
    for name, path in _modules().items():
        if not name.startswith(("leaderboard", "portal")) or name == BRIDGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _every_import(tree):
            targets = _targets(node, name, path.name == "__init__.py")
            base = targets[-1] if isinstance(node, ast.ImportFrom) else None
            for target in [base] if base else targets:
                if target.split(".")[0] == "evaluator" and not (target + ".").startswith("evaluator.contract."):
                    offending.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} imports {target} (use "
                        f"evaluator.contract, or list it in {BRIDGE})"
                    )
    assert not offending, "\n".join(offending)


def test_web_modules_stay_under_500_lines():
    """A module over 500 lines does several jobs; split it (problems/ and migrations are not held to this)."""
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for name, path in _modules().items()
        if name.startswith(("leaderboard", "portal"))
        and ".migrations." not in name
        and (n := len(path.read_text(encoding="utf-8").splitlines())) > 500
    ]
    assert not long, long


def test_an_evaluator_module_over_500_lines_opens_with_the_one_job_it_does():
    """The evaluator's long modules each do one job, which their docstring names in its first sentence: a module over
    500 lines without one is doing several and should be split."""
    unnamed = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for name, path in _modules().items()
        if name.startswith("evaluator")
        and (n := len((text := path.read_text(encoding="utf-8")).splitlines())) > 500
        and len((ast.get_docstring(ast.parse(text)) or "").split(".")[0].split()) < 5
    ]
    assert not unnamed, unnamed
