"""ParallelKernelBench (PKB) interoperability: ``arena import-pkb PATH [--into DIR]`` (docs/pkb.md).

A PKB checkout that the user has holds ``reference/<id>_<name>.py`` files, each exporting ``solution(*inputs)``
built on torch.distributed, and ``utils/input_output_tensors.py`` whose ``create_input_tensor`` builds a rank's
inputs. This module reads such a checkout and writes an *imported suite* (default ``$ARENA_SUITES_DIR/pkb``):
``suite.toml`` (where the checkout is, which commit) and one problem folder per reference file, holding a
generated ``problem.toml``, a generated statement and a small adapter ``reference.py`` that loads the checkout's
files by absolute path at evaluation time (``problems/imported.py``). None of the checkout's code or text is
copied. The registry then finds the problems as ``pkb/<id>_<name>`` (``problems.registry.get``/``catalogue``).

Inputs. Because some PKB inputs are constants, imported problems are evaluated on *randomized* inputs (every
floating-point input replaced by seeded random values; see ``problems/imported.py``) unless the reference
itself fails on them, in which case the checkout's *original* inputs are used and every result says so. The
decision comes from a trusted run of the reference alone (no user code loaded; NaN/Inf outputs count as a
failure), on randomized inputs and, if they fail, on original inputs:
  - at import, on ``cpu-gloo-2`` (CPU, gloo, 2 ranks, the ``small`` preset), written to each problem's
    ``probe.toml``; a reference that cannot run on the CPU at all leaves the problem ``undecided``;
  - at evaluation, on the evaluation's own profile, when nothing conclusive was recorded, or when a
    randomized evaluation ended in ``runtime_error``/``timeout`` (the trusted run then tells whether the
    reference or the solution failed). What an evaluation learns is recorded in ``probe.toml`` too.
``probe.toml`` is not part of the content hash, so a portal and a worker that imported the same commit agree
on problem hashes whatever their hosts could run.
"""

from __future__ import annotations

import ast
import concurrent.futures
import dataclasses
import datetime as dt
import json
import os
import posixpath
import re
import shutil
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from problems.registry import (CATEGORIES, SUITE_FILE, Problem, ProblemError, clear_caches, get, load_problem,
                               suite_name_error, suites_root)

SOURCE = "ParallelKernelBench"
DEFAULT_SUITE = "pkb"
BACKENDS = ("cuda", "triton", "parallelkittens")
REFERENCE_DIR = "reference"
INPUTS_FILE = "utils/input_output_tensors.py"
GENERATOR = "create_input_tensor"
REFERENCE_NAME = re.compile(r"^(?P<number>\d+)_(?P<name>[A-Za-z0-9][A-Za-z0-9_]*)\.py$")
TOLERANCE = 1e-2  # PKB's own absolute and relative tolerance
WORLD_SIZES = (2, 4, 8)
# The checkout's default base shape and dtype on GPUs; a smaller float32 size for the CPU profiles.
PRESETS = {"small": ("float32", "256x256"), "bench": ("bfloat16", "1024x1024")}
PROBE_FILE = "probe.toml"
IMPORT_PROFILE = "cpu-gloo-2"
PROBE_SEED = 20_240_601  # fixed, so two hosts importing the same commit probe the same inputs
PROBE_TIMEOUTS = {"setup": 90.0, "correctness": 90.0, "timing": 10.0}
ORIGINAL_LABEL = "original (reference fails on random inputs)"

# Category from the name's words, first rule that matches wins (so "matmul_all_reduce" is tensor-parallel and
# "moe_all_to_all" expert-parallel); a name that matches none is filed under non-llm and the report says so.
CATEGORY_RULES: tuple[tuple[str, frozenset[str]], ...] = tuple((c, frozenset(words.split())) for c, words in (
    ("pipeline", "pipeline pp 1f1b gpipe stage stages microbatch microbatches"),
    ("expert-parallel", "moe expert experts ep dispatch combine router routing gating"),
    ("vocab-parallel", "vocab logits logit logprob logprobs cross entropy crossentropy grpo ppo rlhf"),
    ("sequence-parallel", "sequence seq sp context cp ulysses attention attn flash kv"),
    ("data-parallel", "fsdp zero zero1 zero2 zero3 ddp dp data gradient gradients grad grads optimizer adam"),
    ("tensor-parallel", "tp tensor matmul gemm linear mlp column row colwise rowwise layernorm rmsnorm norm "
                        "embedding megatron qkv ffn"),
    ("non-llm", "fft sort sorting graph gnn conv conv2d convolution stencil halo knn nbody jacobi heat spmv sparse "
                "histogram prefix scan bfs pagerank particle particles geometry image sinkhorn"),
    ("collectives", "all_reduce all_gather reduce_scatter all_to_all send_recv all reduce allreduce gather allgather "
                    "scatter reducescatter broadcast bcast alltoall to send recv sendrecv barrier p2p permute shift"),
))
assert all(c in CATEGORIES for c, _ in CATEGORY_RULES)


def infer_category(name: str) -> tuple[str, str]:
    """(category, the word that decided it, or "default") from a PKB name such as ``matmul_all_reduce``."""
    words = [w for w in re.split(r"[_\W]+", name.lower()) if w]
    phrases = ["_".join(words[i:i + n]) for n in (3, 2) for i in range(len(words) - n + 1)]
    for category, keys in CATEGORY_RULES:
        for w in phrases + words:
            if w in keys:
                return category, w
    return "non-llm", "default"


# -- the report --------------------------------------------------------------------------------------------


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
        lines = [f"Imported {len(self.problems)} {SOURCE} problem(s) from {self.checkout} (commit "
                 f"{self.commit[:12]}) into {self.suite_dir} as suite '{self.suite}':"]
        width = max((len(p.problem_id) for p in self.problems), default=0)
        for p in self.problems:
            guess = " (category guessed: no keyword matched)" if p.category_rule == "default" else ""
            reason = f" — {p.reason}" if p.reason and p.inputs != "randomized" else ""
            lines.append(f"  {p.problem_id:{width}s}  v{p.version}  {p.category:17s} inputs: {p.inputs}{reason}{guess}")
        for s in self.skipped:
            lines.append(f"  skipped {s}")
        for w in self.warnings:
            lines.append(f"  note: {w}")
        lines.append("Evaluate one with `arena eval --problem <id> --solution FILE`; run "
                     "`python manage.py load_problems` to show them on the portal.")
        return "\n".join(lines)


class CheckoutError(ValueError):
    pass


# -- reading a checkout ------------------------------------------------------------------------------------


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
    shape = (f"a {SOURCE} checkout has {REFERENCE_DIR}/<id>_<name>.py reference files and {INPUTS_FILE} "
             f"defining {GENERATOR}(rank, world_size, problem_id, base_shape, dtype, trial, device)")
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
        raise CheckoutError(f"{ref_dir} holds no usable <id>_<name>.py reference file defining `solution`"
                            + (f" ({'; '.join(skipped[:5])})" if skipped else ""))
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


# -- writing the suite -------------------------------------------------------------------------------------


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _title(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _problem_toml(number: int, name: str, file_rel: str, file_sha: str, inputs_sha: str, commit: str,
                  suite: str, category: str, rule: str, version: int) -> str:
    files = ", ".join(_toml_str(f"{number}_{name}_{b}.py") for b in BACKENDS)
    presets = "".join(
        f'\n[presets.{preset}]\ndtype = "{dtype}"\nbase_shape = "{shape}"\n'
        f'inputs = "randomized"  # the evaluator sets this per run: "randomized" or "original" (docs/pkb.md)\n'
        for preset, (dtype, shape) in PRESETS.items())
    tolerances = "".join(f"\n[tolerance.{dtype}]\natol = {TOLERANCE}\nrtol = {TOLERANCE}\n"
                         for dtype in sorted({d for d, _ in PRESETS.values()}))
    return f"""# Written by `arena import-pkb` from a {SOURCE} checkout; re-run the import rather than editing this file.
title = {_toml_str(f"{_title(name)} ({SOURCE} {number})")}
category = "{category}"
version = {version}
summary = {_toml_str(f"{SOURCE} problem {number} ({name}), imported at commit {commit[:12]}; evaluated against "
                     f"its own reference on randomized inputs where the reference accepts them.")}
world_sizes = [{", ".join(map(str, WORLD_SIZES))}]
tags = ["imported", "{suite}"]

[imported]
source = "{SOURCE}"
suite = "{suite}"
commit = "{commit}"
number = {number}
name = {_toml_str(name)}
file = {_toml_str(file_rel)}
file_sha256 = "{file_sha}"
inputs_file = "{INPUTS_FILE}"
inputs_sha256 = "{inputs_sha}"
category_rule = {_toml_str(rule)}
solution_files = [{files}]

[source]
codebase = {_toml_str(f"{SOURCE} (imported at commit {commit[:12]})")}
function = {_toml_str(f"{file_rel}: solution")}
{presets}{tolerances}
[roofline]
# Imported problems carry no byte or FLOP model: results show timings and speedups without a roofline.
link_bytes_per_rank = "0"
hbm_bytes_per_rank = "0"
flops_per_rank = "0"
"""


def _statement(number: int, name: str, file_rel: str, commit: str, category: str, rule: str) -> str:
    how = "inferred from the word '" + rule + "' in its name" if rule != "default" else \
        "a guess: no word of its name matched a category"
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


def import_checkout(path: Path | str, into: Path | str | None = None, *, probe: bool = True,
                    probe_profile: str = IMPORT_PROFILE, jobs: int | None = None) -> ImportReport:
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
        report.errors.append(f"{target} exists and is not a suite written by `arena import-pkb`; choose another "
                             f"--into folder (its name becomes the suite's name)")
        return report
    try:
        references, report.skipped = _validate_checkout(root)
    except CheckoutError as exc:
        report.errors.append(str(exc))
        return report
    report.commit, dirty = checkout_commit(root)
    if report.commit == "unknown":
        report.warnings.append(f"{root} is not the top of a git repository, so the commit is recorded as 'unknown'; "
                               f"problem hashes still follow the files' contents")
    elif dirty:
        report.warnings.append(f"{root} has uncommitted changes under {REFERENCE_DIR}/ or utils/; the commit "
                               f"{report.commit[:12]} does not describe them, the recorded file hashes do")
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
            f"checkout = {_toml_str(str(root))}\ncommit = \"{report.commit}\"\ndirty = {str(dirty).lower()}\n"
            f'imported_at = "{dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}"\n')
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
            (folder / "problem.toml").write_text(_problem_toml(number, name, rel, file_sha, inputs_sha, report.commit,
                                                               target.name, category, rule, version))
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
        report.warnings.append(f"the registry reads suites from {suites_root()}; set ARENA_SUITES_DIR={target.parent} "
                               f"(on the portal and on every worker) to use this suite")
    if probe and registered:
        _probe_all(report, probe_profile, jobs)
    elif probe:
        for entry in report.problems:
            entry.reason = "not probed: the suite is outside ARENA_SUITES_DIR; decided at evaluation"
    else:
        for entry in report.problems:
            entry.reason = "not probed (--no-probe): decided at evaluation"
    return report


# -- which inputs: the trusted probe -----------------------------------------------------------------------

# Appended to the checkout's reference source to make the stand-in that a trusted run evaluates: the reference
# itself, as a solution, refusing non-finite outputs. It imports nothing of this project, so it passes the
# evaluator's static checks like any honest solution would.
_PROBE_WRAPPER = """

# --- appended by the evaluator (evaluator/pkb.py): the reference above, refusing NaN/Inf outputs ---
import torch as _arena_torch

_arena_reference_solution = solution


def solution(*inputs):
    out = _arena_reference_solution(*inputs)
    for t in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(t, _arena_torch.Tensor) and (t.is_floating_point() or t.is_complex()) and t.numel() \\
                and not bool(_arena_torch.isfinite(t).all()):
            raise FloatingPointError("the reference gives NaN or Inf on these inputs")
    return out
"""


def _probe_source(problem: Problem) -> str:
    """The stand-in's source: the checkout's reference file (read from the checkout, never stored here) plus
    the wrapper above."""
    from problems.imported import CheckoutChanged, ImportedProblem

    bound = ImportedProblem(problem.path)
    changed = bound.changed()
    if changed:
        raise CheckoutChanged(changed)
    return bound.reference_file.read_text(encoding="utf-8") + _PROBE_WRAPPER


@dataclass(frozen=True)
class ProbeOutcome:
    accepted: bool | None  # None: the run could not tell (the reference could not be loaded or run here)
    reason: str
    seconds: float


def probe_reference(problem_id: str, profile: str, inputs: str, timeouts: dict[str, float] | None = None
                    ) -> ProbeOutcome:
    """Runs the imported reference alone (no user code) on ``inputs`` ("randomized" or "original") on
    ``profile``: accepted when it runs, gives finite outputs and agrees with itself."""
    from evaluator.host.evaluate import evaluate
    from evaluator.contract.spec import EvalSpec

    started = time.monotonic()
    spec = EvalSpec(problem_id=problem_id, solution_source=_probe_source(get(problem_id)),
                    profile=profile, solution_name="reference_probe.py", trials=2, measure_timing=False,
                    seed=PROBE_SEED, params={"inputs": inputs}, timeouts=dict(timeouts or PROBE_TIMEOUTS))
    doc = evaluate(spec, imported_inner=True)
    verdict, message = doc.get("verdict"), (doc.get("message") or "")[:300]
    seconds = round(time.monotonic() - started, 3)
    if verdict == "passed":
        return ProbeOutcome(True, "", seconds)
    if verdict in ("runtime_error", "timeout", "wrong_output"):
        return ProbeOutcome(False, f"{verdict}: {message}", seconds)
    return ProbeOutcome(None, f"{verdict}: {message}", seconds)


def decide(problem_id: str, profile: str, timeouts: dict[str, float] | None = None) -> tuple[str, str, float]:
    """("randomized" | "original" | "undecided", why, seconds) from trusted reference-only runs on ``profile``."""
    rnd = probe_reference(problem_id, profile, "randomized", timeouts)
    if rnd.accepted:
        return "randomized", "", rnd.seconds
    if rnd.accepted is None:
        return "undecided", f"the reference could not be run on {profile} ({rnd.reason})", rnd.seconds
    orig = probe_reference(problem_id, profile, "original", timeouts)
    seconds = rnd.seconds + orig.seconds
    if orig.accepted:
        return "original", f"the reference fails on random inputs ({rnd.reason})", seconds
    return "undecided", (f"on {profile} the reference fails on original inputs too ({orig.reason}); "
                         f"decided on the evaluation's profile"), seconds


def read_probes(problem: Problem) -> dict[str, dict[str, Any]]:
    try:
        return tomllib.loads((problem.path / PROBE_FILE).read_text()).get("profiles", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def record_probe(folder: Path, profile: str, preset: str, inputs: str, reason: str) -> None:
    """Adds or replaces one profile's decision in ``probe.toml`` (atomically; best effort)."""
    path = folder / PROBE_FILE
    try:
        entries = tomllib.loads(path.read_text()).get("profiles", {}) if path.is_file() else {}
    except (OSError, tomllib.TOMLDecodeError):
        entries = {}
    entries[profile] = {"inputs": inputs, "reason": reason, "preset": preset,
                        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    text = ["# Which inputs this problem's reference accepts, per hardware profile, from trusted runs of the",
            "# reference alone (docs/pkb.md). Not part of the problem's content hash; safe to delete.", ""]
    for name, e in sorted(entries.items()):
        text.append(f"[profiles.{_toml_str(name)}]")
        text += [f"{k} = {_toml_str(str(v))}" for k, v in e.items()]
        text.append("")
    tmp = path.with_name(f".{PROBE_FILE}.{os.getpid()}")
    try:
        tmp.write_text("\n".join(text))
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)


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


def recorded_decision(problem: Problem, profile: str) -> tuple[str | None, str]:
    """A conclusive recorded decision, this profile's first, then any other profile's (a reference that
    rejects random values rejects them whatever the size); (None, "") when there is none."""
    probes = read_probes(problem)
    ordered = [profile] + sorted(p for p in probes if p != profile)
    for name in ordered:
        e = probes.get(name) or {}
        if e.get("inputs") in ("randomized", "original"):
            where = "at import" if name == IMPORT_PROFILE else "by an earlier evaluation"
            return e["inputs"], f"decided {where} on {name}" + (f": {e['reason']}" if e.get("reason") else "")
    return None, ""


# -- evaluation --------------------------------------------------------------------------------------------

_DECIDED_HERE: dict[tuple[str, str, str], tuple[str, str]] = {}


def evaluate_imported(spec, problem: Problem, workdir_parent: str | None = None,
                      keep_workdir: bool = False) -> dict[str, Any]:
    """``runner.evaluate`` for a problem of an imported suite: picks randomized or original inputs (see the
    module docstring), evaluates, and says in ``doc["problem"]["inputs"]`` which inputs were used."""
    from evaluator.host.evaluate import evaluate
    from problems.imported import ImportedProblem

    started = time.monotonic()
    changed = ImportedProblem(problem.path).changed()
    if changed:
        from evaluator.contract.result import Verdict, empty_document

        doc = empty_document()
        doc["problem"] = {"id": problem.id, "version": problem.version, "content_hash": problem.content_hash,
                          "suite": problem.suite, "imported": dict(problem.imported or {})}
        doc["verdict"], doc["message"] = Verdict.INFRA_ERROR.value, f"this worker cannot evaluate {problem.id}: {changed}"
        return doc

    probe_seconds = 0.0
    requested = (spec.params or {}).get("inputs")
    probed_now = False
    if requested:
        mode, why = requested, "requested by the evaluation spec"
    else:
        mode, why = recorded_decision(problem, spec.profile)
        key = (problem.id, problem.content_hash, spec.profile)
        if mode is None and key in _DECIDED_HERE:
            mode, why = _DECIDED_HERE[key]
        if mode is None:
            mode, reason, probe_seconds = decide(problem.id, spec.profile, spec.timeouts)
            probed_now = True
            if mode == "undecided":  # the reference cannot run even on original inputs: let the run show it
                mode, why = "randomized", f"undecided: {reason}"
            else:
                why = f"decided at evaluation on {spec.profile}" + (f": {reason}" if reason else "")
                _DECIDED_HERE[key] = (mode, why)
                record_probe(problem.path, spec.profile, _preset_of(spec.profile), mode, reason)

    def run(inputs: str) -> dict[str, Any]:
        inner = dataclasses.replace(spec, params={**(spec.params or {}), "inputs": inputs})
        return evaluate(inner, workdir_parent, keep_workdir, imported_inner=True)

    doc = run(mode)
    if mode == "randomized" and not requested and not probed_now and doc.get("verdict") in ("runtime_error", "timeout"):
        # Did the solution fail, or the reference on random values? Only a run without the solution can tell.
        outcome = probe_reference(problem.id, spec.profile, "randomized", spec.timeouts)
        probe_seconds += outcome.seconds
        if outcome.accepted is False:
            mode, why = "original", f"decided at evaluation on {spec.profile}: the reference fails on random " \
                                    f"inputs ({outcome.reason})"
            _DECIDED_HERE[(problem.id, problem.content_hash, spec.profile)] = (mode, why)
            record_probe(problem.path, spec.profile, _preset_of(spec.profile), mode, outcome.reason)
            doc = run("original")
    doc["problem"]["inputs"] = "randomized" if mode == "randomized" else (
        ORIGINAL_LABEL if not requested else "original (requested)")
    doc["problem"]["inputs_decision"] = why
    doc["problem"]["imported"] = dict(problem.imported or {})
    doc["problem"]["roofline"] = "none: imported problems carry no byte or FLOP model"
    doc["roofline"] = None
    doc.setdefault("phases", {})
    if probe_seconds:
        doc["phases"]["input_probe"] = round(probe_seconds, 3)
    doc["phases"]["total"] = round(time.monotonic() - started, 3)
    return doc


def _preset_of(profile: str) -> str:
    from evaluator.contract.profiles import get_profile

    return get_profile(profile).preset


def rank_read_paths(problem: Problem) -> list[Path]:
    """What the rank processes evaluating ``problem`` read outside the repository: for an imported problem its
    suite folder and the checkout (the reference imports its siblings from there). A sandbox that runs ranks as
    an unprivileged user must check these are readable too; [] for built-in problems."""
    if not problem.imported:
        return []
    suite = problem.path.parent
    try:
        checkout = Path(tomllib.loads((suite / SUITE_FILE).read_text())["checkout"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return [suite]
    return [suite, checkout]


# -- solution file names (uploads, model runs) ------------------------------------------------------------


def _pkb_folder(problem_id: str) -> str | None:
    """``12_all_gather`` for a problem of an imported PKB suite, else None."""
    try:
        problem = get(problem_id)
    except ProblemError:
        return None
    meta = problem.imported
    if not meta or meta.get("source") != SOURCE:
        return None
    return problem_id.split("/", 1)[1]


def solution_filename_ok(problem_id: str, filename: str) -> str | None:
    """None when ``filename`` may be uploaded as a solution of ``problem_id``; otherwise the message to show.

    For an imported PKB problem ``pkb/<id>_<name>`` the checkout's own names ``<id>_<name>_<backend>.py``
    (backend cuda, triton or parallelkittens) are accepted, and so is any name that does not look like a PKB
    solution name (``solution.py``). A PKB name of another problem or an unknown backend is refused, since it
    most likely means the wrong file or the wrong problem. Other problems: always None (not this helper's
    business).
    """
    name = posixpath.basename((filename or "").replace("\\", "/")).strip()
    folder = _pkb_folder(problem_id)
    if folder is None or not name:
        return None
    number = folder.split("_", 1)[0]
    expected = ", ".join(f"{folder}_{b}.py" for b in BACKENDS)
    if name.startswith(folder + "_") and name.endswith(".py"):
        backend = name[len(folder) + 1:-3]
        if backend in BACKENDS:
            return None
        return (f"{name!r} names the backend {backend!r}; {SOURCE} solution files for {problem_id} are named "
                f"{expected} (or use any other name, such as solution.py)")
    m = re.match(r"^(\d+)_", name)
    if m and name.endswith(".py"):
        if m.group(1) != number:
            return (f"{name!r} is named for {SOURCE} problem {m.group(1)}, but this upload is for {problem_id} "
                    f"(problem {number}); pick problem {m.group(1)}, or rename the file to one of {expected}")
        return f"{name!r} does not match {problem_id}; name it one of {expected} (or solution.py)"
    return None


def problem_for_solution_filename(filename: str, problem_ids: Iterable[str] | None = None,
                                  suite: str = DEFAULT_SUITE) -> str | None:
    """The imported problem a PKB solution file name belongs to (``12_all_gather_cuda.py`` -> ``pkb/12_all_gather``),
    among ``problem_ids`` (default: the catalogue's problems of ``suite``); None when it names none of them."""
    name = posixpath.basename((filename or "").replace("\\", "/")).strip()
    if problem_ids is None:
        from problems.registry import catalogue

        problem_ids = [pid for pid, p in catalogue().items() if p.suite == suite]
    for pid in problem_ids:
        s, _, folder = pid.partition("/")
        if s == suite and any(name == f"{folder}_{b}.py" for b in BACKENDS):
            return pid
    return None
