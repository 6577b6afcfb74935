"""Discovers problem folders and validates them against the problem contract.

A problem is a folder ``problems/<category>/<name>/`` holding ``problem.toml`` (metadata as data),
``reference.py`` (``solution``, ``make_inputs``, ``oracle``) and ``README.md`` (the statement).
Every field is checked here, once, so the evaluator and the portal can trust what they are given;
a malformed folder raises :class:`ProblemError` naming the file and the field.

Imported suites (``arena import-pkb``; see docs/pkb.md) live outside the repository, under ``$ARENA_SUITES_DIR``
(default ``<repo>/var/suites``): ``<suites>/<suite>/suite.toml`` plus one problem folder per problem, with the
id ``<suite>/<name>``. Their contract differs in two places only: ``problem.toml`` carries an ``[imported]``
table (``source``, ``commit``, ``file``) saying where the problem came from, and ``reference.py`` needs no
``oracle`` (its ``solution`` may be a plain assignment): an imported reference is the ground truth as its
source defines it, and the evaluator compares solutions against it, never against an oracle.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

PROBLEMS_ROOT = Path(__file__).resolve().parent

CATEGORIES: dict[str, str] = {
    "collectives": "Collectives",
    "tensor-parallel": "Tensor parallel",
    "sequence-parallel": "Sequence / context parallel",
    "expert-parallel": "Expert parallel",
    "data-parallel": "Data parallel / ZeRO / FSDP",
    "pipeline": "Pipeline parallel",
    "vocab-parallel": "Vocab parallel / RL",
    "non-llm": "Non-LLM (FFT, graph, geometry, sorting, science)",
}

DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "float8_e4m3fn")
PRESETS = ("small", "bench")
ROOFLINE_TERMS = ("link_bytes_per_rank", "hbm_bytes_per_rank", "flops_per_rank")
# Terms a problem may add: bytes each rank must send to other nodes, bounded by the profile's inter-node figure
# (used only on profiles with more than one node).
OPTIONAL_ROOFLINE_TERMS = ("internode_bytes_per_rank",)
HARD_MAX_CHARS = 160  # "why this is hard": one short line
TAG_MAX_CHARS = 32
_TAG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
# The built-in suite's version, named by model runs and results; bump it (and add a line to the change log in
# docs/problems.md) whenever problems are added, removed or get a new version.
SUITE_VERSION = "2026.12.2"
REFERENCE_FUNCTIONS = ("solution", "make_inputs", "oracle")
IMPORTED_REFERENCE_FUNCTIONS = ("solution", "make_inputs")  # imported suites: no oracle (see the module docstring)
SUITES_ENV = "ARENA_SUITES_DIR"
SUITE_FILE = "suite.toml"
_SUITE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class ProblemError(ValueError):
    """A problem folder breaks the contract; the message names the file, the field and the fix."""


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class Preset:
    name: str
    dtype: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Problem:
    id: str
    path: Path
    title: str
    category: str
    version: int
    codebase: str
    function: str
    world_sizes: tuple[int, ...]
    presets: Mapping[str, Preset]
    tolerances: Mapping[str, Tolerance]
    roofline: Mapping[str, str]
    statement: str
    content_hash: str
    suite: str = "arena"
    extra: Mapping[str, Any] = field(default_factory=dict)
    hard: str = ""  # why this is hard, one short line (optional in problem.toml)
    tags: tuple[str, ...] = ()  # e.g. ("inter-node",)
    communication: str = ""  # what communication it needs, one short line (optional in problem.toml)

    @property
    def summary(self) -> str:
        return str(self.extra.get("summary", ""))

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags

    @property
    def reference_path(self) -> Path:
        return self.path / "reference.py"

    @property
    def reference_source(self) -> str:
        return self.reference_path.read_text()

    def tolerance(self, dtype: str) -> Tolerance:
        return self.tolerances[dtype]

    def params(self, preset: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A preset's size parameters, with overrides for size sweeps (only names the preset already has)."""
        params = dict(self.presets[preset].params)
        for key, value in (overrides or {}).items():
            if key not in params:
                raise ProblemError(
                    f"{self.id}: preset {preset!r} has no size parameter {key!r}; it has {', '.join(params)}"
                )
            params[key] = value
        return params

    def roofline_terms(
        self, world_size: int, preset: str, overrides: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        """Bytes each rank must move over the interconnect and through HBM, and its FLOPs (and, where the problem
        gives it, ``internode_bytes_per_rank``: the bytes it must send to other nodes)."""
        p = self.presets[preset]
        names = self.params(preset, overrides)
        names["W"] = world_size
        names["E"] = element_size(p.dtype)
        return {term: float(evaluate_expression(expr, names)) for term, expr in self.roofline.items()}

    def load_reference(self) -> ModuleType:
        return load_module(self.reference_path, f"arena_problem_{self.id.replace('/', '_').replace('-', '_')}")

    @property
    def imported(self) -> Mapping[str, Any] | None:
        """For a problem of an imported suite, where it came from (``source``, ``commit``, ``file``, ...)."""
        return self.extra.get("imported")


def element_size(dtype: str) -> int:
    return {
        "float64": 8,
        "int64": 8,
        "float32": 4,
        "int32": 4,
        "float16": 2,
        "bfloat16": 2,
        "int8": 1,
        "uint8": 1,
        "float8_e4m3fn": 1,
    }[dtype]


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"{path}: cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Pow,
    ast.Mod,
    ast.USub,
    ast.Call,
)
_ALLOWED_CALLS = {"min": min, "max": max, "log2": lambda x: __import__("math").log2(x)}

# Bounds on a formula, so that evaluating one is cheap whatever it says (a proposal's formulas are evaluated while its
# form is checked): its length and size, every operand and every intermediate result at most MAX_MAGNITUDE in
# magnitude (FLOPs and bytes per rank of any real problem are far below it), exponents at most MAX_EXPONENT. Each
# step is then an operation on numbers of at most ~100 bits, so a formula of MAX_NODES nodes takes microseconds.
MAX_FORMULA_CHARS = 500
MAX_NODES = 200
MAX_MAGNITUDE = 10**30
MAX_EXPONENT = 64


def _bounded(expr: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProblemError(f"roofline formula {expr!r} gives {type(value).__name__}, not a number")
    if isinstance(value, float) and value != value:
        raise ProblemError(f"roofline formula {expr!r} is not a number (NaN)")
    if abs(value) > MAX_MAGNITUDE:
        raise ProblemError(
            f"roofline formula {expr!r} reaches a value beyond 1e30 in magnitude; a roofline term "
            f"is a count of bytes or FLOPs per rank, far below that"
        )
    return value


def _evaluate(node: ast.AST, expr: str, names: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, expr, names)
    if isinstance(node, ast.Constant):
        return _bounded(expr, node.value)
    if isinstance(node, ast.Name):
        return _bounded(expr, names[node.id])
    if isinstance(node, ast.UnaryOp):
        return _bounded(expr, -_evaluate(node.operand, expr, names))
    if isinstance(node, ast.Call):
        if node.keywords:
            raise ProblemError(f"roofline formula {expr!r} passes keyword arguments, which are not allowed")
        args = [_evaluate(a, expr, names) for a in node.args]
        return _bounded(expr, _ALLOWED_CALLS[node.func.id](*args))
    assert isinstance(node, ast.BinOp)
    left, right = _evaluate(node.left, expr, names), _evaluate(node.right, expr, names)
    op = node.op
    if isinstance(op, ast.Pow):
        if abs(right) > MAX_EXPONENT:
            raise ProblemError(
                f"roofline formula {expr!r} raises to the power {right!r}; exponents are limited to "
                f"{MAX_EXPONENT} in magnitude"
            )
        if abs(left) > 1 and abs(right) * __import__("math").log2(abs(left)) > 100:  # |result| > 2**100 > 1e30
            raise ProblemError(
                f"roofline formula {expr!r} reaches a value beyond 1e30 in magnitude; a roofline "
                f"term is a count of bytes or FLOPs per rank, far below that"
            )
        if left == 0 and right < 0:
            raise ZeroDivisionError("0 cannot be raised to a negative power")
        value = left**right
        if isinstance(value, complex):
            raise ProblemError(f"roofline formula {expr!r} raises a negative number to a fractional power")
        return _bounded(expr, value)
    operations = {
        ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b,
        ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b,
    }
    return _bounded(expr, operations[type(op)](left, right))


def evaluate_expression(expr: str, names: Mapping[str, Any]) -> float:
    """Evaluates a roofline formula such as ``2 * (W - 1) / W * N * E`` over a preset's sizes.

    Only arithmetic, the size names, ``W`` (world size), ``E`` (element bytes) and min/max/log2 are allowed,
    so a problem file cannot run code through its metadata; and the formula is interpreted here, node by node,
    within the bounds above (length, size, magnitude, exponent), so it cannot take long or use much memory either:
    ``9**9**9**9`` is refused at once. Raises ProblemError naming the formula and the bound it breaks.
    """
    expr = str(expr)
    if len(expr) > MAX_FORMULA_CHARS:
        raise ProblemError(f"roofline formula of {len(expr)} characters; the limit is {MAX_FORMULA_CHARS}")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ProblemError(f"roofline formula {expr!r} is not an expression ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ProblemError(f"roofline formula {expr!r} is not an expression") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ProblemError(f"roofline formula {expr!r} has {len(nodes)} parts; the limit is {MAX_NODES}")
    for node in nodes:
        if not isinstance(node, _ALLOWED_NODES):
            raise ProblemError(f"roofline formula {expr!r} uses {type(node).__name__}, which is not allowed")
        if isinstance(node, ast.Name) and node.id not in names and node.id not in _ALLOWED_CALLS:
            raise ProblemError(f"roofline formula {expr!r} names {node.id!r}, which is not a size parameter")
        if isinstance(node, ast.Name) and node.id in _ALLOWED_CALLS:
            continue
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _ALLOWED_CALLS):
            raise ProblemError(f"roofline formula {expr!r} calls something other than min, max or log2")
    for node in nodes:  # a function name used as a value (``min + 1``)
        if isinstance(node, ast.Name) and node.id in _ALLOWED_CALLS and node.id not in names:
            if not any(isinstance(c, ast.Call) and c.func is node for c in nodes):
                raise ProblemError(f"roofline formula {expr!r} uses {node.id!r} without calling it")
    try:
        return _evaluate(tree, expr, names)
    except RecursionError:
        raise ProblemError(f"roofline formula {expr!r} is nested too deeply") from None
    except OverflowError:
        raise ProblemError(f"roofline formula {expr!r} reaches a value beyond 1e30 in magnitude") from None


def _require(table: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in table:
        raise ProblemError(f"{where}: the field '{key}' is missing; add it (see docs/contributing-problems.md).")
    value = table[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ProblemError(f"{where}: the field '{key}' must be {names}, not {type(value).__name__} ({value!r}).")
    return value


def content_hash(folder: Path) -> str:
    """Hash of everything that defines the problem, so results only compare like with like."""
    h = hashlib.sha256()
    for name in ("problem.toml", "reference.py", "README.md"):
        h.update(name.encode())
        h.update((folder / name).read_bytes())
    return h.hexdigest()


def load_problem(folder: Path, root: Path = PROBLEMS_ROOT, suite: str = "arena") -> Problem:
    """Reads and validates one problem folder."""
    folder = Path(folder)
    problem_id = folder.relative_to(root).as_posix()
    toml_path = folder / "problem.toml"
    where = str(toml_path.relative_to(root.parent)) if root.parent in toml_path.parents else str(toml_path)
    for name in ("problem.toml", "reference.py", "README.md"):
        if not (folder / name).is_file():
            raise ProblemError(
                f"{problem_id}: {name} is missing; every problem folder needs problem.toml, reference.py and README.md."
            )
    try:
        meta = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(f"{where}: not valid TOML ({exc}).") from exc

    imported = suite != "arena"
    if imported:
        table = _require(meta, "imported", dict, where)
        for key in ("source", "commit", "file"):
            _require(table, key, str, f"{where} [imported]")
    title = _require(meta, "title", str, where)
    category = _require(meta, "category", str, where)
    if category not in CATEGORIES:
        raise ProblemError(f"{where}: the field 'category' is {category!r}; use one of {', '.join(CATEGORIES)}.")
    if suite == "arena" and not problem_id.startswith(category + "/"):
        raise ProblemError(
            f"{where}: the folder is under {problem_id.split('/')[0]!r} but 'category' says "
            f"{category!r}; move the folder or fix the field."
        )
    version = _require(meta, "version", int, where)
    if version < 1:
        raise ProblemError(f"{where}: the field 'version' must be 1 or more.")
    source = _require(meta, "source", dict, where)
    codebase = _require(source, "codebase", str, f"{where} [source]")
    function = _require(source, "function", str, f"{where} [source]")

    world_sizes = tuple(_require(meta, "world_sizes", list, where))
    if not world_sizes or any(not isinstance(w, int) or isinstance(w, bool) or w < 1 for w in world_sizes):
        raise ProblemError(f"{where}: the field 'world_sizes' must be a non-empty list of positive integers.")

    presets_table = _require(meta, "presets", dict, where)
    presets: dict[str, Preset] = {}
    for name in PRESETS:
        if name not in presets_table:
            raise ProblemError(f"{where}: [presets.{name}] is missing; every problem needs 'small' and 'bench'.")
        p = presets_table[name]
        pw = f"{where} [presets.{name}]"
        dtype = _require(p, "dtype", str, pw)
        if dtype not in DTYPES:
            raise ProblemError(f"{pw}: the field 'dtype' is {dtype!r}; use one of {', '.join(DTYPES)}.")
        params = {k: v for k, v in p.items() if k != "dtype"}
        for k, v in params.items():
            if not isinstance(v, (int, float, str, bool)):
                raise ProblemError(f"{pw}: the size parameter '{k}' must be a number, string or boolean.")
        presets[name] = Preset(name=name, dtype=dtype, params=params)

    tol_table = _require(meta, "tolerance", dict, where)
    tolerances: dict[str, Tolerance] = {}
    for dtype, t in tol_table.items():
        tw = f"{where} [tolerance.{dtype}]"
        if dtype not in DTYPES:
            raise ProblemError(f"{tw}: {dtype!r} is not a known dtype; use one of {', '.join(DTYPES)}.")
        atol = _require(t, "atol", (int, float), tw)
        rtol = _require(t, "rtol", (int, float), tw)
        if atol < 0 or rtol < 0:
            raise ProblemError(f"{tw}: tolerances cannot be negative.")
        tolerances[dtype] = Tolerance(float(atol), float(rtol))
    for p in presets.values():
        if p.dtype not in tolerances:
            raise ProblemError(f"{where}: preset '{p.name}' uses {p.dtype} but [tolerance.{p.dtype}] is missing.")

    hard = _optional_line(meta, "hard", HARD_MAX_CHARS, where)
    communication = _optional_line(meta, "communication", HARD_MAX_CHARS, where)
    tags = _tags(meta, where)

    roofline = _require(meta, "roofline", dict, where)
    for term in ROOFLINE_TERMS + tuple(t for t in OPTIONAL_ROOFLINE_TERMS if t in roofline):
        expr = _require(roofline, term, (str, int, float), f"{where} [roofline]")
        for p in presets.values():
            for w in world_sizes:
                try:
                    value = evaluate_expression(str(expr), {**p.params, "W": w, "E": element_size(p.dtype)})
                except ProblemError as exc:
                    raise ProblemError(f"{where} [roofline] {term}: {exc}") from exc
                except Exception as exc:  # a formula that divides by zero or mistypes a name
                    raise ProblemError(
                        f"{where} [roofline] {term}: {expr!r} fails for preset {p.name}, W={w}: {exc}"
                    ) from exc
                if value < 0:
                    raise ProblemError(f"{where} [roofline] {term}: {expr!r} is negative for preset {p.name}.")
    unknown = set(roofline) - set(ROOFLINE_TERMS) - set(OPTIONAL_ROOFLINE_TERMS)
    if unknown:
        raise ProblemError(
            f"{where} [roofline]: unknown terms {sorted(unknown)}; use "
            f"{', '.join(ROOFLINE_TERMS + OPTIONAL_ROOFLINE_TERMS)}."
        )

    reference_source = (folder / "reference.py").read_text()
    try:
        tree = ast.parse(reference_source)
    except SyntaxError as exc:
        raise ProblemError(f"{problem_id}/reference.py: syntax error at line {exc.lineno}: {exc.msg}.") from exc
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if imported:
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for fn in IMPORTED_REFERENCE_FUNCTIONS if imported else REFERENCE_FUNCTIONS:
        if fn not in defined:
            raise ProblemError(
                f"{problem_id}/reference.py: the function '{fn}' is missing; a reference defines "
                f"solution(*inputs), make_inputs(...) and oracle(...)."
            )
    statement = (folder / "README.md").read_text()
    if not statement.strip():
        raise ProblemError(f"{problem_id}/README.md: the statement is empty.")

    return Problem(
        id=problem_id,
        path=folder,
        title=title,
        category=category,
        version=version,
        codebase=codebase,
        function=function,
        world_sizes=world_sizes,
        presets=presets,
        tolerances=tolerances,
        roofline={k: str(v) for k, v in roofline.items()},
        statement=statement,
        content_hash=content_hash(folder),
        suite=suite,
        extra={k: v for k, v in meta.items() if k in ("summary", "tags", "imported")},
        hard=hard,
        tags=tags,
        communication=communication,
    )


def _optional_line(meta: Mapping[str, Any], key: str, max_chars: int, where: str) -> str:
    """An optional one-line string field (``hard``, ``communication``): no line breaks, at most max_chars."""
    if key not in meta:
        return ""
    value = meta[key]
    if not isinstance(value, str):
        raise ProblemError(f"{where}: the field '{key}' must be str, not {type(value).__name__} ({value!r}).")
    value = value.strip()
    if not value or "\n" in value or "\r" in value:
        raise ProblemError(f"{where}: the field '{key}' must be one non-empty line.")
    if len(value) > max_chars:
        raise ProblemError(
            f"{where}: the field '{key}' is {len(value)} characters; keep it to {max_chars} (one short line)."
        )
    return value


def _tags(meta: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """The optional ``tags`` field: a list of short lower-case strings such as "inter-node"."""
    if "tags" not in meta:
        return ()
    value = meta["tags"]
    if not isinstance(value, list):
        raise ProblemError(f"{where}: the field 'tags' must be a list of strings, not {type(value).__name__}.")
    for tag in value:
        if not isinstance(tag, str) or len(tag) > TAG_MAX_CHARS or not _TAG.match(tag):
            raise ProblemError(
                f"{where}: the field 'tags' holds {tag!r}; each tag is a short string of lower-case "
                f"letters, digits and '-' (at most {TAG_MAX_CHARS} characters), e.g. \"inter-node\"."
            )
    if len(set(value)) != len(value):
        raise ProblemError(f"{where}: the field 'tags' repeats a tag.")
    return tuple(value)


def discover(root: Path = PROBLEMS_ROOT) -> dict[str, Problem]:
    """Every problem folder under ``root`` (any folder holding a problem.toml), validated."""
    problems: dict[str, Problem] = {}
    for toml_path in sorted(Path(root).glob("*/*/problem.toml")):
        problem = load_problem(toml_path.parent, root)
        problems[problem.id] = problem
    return problems


def suites_root() -> Path:
    """Where imported suites live: ``$ARENA_SUITES_DIR``, default ``<repo>/var/suites`` (not in git)."""
    return Path(os.environ.get(SUITES_ENV) or PROBLEMS_ROOT.parent / "var" / "suites").resolve()


def suite_name_error(name: str) -> str | None:
    """Why ``name`` cannot name an imported suite (it would collide with built-in ids), or None."""
    if not _SUITE_NAME.match(name):
        return f"suite name {name!r} must be lower-case letters, digits, '-' or '_'"
    if name in CATEGORIES or name == "arena":
        return f"suite name {name!r} is taken by the built-in suite; choose another (e.g. 'pkb')"
    return None


def imported_suites(root: Path | None = None) -> list[str]:
    """Names of the imported suites under ``root`` (default :func:`suites_root`): folders with a suite.toml."""
    root = Path(root) if root is not None else suites_root()
    names = []
    for marker in sorted(root.glob(f"*/{SUITE_FILE}")):
        error = suite_name_error(marker.parent.name)
        if error:
            raise ProblemError(f"{marker}: {error}.")
        names.append(marker.parent.name)
    return names


def discover_suites(root: Path | None = None) -> dict[str, Problem]:
    """Every problem of every imported suite under ``root`` (default :func:`suites_root`), validated."""
    root = Path(root).resolve() if root is not None else suites_root()
    problems: dict[str, Problem] = {}
    for suite in imported_suites(root):
        for toml_path in sorted((root / suite).glob("*/problem.toml")):
            problem = load_problem(toml_path.parent, root, suite=suite)
            problems[problem.id] = problem
    return problems


@functools.cache
def catalogue() -> dict[str, Problem]:
    """The built-in suite and every imported suite, validated once per process."""
    return {**discover(PROBLEMS_ROOT), **discover_suites()}


def clear_caches() -> None:
    """Forget what :func:`catalogue` and :func:`get` read (after an import, or when ARENA_SUITES_DIR changes)."""
    catalogue.cache_clear()
    get.cache_clear()


@functools.cache
def get(problem_id: str) -> Problem:
    """One problem by id, validated on its own, so one broken folder elsewhere cannot stop an evaluation."""
    head = problem_id.split("/", 1)[0]
    if head not in CATEGORIES and suite_name_error(head) is None:
        root = suites_root()
        folder = (root / problem_id).resolve()
        if (root / head / SUITE_FILE).is_file() and root in folder.parents and (folder / "problem.toml").is_file():
            return load_problem(folder, root, suite=head)
    folder = (PROBLEMS_ROOT / problem_id).resolve()
    if PROBLEMS_ROOT not in folder.parents or not (folder / "problem.toml").is_file():
        known = ", ".join(
            sorted(p.parent.relative_to(PROBLEMS_ROOT).as_posix() for p in PROBLEMS_ROOT.glob("*/*/problem.toml"))[:8]
        )
        raise ProblemError(
            f"unknown problem {problem_id!r}; known problems include {known} (run `arena problems` for the full list)."
        )
    return load_problem(folder, PROBLEMS_ROOT)


def read_paths(problem: Problem) -> list[Path]:
    """What the processes running ``problem``'s reference read outside the repository: for an imported problem its
    suite folder and the checkout (the reference imports its siblings from there), which the judge's sandbox binds
    read-only; [] for built-in problems."""
    if not problem.imported:
        return []
    suite = problem.path.parent
    try:
        checkout = Path(tomllib.loads((suite / SUITE_FILE).read_text())["checkout"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return [suite]
    return [suite, checkout]


@dataclass(frozen=True)
class Sized:
    """What one evaluation needs of a problem, read in one call (:func:`sized`): the evaluator's stages take these
    fields and never look the problem up again (docs/architecture.md, "One evaluation's path")."""

    problem: Problem
    imported: Mapping[str, Any] | None  # where an imported problem came from; None for a built-in one
    params: dict[str, Any]  # the preset's size parameters with the overrides
    dtype: str  # the preset's dtype
    roofline_terms: dict[str, float] | None  # Problem.roofline_terms at this size and world size
    roofline_failure: Exception | None  # what computing those terms raised, raised again where the roofline is used
    suites_root: Path | None  # where the imported suites live, for an imported problem
    read_paths: tuple[Path, ...]  # what its reference reads outside the repository (:func:`read_paths`)


def sized(problem_id: str, preset: str, world_size: int, overrides: Mapping[str, Any] | None) -> Sized:
    """``problem_id`` at ``preset`` with ``overrides``, on ``world_size`` ranks. Raises what :func:`get` and
    :meth:`Problem.params` raise."""
    problem = get(problem_id)
    imported = problem.imported
    params = problem.params(preset, overrides)
    terms: dict[str, float] | None = None
    failure: Exception | None = None
    try:
        terms = problem.roofline_terms(world_size, preset, overrides)
    except Exception as exc:  # a formula that fails at this size: the evaluation reports it where it used to
        failure = exc
    return Sized(
        problem,
        imported,
        params,
        problem.presets[preset].dtype,
        terms,
        failure,
        suites_root() if imported else None,
        tuple(read_paths(problem)),
    )
