"""Checks a solution's source before anything runs: flags what a reader of the ranking should know, refuses what the
rules forbid.

Flags (the solution still runs): calls into torch.distributed / NCCL collectives (``uses_nccl``, with the names
found), dynamic imports, ``exec``/``eval``, finalizers, plain ctypes use.
Refusals (verdict ``rejected``, nothing is launched), each with the line and a sentence saying why:
  - importing the harness or the problems (``evaluator``, ``problems``, ``__main__``);
  - reaching into loaded modules through ``sys.modules``, or replacing attributes of torch, time, os, sys,
    builtins, gc, random, json (``torch.Tensor.__eq__ = ...``, ``setattr(time, ...)``), or re-registering PyTorch's
    own operators (``torch.library.Library("aten", ...)``);
  - walking frames or the heap to find the harness's state (``sys._getframe``, ``inspect.stack``, ``f_back``,
    ``tb_frame``, ``__globals__``, ``gc.get_objects``), tracing/profiling/audit hooks, signal handlers, gc callbacks;
  - ctypes memory tricks (``ctypes.pythonapi``, ``memmove``, ``string_at``, ``from_address``), ``/proc/*/mem``,
    and views of memory by address without ctypes (torch's storage over a pointer, numpy's ``ctypeslib``, an
    array interface the solution defines);
  - ending the process (``sys.exit``, ``os._exit``), forking, signalling other processes, starting programs;
  - network modules (``socket``, ``urllib``, ``requests`` ...), and paths of other evaluations (``arena-eval-``).
These are a first filter for honest mistakes and obvious cheats; the sandbox and the separate judge
(docs/threat-model.md) catches what a static reading cannot see (obfuscated names, code built at run time).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from evaluator.analysis import kernelguard_layer
from evaluator.contract.backends import Declaration, read_declaration

COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_gather",
        "all_gather_into_tensor",
        "_all_gather_base",
        "all_gather_object",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "all_to_all",
        "all_to_all_single",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "gather",
        "scatter",
        "send",
        "recv",
        "isend",
        "irecv",
        "batch_isend_irecv",
        "barrier",
        "monitored_barrier",
        "all_reduce_coalesced",
        "all_gather_coalesced",
        "scatter_object_list",
        "gather_object",
        "send_object_list",
        "recv_object_list",
    }
)
_COLLECTIVE_MODULES = (
    "torch.distributed",
    "torch.distributed.distributed_c10d",
    "torch.distributed._functional_collectives",
)
_COLLECTIVE_PREFIXES = (
    "torch.ops._c10d_functional.",
    "torch.ops.c10d.",
    "torch.ops.c10d_functional.",
    "torch.cuda.nccl.",
)
_PG_METHODS = frozenset(
    {
        "allreduce",
        "allgather",
        "reduce_scatter",
        "alltoall",
        "alltoall_base",
        "_allgather_base",
        "_reduce_scatter_base",
        "allreduce_coalesced",
    }
)

HARNESS_ROOTS = ("evaluator", "problems", "__main__", "arena_solution", "arena_problem")
# Read-only helpers every reference uses to make its inputs: a solution that starts as a copy of the reference may
# keep importing them (writing into them is refused like any other harness module).
# The backends' runtime helpers (evaluator/rank/backends, defined in problems/backends; docs/backends/) are part of
# what a solution may import, under either name.
PUBLIC_HELPERS = ("problems.common", "problems.backends", "evaluator.rank.backends")
NETWORK_MODULES = frozenset(
    {
        "socket",
        "ssl",
        "urllib",
        "http",
        "requests",
        "httpx",
        "aiohttp",
        "ftplib",
        "smtplib",
        "telnetlib",
        "xmlrpc",
        "socketserver",
        "paramiko",
        "websocket",
        "websockets",
        "pycurl",
        "urllib3",
        "poplib",
        "imaplib",
        "nntplib",
    }
)
# Namespaces a solution may read but never write into.
PROTECTED = (
    "torch",
    "time",
    "os",
    "sys",
    "builtins",
    "gc",
    "random",
    "json",
    "hmac",
    "hashlib",
    "threading",
    "signal",
    "evaluator",
    "problems",
    "importlib",
)
# ... except these, which configure the compiler stacks a solution may legitimately use.
WRITABLE = ("torch._dynamo.config", "torch._inductor.config", "torch._functorch.config")

_FRAME_ATTRS = frozenset(
    {
        "f_back",
        "f_locals",
        "f_globals",
        "f_builtins",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "__globals__",
        "cell_contents",
        "gi_code",
        "f_code",
    }
)
_FRAME_CALLS = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "inspect.currentframe",
        "inspect.stack",
        "inspect.getouterframes",
        "inspect.getinnerframes",
        "inspect.trace",
        "traceback.walk_stack",
        "traceback.extract_stack",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    }
)
_HOOK_CALLS = frozenset(
    {
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "threading.settrace",
        "threading.setprofile",
        "threading.settrace_all_threads",
        "threading.setprofile_all_threads",
        "signal.signal",
        "signal.setitimer",
        "signal.alarm",
        "signal.set_wakeup_fd",
    }
)
_CTYPES_REFUSED = frozenset(
    {
        "ctypes.pythonapi",
        "ctypes.memmove",
        "ctypes.memset",
        "ctypes.string_at",
        "ctypes.wstring_at",
        "ctypes.cast",
        "ctypes.py_object",
        "ctypes.addressof",
        "ctypes.PyDLL",
        "ctypes.pydll",
        "_ctypes",
    }
)
_EXIT_CALLS = frozenset({"os._exit", "sys.exit", "exit", "quit", "os.abort", "builtins.exit", "builtins.quit"})
_PROCESS_CALLS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.setsid",
        "os.setpgid",
        "os.setpgrp",
        "os.setuid",
        "os.setgid",
        "os.seteuid",
        "os.setegid",
        "os.setreuid",
        "os.setregid",
        "os.setresuid",
        "os.setresgid",
        "os.system",
        "os.popen",
        "os.posix_spawn",
        "os.posix_spawnp",
        "os.pidfd_open",
        "signal.pthread_kill",
        "os.killpg",
        "os.register_at_fork",
    }
)
_PROCESS_MODULES = ("subprocess", "multiprocessing", "pty", "concurrent.futures.process")
_SENSITIVE_FOR_GETATTR = ("sys", "os", "gc", "inspect", "builtins", "ctypes", "importlib", "signal", "threading")
_PRIVATE_OPERATOR_NAMESPACES = (
    "aten",
    "prims",
    "prim",
    "c10d",
    "_c10d_functional",
    "c10d_functional",
    "symm_mem",
    "_dtensor",
    "profiler",
)
# Views of memory by address without ctypes: torch's storage over any address, numpy's view of a pointer, and an
# object that hands numpy, torch or CUDA libraries an address as its array interface.
_POINTER_VIEWS = ("._construct_storage_from_data_pointer", "ctypeslib.as_array")
_ARRAY_INTERFACES = frozenset({"__array_interface__", "__cuda_array_interface__", "__array_struct__"})
_MEM_PATH = re.compile(r"/proc/[^/\s]*/(mem|pagemap|kpageflags)\b|/dev/k?mem\b")


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass
class StaticReport:
    parsed: bool = True
    refusals: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    collectives: list[str] = field(default_factory=list)
    kernelguard: dict[str, Any] = field(default_factory=dict)  # the second layer's report (evaluator/kernelguard_layer)

    @property
    def uses_nccl(self) -> bool:
        return bool(self.collectives)

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    def message(self) -> str:
        first = self.refusals[0]
        more = f" (and {len(self.refusals) - 1} more)" if len(self.refusals) > 1 else ""
        return f"the static check refused the solution: {first}{more}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "parsed": self.parsed,
            "refusals": [str(f) for f in self.refusals],
            "rules": sorted({f.rule for f in self.refusals}),
            "notes": [str(f) for f in self.notes],
            "collectives": self.collectives,
            "kernelguard": self.kernelguard,
        }


def _startswith(name: str, roots: tuple[str, ...] | frozenset[str]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self._reads: set[int] = set()  # constants that only name an attribute read (getattr, hasattr)
        self.report = StaticReport()
        self._collectives: set[str] = set()

    # -- names ------------------------------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = self.qualname(node.args[0])
            return f"{base}.{node.args[1].value}" if base else None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            return node.args[0].value.split(".")[0]
        return None

    def refuse(self, rule: str, node: ast.AST, message: str) -> None:
        self.report.refusals.append(Finding(rule, getattr(node, "lineno", 0), message))

    def note(self, rule: str, node: ast.AST, message: str) -> None:
        self.report.notes.append(Finding(rule, getattr(node, "lineno", 0), message))

    def collect_aliases(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        self.aliases.setdefault(a.name.split(".")[0], a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        # One round of plain re-binding: `d = torch.distributed`, `ar = dist.all_reduce`.
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = self.qualname(node.value) if isinstance(node.value, (ast.Name, ast.Attribute)) else None
                if name and "." in name and _startswith(name, PROTECTED + ("ctypes", "inspect")):
                    self.aliases[node.targets[0].id] = name

    # -- imports ----------------------------------------------------------------------------------------------
    def check_module_name(self, node: ast.AST, module: str) -> None:
        if _startswith(module, PUBLIC_HELPERS):
            return
        if _startswith(module, HARNESS_ROOTS):
            self.refuse(
                "harness-import",
                node,
                f"imports {module}: the harness and the problems' internals are off "
                f"limits (the reference is what you replace, not what you call)",
            )
        elif module.split(".")[0] in NETWORK_MODULES:
            self.refuse("network", node, f"imports {module}: the evaluator has no network")
        elif _startswith(module, _PROCESS_MODULES):
            self.refuse(
                "process",
                node,
                f"imports {module}: a solution may not start or fork processes (builds go "
                f"through torch.utils.cpp_extension or Triton)",
            )
        elif module == "_ctypes":
            self.refuse("ctypes", node, "imports _ctypes: raw memory access is off limits")
        elif module == "ctypes":
            self.note("ctypes", node, "uses ctypes")

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.check_module_name(node, a.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.refuse("harness-import", node, "relative import: a solution is a single file")
        elif node.module:
            self.check_module_name(node, node.module)
            for a in node.names:
                self.check_name(node, f"{node.module}.{a.name}", imported=True)
        self.generic_visit(node)

    # -- names and attributes ---------------------------------------------------------------------------------
    def check_name(self, node: ast.AST, name: str, imported: bool = False, called: bool = False) -> None:
        if name in _FRAME_CALLS:
            self.refuse("introspection", node, f"uses {name}: walking frames or the heap reaches the harness's state")
        elif name in _HOOK_CALLS or name.startswith("sys.monitoring") or name == "gc.callbacks":
            self.refuse(
                "hooks",
                node,
                f"uses {name}: tracing, profiling, audit and signal hooks or gc callbacks would "
                f"run solution code inside the harness",
            )
        elif name in _CTYPES_REFUSED or name.endswith(".from_address") or name.endswith(".from_buffer"):
            self.refuse("ctypes", node, f"uses {name}: reading or writing memory by address is off limits")
        elif name.endswith(_POINTER_VIEWS) or name == "_construct_storage_from_data_pointer":
            self.refuse("memory", node, f"uses {name}: a view of memory by address is off limits")
        elif name in _EXIT_CALLS:
            self.refuse("exit", node, f"uses {name}: a solution must return its outputs, never end the process")
        elif name in _PROCESS_CALLS or name.startswith("os.exec") or name.startswith("os.spawn"):
            self.refuse("process", node, f"uses {name}: a solution may not fork, start or signal processes")
        elif name == "sys.modules":
            self.refuse(
                "sys-modules",
                node,
                "uses sys.modules: reaching into loaded modules can replace what the "
                "harness and the baseline use (only `name in sys.modules` is allowed)",
            )
        elif name in ("builtins.__dict__", "__builtins__") and not called:
            self.refuse("patching", node, f"uses {name}: the interpreter's built-ins are off limits")
        elif _startswith(
            name,
            (
                "torch._C._set_torch_function_mode",
                "torch._C._push_on_torch_function_stack",
                "torch._C._push_on_torch_dispatch_stack",
                "torch._C._set_dispatch_mode",
                "torch._C._dispatch_tls_set_dispatch_key_included",
                "torch._C._dispatch_tls_set_dispatch_key_excluded",
            ),
        ):
            self.refuse("dispatch", node, f"uses {name}: a global mode would intercept the harness's own operations")
        elif name.startswith("ctypes."):
            self.note("ctypes", node, f"uses {name}")
        self.check_collective(node, name)

    def check_collective(self, node: ast.AST, name: str) -> None:
        head, _, last = name.rpartition(".")
        if (
            (head in _COLLECTIVE_MODULES and last in COLLECTIVES)
            or _startswith(name, ())
            or any(name.startswith(p) and len(name) > len(p) for p in _COLLECTIVE_PREFIXES)
        ):
            self._collectives.add(name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _FRAME_ATTRS:
            self.refuse(
                "introspection",
                node,
                f"uses .{node.attr}: walking frames or function internals reaches the harness's state",
            )
        name = self.qualname(node)
        if name and isinstance(node.ctx, ast.Load):
            self.check_name(node, name)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            name = self.aliases.get(node.id, node.id)
            if name != node.id or node.id in ("exit", "quit", "__builtins__"):
                self.check_name(node, name)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        # `name in sys.modules` only asks whether something is loaded.
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and self.qualname(node.comparators[0]) == "sys.modules"
        ):
            self.visit(node.left)
            return
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in _ARRAY_INTERFACES and id(node) not in self._reads:
            self.refuse(
                "memory",
                node,
                f"names {node.value} other than to read it: an array interface of the solution's own hands a library "
                f"any address",
            )
        if isinstance(node.value, str):
            if "arena-eval-" in node.value:
                self.refuse("other-evaluations", node, "names another evaluation's working directory (arena-eval-*)")
            if _MEM_PATH.search(node.value):
                self.refuse("memory", node, f"names {node.value!r}: reading process memory is off limits")

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if exc is not None and self.qualname(exc) in ("SystemExit", "builtins.SystemExit", "KeyboardInterrupt"):
            self.refuse("exit", node, "raises SystemExit: a solution must return its outputs, never end the process")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in _ARRAY_INTERFACES:
            self.refuse(
                "memory",
                node,
                f"defines {node.name}: an array interface of the solution's own hands a library any address",
            )
        if node.name == "__del__":
            self.note("finalizer", node, "defines __del__: code that runs when the harness frees an object")
        self.generic_visit(node)

    # -- writes -----------------------------------------------------------------------------------------------
    def check_store(self, node: ast.AST, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.check_store(node, t)
            return
        if (
            isinstance(target, ast.Name)
            and target.id in _ARRAY_INTERFACES
            or (isinstance(target, ast.Attribute) and target.attr in _ARRAY_INTERFACES)
        ):
            self.refuse(
                "memory", node, "sets an array interface: one of the solution's own hands a library any address"
            )
        if isinstance(target, ast.Attribute):
            if target.attr in (
                "__code__",
                "__defaults__",
                "__kwdefaults__",
                "__closure__",
                "__class__",
                "__dict__",
                "__bases__",
                "__globals__",
            ):
                self.refuse("patching", node, f"assigns .{target.attr}: replacing what a function or object is")
                return
            owner = self.qualname(target.value)
            if owner and _startswith(owner, PROTECTED) and not _startswith(owner, WRITABLE):
                root = owner.split(".")[0]
                self.refuse(
                    "patching",
                    node,
                    f"assigns {owner}.{target.attr}: replacing parts of {root} changes how "
                    f"the harness or the baseline runs",
                )
        elif isinstance(target, ast.Subscript):
            owner = self.qualname(target.value)
            if owner in ("sys.modules", "builtins.__dict__", "__builtins__"):
                self.refuse("patching", node, f"writes into {owner}")
            elif (
                owner == "os.environ"
                and isinstance(target.slice, ast.Constant)
                and str(target.slice.value)
                in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
            ):
                self.refuse(
                    "multicast", node, f"sets {target.slice.value}: NVLink multicast must stay off on shared GPU hosts"
                )
            elif (
                isinstance(target.value, ast.Call)
                and isinstance(target.value.func, ast.Name)
                and target.value.func.id == "vars"
            ):
                self.refuse("patching", node, "writes into vars(...): replacing module or object attributes")

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self.check_store(node, t)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.check_store(node, node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.check_store(node, node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self.check_store(node, t)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = self.qualname(node.func)
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            self._reads.add(id(node.args[1]))
        if isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") and node.args:
            owner = self.qualname(node.args[0])
            if owner and _startswith(owner, PROTECTED) and not _startswith(owner, WRITABLE):
                self.refuse(
                    "patching",
                    node,
                    f"{node.func.id}({owner}, ...): replacing parts of "
                    f"{owner.split('.')[0]} changes how the harness or the baseline runs",
                )
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and not isinstance(node.args[1], ast.Constant)
        ):
            owner = self.qualname(node.args[0])
            if owner and owner.split(".")[0] in _SENSITIVE_FOR_GETATTR:
                self.refuse(
                    "obfuscation", node, f"getattr({owner}, <computed name>): hides which part of {owner} is used"
                )
        if func in ("importlib.import_module", "__import__", "importlib.__import__") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self.check_module_name(node, arg.value)
            else:
                self.note("dynamic-import", node, "imports a module whose name is computed at run time")
        if func in ("exec", "eval", "compile", "builtins.exec", "builtins.eval"):
            self.note("exec", node, f"calls {func}: code built at run time is only checked by the runtime guard")
        if func in ("os.kill",):
            target = node.args[0] if node.args else None
            if not (isinstance(target, ast.Call) and self.qualname(target.func) == "os.getpid"):
                self.refuse("process", node, "os.kill of another process: a solution may only signal itself")
        if func and _startswith(
            func,
            (
                "torch.library.Library",
                "torch.library.impl",
                "torch.library.register_kernel",
                "torch.library.register_fake",
                "torch.library.define",
            ),
        ):
            namespace = None
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                namespace = node.args[0].value.split("::")[0]
            if namespace in _PRIVATE_OPERATOR_NAMESPACES:
                self.refuse(
                    "operators",
                    node,
                    f"{func}({node.args[0].value!r}, ...): re-registering PyTorch's own "
                    f"operators changes how the harness and the baseline compute",
                )
        if func and func.startswith("weakref.finalize"):
            self.note("finalizer", node, "weakref.finalize: code that runs when the harness frees an object")
        if isinstance(node.func, ast.Attribute) and node.func.attr in _PG_METHODS and func is None:
            self._collectives.add(f"ProcessGroup.{node.func.attr}")
        self.generic_visit(node)

    def finish(self) -> StaticReport:
        self.report.collectives = sorted(self._collectives)
        seen: set[tuple[str, int, str]] = set()
        unique = []
        for f in self.report.refusals:
            key = (f.rule, f.line, f.message)
            if key not in seen:
                seen.add(key)
                unique.append(f)
        self.report.refusals = sorted(unique, key=lambda f: f.line)
        return self.report


# NVLink multicast (the CUDA driver's multicast objects, PTX's multi-memory instructions and PyTorch's operations
# on them, NVLS, the multicast pointers of PyTorch's symmetric memory and of ThunderKittens' parallel layouts, and
# ThunderKittens' multi-GPU barrier type and helpers built on multicast) can take a shared host's GPUs out of
# service; on profiles that forbid it (every shared host) it is refused wherever it appears, CUDA source in strings
# included. The names are assembled here so that this file itself does not spell them.
_MULTICAST = re.compile(
    "|".join(
        (
            "cu" + "Multicast",
            "multi" + "mem",
            "NVLS" + "_ENABLE",
            "multicast" + "_ptr",
            "multicast" + "_create",
            "multicast" + "_bind",
            r"\bmc" + r"_ptr",
            r"\bbarrier" + r"_t\s*<",
            r"\bsignal" + r"_all\b",
            r"kittens::barrier" + r"_all\b",
        )
    )
)


def _multicast_findings(source: str) -> list[Finding]:
    return [
        Finding(
            "multicast",
            source.count("\n", 0, m.start()) + 1,
            f"uses {m.group(0)!r}: NVLink multicast must stay off on the shared GPU hosts",
        )
        for m in _MULTICAST.finditer(source)
    ]


def _backend_findings(declaration: Declaration) -> list[Finding]:
    exc = declaration.error
    return [] if exc is None else [Finding("backend", exc.line, f"{exc} (docs/backends/)")]


def check(
    source: str,
    multicast_allowed: bool = False,
    filename: str | None = None,
    *,
    declaration: Declaration | None = None,
) -> StaticReport:
    """Reads ``source`` and returns what it flags and refuses. Source that does not parse is left to the ranks,
    which report it as a compile error. ``multicast_allowed`` is the hardware profile's (False on shared hosts);
    ``declaration`` is the solution's backend declaration as the evaluation's plan read it (evaluator/host/plan.py);
    without it, the declaration is read here from ``source`` and ``filename`` (its suffix; evaluator.contract.backends).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return StaticReport(parsed=False)
    checker = _Checker()
    checker.collect_aliases(tree)
    checker.visit(tree)
    report = checker.finish()
    if declaration is None:
        declaration = read_declaration(source, filename)
    extra = _backend_findings(declaration) + ([] if multicast_allowed else _multicast_findings(source))
    report.kernelguard, certain = kernelguard_layer.review(source)
    extra += [Finding(f"kernelguard:{rule}", 0, f"KernelGuard's rule {rule}: {evidence}") for rule, evidence in certain]
    # Ours first, by line; KernelGuard's (which name no line) after them.
    report.refusals = sorted(report.refusals + extra, key=lambda f: (f.line == 0, f.line))
    return report
