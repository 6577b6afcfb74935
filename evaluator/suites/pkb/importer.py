"""Reading a ParallelKernelBench checkout and writing it as an imported suite (`arena import-pkb`)."""

from __future__ import annotations

import ast
import concurrent.futures
import datetime as dt
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from problems.registry import (
    CATEGORIES,
    SUITE_FILE,
    ProblemError,
    clear_caches,
    get,
    load_problem,
    suite_name_error,
    suites_root,
)

from evaluator.suites.pkb.evaluate import record_probe
from evaluator.suites.pkb.probe import decide
from evaluator.suites.pkb import (
    BACKENDS,
    DEFAULT_SUITE,
    GENERATOR,
    IMPORT_PROFILE,
    INPUTS_FILE,
    PRESETS,
    REFERENCE_DIR,
    REFERENCE_NAME,
    SOURCE,
    TOLERANCE,
    WORLD_SIZES,
    toml_str,
)


# Category from the name's words, first rule that matches wins (so "matmul_all_reduce" is tensor-parallel and
# "moe_all_to_all" expert-parallel); a name that matches none is filed under non-llm and the report says so.
CATEGORY_RULES: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (c, frozenset(words.split()))
    for c, words in (
        ("pipeline", "pipeline pp 1f1b gpipe stage stages microbatch microbatches"),
        ("expert-parallel", "moe expert experts ep dispatch combine router routing gating"),
        ("vocab-parallel", "vocab logits logit logprob logprobs cross entropy crossentropy grpo ppo rlhf"),
        ("sequence-parallel", "sequence seq sp context cp ulysses attention attn flash kv"),
        ("data-parallel", "fsdp zero zero1 zero2 zero3 ddp dp data gradient gradients grad grads optimizer adam"),
        (
            "tensor-parallel",
            "tp tensor matmul gemm linear mlp column row colwise rowwise layernorm rmsnorm norm "
            "embedding megatron qkv ffn",
        ),
        (
            "non-llm",
            "fft sort sorting graph gnn conv conv2d convolution stencil halo knn nbody jacobi heat spmv sparse "
            "histogram prefix scan bfs pagerank particle particles geometry image sinkhorn",
        ),
        (
            "collectives",
            "all_reduce all_gather reduce_scatter all_to_all send_recv all reduce allreduce gather allgather "
            "scatter reducescatter broadcast bcast alltoall to send recv sendrecv barrier p2p permute shift",
        ),
    )
)
assert all(c in CATEGORIES for c, _ in CATEGORY_RULES)


def infer_category(name: str) -> tuple[str, str]:
    """(category, the word that decided it, or "default") from a PKB name such as ``matmul_all_reduce``."""
    words = [w for w in re.split(r"[_\W]+", name.lower()) if w]
    phrases = ["_".join(words[i : i + n]) for n in (3, 2) for i in range(len(words) - n + 1)]
    for category, keys in CATEGORY_RULES:
        for w in phrases + words:
            if w in keys:
                return category, w
    return "non-llm", "default"


@dataclass
class ImportedEntry:
    problem_id: str
    file: str
    category: str
    category_rule: str
    version: int
    inputs: str = "undecided"
    reason: str = ""


@dataclass
class ImportReport:
    checkout: Path
    suite_dir: Path | None = None
    suite: str = DEFAULT_SUITE
    commit: str = "unknown"
    problems: list[ImportedEntry] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        if self.errors:
            return "\n".join([f"arena import-pkb: refused {self.checkout}:"] + [f"  {e}" for e in self.errors])
        lines = [
            f"Imported {len(self.problems)} {SOURCE} problem(s) from {self.checkout} (commit "
            f"{self.commit[:12]}) into {self.suite_dir} as suite '{self.suite}':"
        ]
        width = max((len(p.problem_id) for p in self.problems), default=0)
        for p in self.problems:
            guess = " (category guessed: no keyword matched)" if p.category_rule == "default" else ""
            reason = f" — {p.reason}" if p.reason and p.inputs != "randomized" else ""
            lines.append(f"  {p.problem_id:{width}s}  v{p.version}  {p.category:17s} inputs: {p.inputs}{reason}{guess}")
        for s in self.skipped:
            lines.append(f"  skipped {s}")
        for w in self.warnings:
            lines.append(f"  note: {w}")
        lines.append(
            "Evaluate one with `arena eval --problem <id> --solution FILE`; run "
            "`python manage.py load_problems` to show them on the portal."
        )
        return "\n".join(lines)


class CheckoutError(ValueError):
    pass


def _defines(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == name for a in node.names):
            return True
    return False


def _parse(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise CheckoutError(f"{path} cannot be parsed as Python ({exc})") from None


def _validate_checkout(root: Path) -> tuple[list[tuple[int, str, Path]], list[str]]:
    """The checkout's reference files as (number, name, path), and the files skipped with why; raises
    CheckoutError naming what is missing when ``root`` is not a PKB checkout."""
    shape = (
        f"a {SOURCE} checkout has {REFERENCE_DIR}/<id>_<name>.py reference files and {INPUTS_FILE} "
        f"defining {GENERATOR}(rank, world_size, problem_id, base_shape, dtype, trial, device)"
    )
    if not root.is_dir():
        raise CheckoutError(f"{root} is not a directory; {shape}")
    ref_dir = root / REFERENCE_DIR
    if not ref_dir.is_dir():
        raise CheckoutError(f"{ref_dir} is missing; {shape}")
    inputs = root / INPUTS_FILE
    if not inputs.is_file():
        raise CheckoutError(f"{inputs} is missing; {shape}")
    if not _defines(_parse(inputs), GENERATOR):
        raise CheckoutError(f"{inputs} defines no {GENERATOR}; {shape}")
    found: list[tuple[int, str, Path]] = []
    skipped: list[str] = []
    numbers: dict[int, str] = {}
    for path in sorted(ref_dir.glob("*.py")):
        m = REFERENCE_NAME.match(path.name)
        if not m:
            if path.name != "__init__.py":
                skipped.append(f"{REFERENCE_DIR}/{path.name}: not named <id>_<name>.py")
            continue
        number, name = int(m["number"]), m["name"]
        try:
            tree = _parse(path)
        except CheckoutError as exc:
            skipped.append(f"{REFERENCE_DIR}/{path.name}: {exc}")
            continue
        if not _defines(tree, "solution"):
            skipped.append(f"{REFERENCE_DIR}/{path.name}: defines no `solution`")
            continue
        if number in numbers:
            raise CheckoutError(f"{ref_dir} has two references numbered {number}: {numbers[number]} and {path.name}")
        numbers[number] = path.name
        found.append((number, name, path))
    if not found:
        raise CheckoutError(
            f"{ref_dir} holds no usable <id>_<name>.py reference file defining `solution`"
            + (f" ({'; '.join(skipped[:5])})" if skipped else "")
        )
    return sorted(found), skipped


def checkout_commit(root: Path) -> tuple[str, bool]:
    """(HEAD commit, whether reference/ or utils/ have uncommitted changes) when ``root`` is the top of a git
    repository; ("unknown", False) otherwise."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if not top or Path(top).resolve() != root.resolve():
        return "unknown", False
    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown", False
    dirty = bool(git("status", "--porcelain", "--", REFERENCE_DIR, "utils"))
    return commit, dirty


def _title(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


_TOML_HEADER = (
    f"# Written by `arena import-pkb` from a {SOURCE} checkout; re-run the import rather than editing this file."
)


def _problem_toml(
    number: int,
    name: str,
    file_rel: str,
    file_sha: str,
    inputs_sha: str,
    commit: str,
    suite: str,
    category: str,
    rule: str,
    version: int,
) -> str:
    files = ", ".join(toml_str(f"{number}_{name}_{b}.py") for b in BACKENDS)
    presets = "".join(
        f'\n[presets.{preset}]\ndtype = "{dtype}"\nbase_shape = "{shape}"\n'
        f'inputs = "randomized"  # the evaluator sets this per run: "randomized" or "original" (docs/pkb.md)\n'
        for preset, (dtype, shape) in PRESETS.items()
    )
    tolerances = "".join(
        f"\n[tolerance.{dtype}]\natol = {TOLERANCE}\nrtol = {TOLERANCE}\n"
        for dtype in sorted({d for d, _ in PRESETS.values()})
    )
    # The template's lines are the generated problem.toml's, whose bytes are part of the problem's content hash.
    return f"""{_TOML_HEADER}
title = {toml_str(f"{_title(name)} ({SOURCE} {number})")}
category = "{category}"
version = {version}
summary = {
        toml_str(
            f"{SOURCE} problem {number} ({name}), imported at commit {commit[:12]}; evaluated against "
            f"its own reference on randomized inputs where the reference accepts them."
        )
    }
world_sizes = [{", ".join(map(str, WORLD_SIZES))}]
tags = ["imported", "{suite}"]

[imported]
source = "{SOURCE}"
suite = "{suite}"
commit = "{commit}"
number = {number}
name = {toml_str(name)}
file = {toml_str(file_rel)}
file_sha256 = "{file_sha}"
inputs_file = "{INPUTS_FILE}"
inputs_sha256 = "{inputs_sha}"
category_rule = {toml_str(rule)}
solution_files = [{files}]

[source]
codebase = {toml_str(f"{SOURCE} (imported at commit {commit[:12]})")}
function = {toml_str(f"{file_rel}: solution")}
{presets}{tolerances}
[roofline]
# Imported problems carry no byte or FLOP model: results show timings and speedups without a roofline.
link_bytes_per_rank = "0"
hbm_bytes_per_rank = "0"
flops_per_rank = "0"
"""


def _statement(number: int, name: str, file_rel: str, commit: str, category: str, rule: str) -> str:
    how = (
        "inferred from the word '" + rule + "' in its name"
        if rule != "default"
        else "a guess: no word of its name matched a category"
    )
    small, bench = PRESETS["small"], PRESETS["bench"]
    return f"""# {_title(name)} ({SOURCE} problem {number})

Imported by `arena import-pkb` from a {SOURCE} checkout at commit `{commit[:12]}`. The reference is
`{file_rel}` in that checkout: this project does not hold its code, and evaluations load it from there.

**Signature:** `solution(*inputs)`, the same as the reference's `solution`; it runs on every rank with the
process group up and the rank's device current. A solution file may keep the checkout's name:
{", ".join(f"`{number}_{name}_{b}.py`" for b in BACKENDS)}.

**Inputs (per rank):** the tuple that the checkout's `{INPUTS_FILE}` builds for problem {number}, with base
shape {bench[1]} in {bench[0]} on GPU profiles ({small[1]} in {small[0]} on the CPU profiles). Each trial
replaces every floating-point input with fresh random values of the same shape and dtype (the same values on
every rank where the checkout gives every rank the same tensor), so a solution cannot pass by returning what
constant inputs would give. Where the reference itself fails on random values, the checkout's original inputs
are used instead; every result says which inputs it used.

**Correct:** on every rank, every output matches the reference's within atol = rtol = {TOLERANCE:g}, as in
{SOURCE}; inputs must not be modified.

**Category:** {category} ({how}). **Roofline:** none (no byte or FLOP model comes with imported problems).
"""


_ADAPTER = '''"""Adapter written by `arena import-pkb` for {source} problem {number} ({file}).

It holds none of the checkout's code: problems/imported.py loads the reference and the input generator from the
checkout named in ../suite.toml, after checking that they still have the sha256 recorded in problem.toml.
"""

from pathlib import Path

from problems.imported import ImportedProblem

_problem = ImportedProblem(Path(__file__).resolve().parent)
solution = _problem.reference_solution()


def make_inputs(rank, world_size, seed, device, dtype, base_shape, inputs):
    return _problem.make_inputs(rank, world_size, seed, device, dtype, base_shape, inputs)
'''


def _is_generated_suite(folder: Path) -> bool:
    try:
        return tomllib.loads((folder / SUITE_FILE).read_text()).get("generated_by") == "arena import-pkb"
    except (OSError, tomllib.TOMLDecodeError):
        return False


def _previous(folder: Path) -> dict[str, dict[str, Any]]:
    """What a previous import of this suite recorded per problem folder, to carry versions forward."""
    out = {}
    for toml_path in folder.glob("*/problem.toml"):
        try:
            meta = tomllib.loads(toml_path.read_text())
            out[toml_path.parent.name] = {"version": int(meta["version"]), **meta["imported"]}
        except (OSError, KeyError, ValueError, tomllib.TOMLDecodeError):
            continue
    return out


def import_checkout(
    path: Path | str,
    into: Path | str | None = None,
    *,
    probe: bool = True,
    probe_profile: str = IMPORT_PROFILE,
    jobs: int | None = None,
) -> ImportReport:
    """Writes the imported suite for the checkout at ``path`` into ``into`` (default ``$ARENA_SUITES_DIR/pkb``;
    the folder's name is the suite's name) and, with ``probe``, decides on ``probe_profile`` which inputs each
    problem is evaluated on. Nothing is written when the checkout is refused (``report.ok`` is False)."""
    root = Path(path).expanduser().resolve()
    target = Path(into).expanduser().resolve() if into else suites_root() / DEFAULT_SUITE
    report = ImportReport(checkout=root, suite=target.name)
    error = suite_name_error(target.name)
    if error:
        report.errors.append(f"--into {target}: {error}")
        return report
    if target.exists() and not _is_generated_suite(target):
        report.errors.append(
            f"{target} exists and is not a suite written by `arena import-pkb`; choose another "
            f"--into folder (its name becomes the suite's name)"
        )
        return report
    try:
        references, report.skipped = _validate_checkout(root)
    except CheckoutError as exc:
        report.errors.append(str(exc))
        return report
    report.commit, dirty = checkout_commit(root)
    if report.commit == "unknown":
        report.warnings.append(
            f"{root} is not the top of a git repository, so the commit is recorded as 'unknown'; "
            f"problem hashes still follow the files' contents"
        )
    elif dirty:
        report.warnings.append(
            f"{root} has uncommitted changes under {REFERENCE_DIR}/ or utils/; the commit "
            f"{report.commit[:12]} does not describe them, the recorded file hashes do"
        )
    from problems.imported import sha256_file

    inputs_sha = sha256_file(root / INPUTS_FILE)
    previous = _previous(target) if target.exists() else {}
    stage = target.parent / f".{target.name}.importing-{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        (stage / SUITE_FILE).write_text(
            f"# Written by `arena import-pkb`; the registry reads the suite's problems from the folders beside it.\n"
            f'generated_by = "arena import-pkb"\nsource = "{SOURCE}"\nsuite = "{target.name}"\n'
            f'checkout = {toml_str(str(root))}\ncommit = "{report.commit}"\ndirty = {str(dirty).lower()}\n'
            f'imported_at = "{dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}"\n'
        )
        for number, name, ref in references:
            folder_name = f"{number}_{name}"
            rel = f"{REFERENCE_DIR}/{ref.name}"
            file_sha = sha256_file(ref)
            category, rule = infer_category(name)
            old = previous.get(folder_name)
            version = 1
            if old:
                same = old.get("file_sha256") == file_sha and old.get("inputs_sha256") == inputs_sha
                version = old["version"] if same else old["version"] + 1
            folder = stage / folder_name
            folder.mkdir()
            (folder / "problem.toml").write_text(
                _problem_toml(
                    number, name, rel, file_sha, inputs_sha, report.commit, target.name, category, rule, version
                )
            )
            (folder / "README.md").write_text(_statement(number, name, rel, report.commit, category, rule))
            (folder / "reference.py").write_text(_ADAPTER.format(source=SOURCE, number=number, file=rel))
            report.problems.append(ImportedEntry(f"{target.name}/{folder_name}", rel, category, rule, version))
        # Swap the new suite in: a reader sees the old one or the new one, never half of one.
        old_dir = target.parent / f".{target.name}.old-{os.getpid()}"
        if target.exists():
            target.rename(old_dir)
        stage.rename(target)
        shutil.rmtree(old_dir, ignore_errors=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    report.suite_dir = target
    clear_caches()
    for entry in report.problems:  # the registry's own validation, on the suite where it now lives
        try:
            load_problem(target / entry.problem_id.split("/", 1)[1], target.parent, suite=target.name)
        except ProblemError as exc:
            report.errors.append(f"generated {entry.problem_id} is invalid: {exc}")
    if report.errors:
        return report
    registered = target.parent == suites_root()
    if not registered:
        report.warnings.append(
            f"the registry reads suites from {suites_root()}; set ARENA_SUITES_DIR={target.parent} "
            f"(on the portal and on every worker) to use this suite"
        )
    if probe and registered:
        _probe_all(report, probe_profile, jobs)
    elif probe:
        for entry in report.problems:
            entry.reason = "not probed: the suite is outside ARENA_SUITES_DIR; decided at evaluation"
    else:
        for entry in report.problems:
            entry.reason = "not probed (--no-probe): decided at evaluation"
    return report


def _probe_all(report: ImportReport, profile: str, jobs: int | None) -> None:
    from evaluator.contract.profiles import get_profile

    preset = get_profile(profile).preset
    workers = jobs or max(1, min(8, (os.cpu_count() or 2) // 2))
    if get_profile(profile).device == "cuda":
        workers = 1  # each run takes all of the profile's GPUs

    def one(entry: ImportedEntry) -> None:
        try:
            entry.inputs, entry.reason, _ = decide(entry.problem_id, profile)
        except Exception as exc:  # a probe that breaks leaves the problem to be decided at evaluation
            entry.inputs, entry.reason = "undecided", f"probe failed: {type(exc).__name__}: {exc}"
        record_probe(get(entry.problem_id).path, profile, preset, entry.inputs, entry.reason)

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, report.problems))
