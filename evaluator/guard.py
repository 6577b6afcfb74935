"""The rank's runtime guard: an audit hook that refuses what the rules forbid, and a snapshot of everything the
harness and the baseline rely on, checked after every call into the solution.

Both are installed by the rank process before the solution is imported. They work at the level of the Python
interpreter: native code (a C/CUDA extension, a program the solution starts) bypasses audit hooks entirely, so
this is a referee, not a security sandbox — docs/threat-model.md says what contains native code and what does not.

The audit hook (``install``) refuses, and records so that catching the exception does not hide it:
  - opening files for writing, creating, renaming or deleting them outside the solution's own directories
    (the solution folder, its private temp and home, its own build cache);
  - reading anything inside another evaluation's working directory or another solution's build cache, any
    other process's ``/proc/<pid>`` entries, and process memory (``/proc/self/mem``, ``ctypes.string_at``);
  - sockets to or bound on anything but loopback, name lookups of other hosts, raw sockets, unix sockets
    outside the working directory;
  - forking the harness process, signalling other processes, running shell commands or network tools;
  - walking the interpreter's objects and threads (``gc.get_objects``/``get_referrers``, ``sys._current_frames``),
    tracing or profiling hooks, further audit hooks, replacing the code of functions the solution did not
    define, and changing the variables that keep NVLink multicast off.
The snapshot (``Integrity``) catches what audit events cannot see: replaced module attributes (``time.perf_counter``,
``torch.distributed.all_reduce``, the harness's own functions), methods added to or replaced on classes
(``torch.Tensor.__eq__``, ``torch.cuda.Event.elapsed_time``), swapped ``sys.modules`` entries, signal handlers,
gc callbacks, torch function/dispatch modes left active, and PyTorch operators re-registered with the dispatcher.
"""

from __future__ import annotations

import gc
import importlib
import ipaddress
import os
import signal
import socket
import sys
import threading
import types
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

# -- the audit hook --------------------------------------------------------------------------------------------

_realpath = os.path.realpath
_getpid = os.getpid
_fspath = os.fsdecode
_O_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# Programs whose only use from a kernel solution would be to reach the network.
_NETWORK_TOOLS = frozenset({"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "telnet",
                            "ftp", "git", "pip", "pip3", "apt", "apt-get"})
_ALLOWED_SOCKET_FAMILIES = frozenset({int(socket.AF_INET), int(socket.AF_INET6), int(socket.AF_UNIX)})


@dataclass(frozen=True)
class Policy:
    """What a rank may touch. Paths are absolute and resolved."""

    workdir: str
    write_roots: tuple[str, ...]
    # (parent, own child, prefix): the parent's other children whose names start with prefix ("" for all) belong to
    # other evaluations or other solutions; nothing inside them may be opened, listed or linked.
    private_siblings: tuple[tuple[str, str, str], ...] = ()
    protected_env: frozenset[str] = frozenset()
    solution_dir: str = ""
    # Where the code lives whose functions may not be given new code or defaults: the harness, the problems,
    # PyTorch and the standard library (other libraries, which rewrite their own functions, are left alone).
    protected_code: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, workdir: str, sandbox: dict[str, Any], protected_env: Iterable[str]) -> "Policy":
        real = _realpath(workdir)
        writes = tuple(_realpath(p) for p in sandbox.get("write_roots", [os.path.join(real, "solution")]))
        siblings = [(os.path.dirname(real), real, "arena-eval-")]
        cache = sandbox.get("cache_dir")
        if cache and sandbox.get("cache_root"):
            siblings.append((_realpath(sandbox["cache_root"]), _realpath(cache), ""))
        repo = os.path.dirname(os.path.dirname(_realpath(__file__)))
        code = (os.path.join(repo, "evaluator"), os.path.join(repo, "problems"),
                os.path.dirname(_realpath(torch.__file__)), os.path.dirname(_realpath(os.__file__)))
        return cls(workdir=real, write_roots=writes + ("/dev/null",), private_siblings=tuple(siblings),
                   protected_env=frozenset(protected_env), solution_dir=_realpath(os.path.join(real, "solution")),
                   protected_code=code)


class SandboxViolation(PermissionError):
    """Raised into the solution when the audit hook refuses an operation."""


_policy: Policy | None = None
_violations: list[str] = []
_state = threading.local()


def violations() -> list[str]:
    """Every refusal so far, in order, whether or not the solution caught the exception."""
    return list(_violations)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _resolve(path: Any) -> str | None:
    if isinstance(path, int) or path is None:
        return None
    try:
        return _realpath(_fspath(path))
    except (TypeError, ValueError, OSError):
        return None


def _refuse(message: str, exc: type[Exception] = SandboxViolation) -> None:
    _violations.append(message)
    raise exc(f"refused by the arena sandbox: {message}")


def _foreign(path: str, policy: Policy) -> str | None:
    """Why reading ``path`` is not allowed, or None."""
    for parent, own, prefix in policy.private_siblings:
        if _inside(path, parent) and path != parent and not _inside(path, own):
            first = path[len(parent.rstrip("/")) + 1:].split("/", 1)[0]
            if first.startswith(prefix):
                return f"{path} belongs to another evaluation or another solution"
    if path.startswith("/proc/"):
        part = path.split("/")[2]
        if part.isdigit() and int(part) != _getpid():
            return f"{path} belongs to another process"
        if path.endswith("/mem") or "/mem" in path.rsplit("/", 1)[-1]:
            return f"{path} is the harness process's memory"
    if path in ("/dev/mem", "/dev/kmem", "/dev/port"):
        return f"{path} is physical memory"
    return None


def _check_read(path_arg: Any, policy: Policy) -> None:
    path = _resolve(path_arg)
    if path is not None:
        why = _foreign(path, policy)
        if why:
            _refuse(f"reading {why}")


def _check_write(path_arg: Any, policy: Policy, what: str = "writing") -> None:
    path = _resolve(path_arg)
    if path is None:
        return
    why = _foreign(path, policy)
    if why:
        _refuse(f"{what} {why}")
    if not any(_inside(path, root) for root in policy.write_roots):
        _refuse(f"{what} {path}, outside the evaluation's working directory")


def _on_open(args: tuple, policy: Policy) -> None:
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    writing = isinstance(flags, int) and flags & _O_WRITE
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        writing = True
    if writing:
        _check_write(path, policy)
    else:
        _check_read(path, policy)


def _loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    if host in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _check_address(address: Any, policy: Policy, what: str) -> None:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        name = address.decode(errors="replace") if isinstance(address, bytes) else address
        if name.startswith("\0") or not name:
            _refuse(f"{what} the abstract unix socket {name!r}")
        path = _resolve(name)
        if path is None or not _inside(path, policy.workdir):
            _refuse(f"{what} the unix socket {name}, outside the evaluation's working directory")
        return
    if isinstance(address, tuple) and address:
        if not _loopback(address[0]):
            _refuse(f"{what} {address[0]}:{address[1] if len(address) > 1 else ''} (only loopback is allowed; "
                    f"the evaluator has no network)")


def _on_socket_new(args: tuple, policy: Policy) -> None:
    family = args[1] if len(args) > 1 else None
    kind = args[2] if len(args) > 2 else None
    if family is not None and int(family) not in _ALLOWED_SOCKET_FAMILIES:
        _refuse(f"opening a socket of address family {int(family)}")
    if kind is not None and int(kind) & 0xF == 3:  # SOCK_RAW
        _refuse("opening a raw socket")


def _on_lookup(args: tuple, policy: Policy) -> None:
    host = args[0] if args else None
    if host not in (None, "", b"") and not _loopback(host):
        _refuse(f"looking up the host name {host!r} (the evaluator has no network)")


def _on_env(args: tuple, policy: Policy) -> None:
    key = args[0] if args else b""
    name = key.decode(errors="replace") if isinstance(key, bytes) else str(key)
    if name in policy.protected_env:
        _refuse(f"changing {name}: NVLink multicast must stay off on shared GPU hosts")


def _on_kill(args: tuple, policy: Policy) -> None:
    pid = args[0] if args else None
    if pid != _getpid():
        _refuse(f"signalling process {pid}; a solution may only signal itself")


def _on_popen(args: tuple, policy: Policy) -> None:
    executable = args[0] if args else None
    argv = args[1] if len(args) > 1 else None
    names = []
    for item in (executable, argv[0] if isinstance(argv, (list, tuple)) and argv else argv):
        if isinstance(item, (str, bytes, os.PathLike)):
            names.append(os.path.basename(_fspath(item)).split()[0] if _fspath(item).strip() else "")
    for name in names:
        if name in _NETWORK_TOOLS:
            _refuse(f"running {name}, a network tool (the evaluator has no network)")


def _on_setattr(args: tuple, policy: Policy) -> None:
    target, name = (tuple(args) + (None, None))[:2]
    if isinstance(target, types.FunctionType) and name in ("__code__", "__defaults__", "__kwdefaults__",
                                                            "__globals__", "__closure__"):
        filename = target.__code__.co_filename
        path = _resolve(filename) or filename
        if any(_inside(path, root) for root in policy.protected_code):
            _refuse(f"replacing {name} of {getattr(target, '__module__', '?')}.{target.__qualname__}, "
                    f"a function of the harness, the problems, PyTorch or the standard library")


def _on_reflection(event: str) -> Any:
    def handler(args: tuple, policy: Policy) -> None:
        _refuse(f"{event}(): walking the interpreter's objects or threads reaches the harness's state")
    return handler


def _caller() -> str:
    """Where the audited call was made: the first frame outside this module, as its file's last three parts and
    line, so that a refusal caused by a library (not by the solution's own code) says which library it was."""
    frame = sys._getframe(1)
    here = _caller.__code__.co_filename
    while frame is not None and frame.f_code.co_filename == here:
        frame = frame.f_back
    if frame is None:
        return "an unknown place"
    return f"{'/'.join(frame.f_code.co_filename.split('/')[-3:])} line {frame.f_lineno}"


def _on_hook_change(event: str) -> Any:
    def handler(args: tuple, policy: Policy) -> None:
        _refuse(f"{event} (called from {_caller()}): tracing, profiling and audit hooks would run solution code "
                "inside the harness", RuntimeError)
    return handler


def _on_memory_read(event: str) -> Any:
    def handler(args: tuple, policy: Policy) -> None:
        _refuse(f"{event}: reading process memory by address")
    return handler


def _on_refused(event: str, why: str) -> Any:
    def handler(args: tuple, policy: Policy) -> None:
        _refuse(f"{event}: {why}")
    return handler


def _two_paths(first_read: bool) -> Any:
    def handler(args: tuple, policy: Policy) -> None:
        src = args[0] if args else None
        dst = args[1] if len(args) > 1 else None
        if first_read:
            _check_read(src, policy)
        else:
            _check_write(src, policy, "moving")
        _check_write(dst, policy, "creating")
    return handler


def _one_path(what: str) -> Any:
    def handler(args: tuple, policy: Policy) -> None:
        _check_write(args[0] if args else None, policy, what)
    return handler


def _listing(args: tuple, policy: Policy) -> None:
    _check_read(args[0] if args else ".", policy)


def _handlers() -> dict[str, Any]:
    return {
        "open": _on_open,
        "os.listdir": _listing, "os.scandir": _listing, "glob.glob": _listing, "glob.glob/2": _listing,
        "os.chdir": _listing,
        "os.mkdir": _one_path("creating"), "os.rmdir": _one_path("deleting"), "os.remove": _one_path("deleting"),
        "os.truncate": _one_path("truncating"), "os.chmod": _one_path("changing the mode of"),
        "os.chown": _one_path("changing the owner of"), "os.utime": _one_path("changing the times of"),
        "shutil.rmtree": _one_path("deleting"), "os.mkfifo": _one_path("creating"), "os.mknod": _one_path("creating"),
        "os.rename": _two_paths(first_read=False), "os.link": _two_paths(first_read=False),
        "os.symlink": _link_target,
        "socket.__new__": _on_socket_new,
        "socket.connect": _address("connecting to"), "socket.bind": _address("listening on"),
        "socket.sendto": _address("sending to"), "socket.sendmsg": _address("sending to"),
        "socket.getaddrinfo": _on_lookup, "socket.gethostbyname": _on_lookup, "socket.gethostbyname_ex": _on_lookup,
        "socket.gethostbyaddr": _on_lookup,
        "os.putenv": _on_env, "os.unsetenv": _on_env,
        "os.kill": _on_kill, "os.killpg": _on_refused("os.killpg", "signalling a process group"),
        "os.fork": _on_refused("os.fork", "a copy of the harness process could outlive the evaluation or forge its "
                                          "results"),
        "os.forkpty": _on_refused("os.forkpty", "a copy of the harness process could outlive the evaluation"),
        "os.system": _on_refused("os.system", "shell commands are not allowed"),
        "os.exec": _on_refused("os.exec", "replacing the harness process is not allowed"),
        "os.spawn": _on_refused("os.spawn", "use the build helpers (torch.utils.cpp_extension, Triton)"),
        "subprocess.Popen": _on_popen,
        "gc.get_objects": _on_reflection("gc.get_objects"), "gc.get_referrers": _on_reflection("gc.get_referrers"),
        "gc.get_referents": _on_reflection("gc.get_referents"),
        "sys._current_frames": _on_reflection("sys._current_frames"),
        "sys.settrace": _on_hook_change("sys.settrace"), "sys.setprofile": _on_hook_change("sys.setprofile"),
        "sys.addaudithook": _on_hook_change("sys.addaudithook"),
        "sys.monitoring.register_callback": _on_hook_change("sys.monitoring.register_callback"),
        "object.__setattr__": _on_setattr, "object.__delattr__": _on_setattr,
        "ctypes.string_at": _on_memory_read("ctypes.string_at"),
        "ctypes.wstring_at": _on_memory_read("ctypes.wstring_at"),
        "ctypes.cdata": _on_memory_read("ctypes from_address"),
    }


def _address(what: str) -> Any:
    def handler(args: tuple, policy: Policy) -> None:
        _check_address(args[1] if len(args) > 1 else None, policy, what)
    return handler


def _link_target(args: tuple, policy: Policy) -> None:
    _check_write(args[1] if len(args) > 1 else None, policy, "creating")


_HANDLERS: dict[str, Any] = {}

# Libraries that add an audit hook of their own when they are first imported (filelock 4 on Python >= 3.12, which
# torch.compile imports, registers a fork-safety hook). The guard imports them before arming, so their hook is in
# place before the refusal of further hooks starts and a solution that pulls them in later adds nothing.
LOADED_BEFORE_ARMING: tuple[str, ...] = ("filelock",)


def _hook(event: str, args: tuple) -> None:
    handler = _HANDLERS.get(event)
    if handler is None:
        return
    policy = _policy
    if policy is None or getattr(_state, "busy", False):
        return
    _state.busy = True
    try:
        handler(args, policy)
    finally:
        _state.busy = False


def install(policy: Policy) -> Callable[[], list[str]]:
    """Starts enforcing ``policy`` in this process and returns the accessor of the violations it records.

    Audit hooks cannot be removed. The hook and its handlers run on a private copy of this module's namespace, so
    a solution that rebinds this module's globals (``guard._policy = None``) neither disables the hook nor erases
    its record; the integrity snapshot reports the rebinding itself.
    """
    if _HANDLERS:
        raise RuntimeError("the sandbox policy is already installed")
    namespace = dict(globals())
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == __name__:
            namespace[name] = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__,
                                                 value.__closure__)
    namespace["_policy"] = policy
    namespace["_violations"] = []
    namespace["_state"] = threading.local()
    namespace["_HANDLERS"] = namespace["_handlers"]()
    _HANDLERS["installed"] = True  # marks this module; the live table is the private one
    for name in LOADED_BEFORE_ARMING:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    sys.addaudithook(namespace["_hook"])
    return namespace["violations"]


# -- the integrity snapshot ------------------------------------------------------------------------------------

_IGNORED_KEYS = frozenset({"__warningregistry__", "__cached__"})


def _functions_in(value: Any) -> list[types.FunctionType]:
    found: list[types.FunctionType] = []
    if isinstance(value, types.FunctionType):
        found.append(value)
    elif isinstance(value, (staticmethod, classmethod)):
        found.extend(_functions_in(value.__func__))
    elif isinstance(value, property):
        for f in (value.fget, value.fset, value.fdel):
            found.extend(_functions_in(f))
    return found


def _cells(f: types.FunctionType, missing: object) -> tuple:
    out = []
    for cell in f.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:
            out.append(missing)
    return tuple(out)


def snapshot(strict_modules: dict[str, types.ModuleType], loose_modules: dict[str, types.ModuleType],
             classes: dict[str, type], operators: Iterable[str] = (),
             protected_env: dict[str, str] | None = None,
             solution_files: Iterable[str] = ()) -> Callable[[], str | None]:
    """Takes the snapshot and returns ``check() -> None | what changed``.

    strict_modules: every key of the module's namespace, additions too (the harness's own modules, the reference);
    loose_modules: the callables, classes and submodules the module holds (torch, time, builtins: they grow lazily);
    classes: every key of the class's own namespace (a method added to a subclass shadows the inherited one), and
    every class defined in a strict module. Python functions found in any of them keep their code, defaults and
    closure. All state lives in the returned closure, which the harness holds in local variables.
    """
    with warnings.catch_warnings():  # touching deprecated attributes of torch while walking it warns
        warnings.simplefilter("ignore")
        return _snapshot(strict_modules, loose_modules, classes, operators, protected_env, solution_files)


def _snapshot(strict_modules: dict[str, types.ModuleType], loose_modules: dict[str, types.ModuleType],
              classes: dict[str, type], operators: Iterable[str], protected_env: dict[str, str] | None,
              solution_files: Iterable[str]) -> Callable[[], str | None]:
    missing = object()
    ignored = _IGNORED_KEYS
    classes = dict(classes)
    for label, module in strict_modules.items():
        for key, value in vars(module).items():
            if isinstance(value, type) and getattr(value, "__module__", None) == module.__name__:
                classes.setdefault(f"{label}.{key}", value)
    dicts: list[tuple[str, Any, dict[str, Any], bool]] = []
    for label, module in strict_modules.items():
        dicts.append((label, vars(module), {k: v for k, v in vars(module).items() if k not in ignored}, True))
    for label, module in loose_modules.items():
        snap = {k: v for k, v in vars(module).items() if callable(v) or isinstance(v, types.ModuleType)}
        dicts.append((label, vars(module), snap, False))
    for label, cls in classes.items():
        dicts.append((label, cls.__dict__, {k: v for k, v in cls.__dict__.items() if k not in ignored}, True))
    seen: dict[int, tuple[str, types.FunctionType]] = {}
    for label, _, snap, _ in dicts:
        for key, value in snap.items():
            for f in _functions_in(value):
                seen.setdefault(id(f), (f"{label}.{key}", f))
    functions = [(label, f, f.__code__, f.__defaults__, f.__kwdefaults__, _cells(f, missing))
                 for label, f in seen.values()]
    roots = ("torch", "evaluator", "problems", "time", "builtins", "__main__", "random", "json", "hmac", "os")
    module_names = {module.__name__ for module in strict_modules.values()}
    modules = {name: module for name, module in sys.modules.items()
               if name.split(".")[0] in roots or name in module_names}
    signals = {s: signal.getsignal(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)}
    gc_callbacks = list(gc.callbacks)
    operators = tuple(operators)
    dispatch = {op: torch._C._dispatch_dump(op) for op in operators}
    dispatch_tls = (repr(torch._C._dispatch_tls_local_include_set()),
                    repr(torch._C._dispatch_tls_local_exclude_set()))
    env = dict(protected_env or {})
    environ = os.environ
    benign = _pytorch_lazy_wrapper
    wrapper_codes = _disable_dynamo_codes()
    threads_before = {id(t) for t in threading.enumerate()}
    solution_files = tuple(os.path.realpath(f) for f in solution_files)
    sysmod, sig, gcmod, thr, torch_c = sys, signal, gc, threading, torch._C

    def check() -> str | None:
        # First pass: only dict methods, closure variables and `is`, so a rebound builtin or global cannot blind
        # it; once it passes, the builtins and globals the rest relies on are the originals.
        pending = []
        for label, live, snap, strict in dicts:
            for key, value in snap.items():
                current = live.get(key, missing)
                if current is not value:
                    if current is not missing and not strict and label.startswith("torch"):
                        pending.append((label, snap, key, value, current))  # decided once builtins are trusted
                        continue
                    verb = "replaced" if current is not missing else "removed"
                    return f"the solution {verb} {label}.{key}, which the harness or the baseline uses"
            if strict:
                extra = live.keys() - snap.keys() - ignored
                for key in extra:
                    return f"the solution added {label}.{key}, which changes how the harness or the baseline behaves"
        for label, snap, key, value, current in pending:
            if not benign(current, value, wrapper_codes):
                return f"the solution replaced {label}.{key}, which the harness or the baseline uses"
            # PyTorch wrapped its own function (torch._dynamo does so to torch.manual_seed when first imported):
            # follow the wrapper from now on.
            snap[key] = current
            functions.append((f"{label}.{key}", current, current.__code__, current.__defaults__,
                              current.__kwdefaults__, _cells(current, missing)))
        for label, f, code, defaults, kwdefaults, cells in functions:
            if f.__code__ is not code or f.__defaults__ is not defaults or f.__kwdefaults__ is not kwdefaults:
                return f"the solution replaced the code of {label}, which the harness or the baseline uses"
            if cells and any(a is not b for a, b in zip(_cells(f, missing), cells)):
                return f"the solution changed what {label} refers to, which the harness or the baseline uses"
        for name, module in modules.items():
            if sysmod.modules.get(name) is not module:
                return f"the solution replaced sys.modules[{name!r}]"
        for s, handler in signals.items():
            if sig.getsignal(s) is not handler:
                return (f"the solution installed a handler for {sig.Signals(s).name}: asynchronous code may not run "
                        f"inside the harness")
        if gcmod.callbacks != gc_callbacks:
            return "the solution added a gc callback: asynchronous code may not run inside the harness"
        if sysmod.gettrace() is not None or sysmod.getprofile() is not None:
            return "the solution left a trace or profile function installed"
        if getattr(thr, "_trace_hook", None) is not None or getattr(thr, "_profile_hook", None) is not None:
            return "the solution installed a trace or profile function for new threads"
        if torch_c._len_torch_function_stack() or torch_c._len_torch_dispatch_stack():
            return ("the solution left a torch function or dispatch mode active, which would intercept the harness's "
                    "own tensor operations")
        if (repr(torch_c._dispatch_tls_local_include_set()),
                repr(torch_c._dispatch_tls_local_exclude_set())) != dispatch_tls:
            return "the solution changed the dispatcher's thread-local key sets"
        for op, dump in dispatch.items():
            if torch_c._dispatch_dump(op) != dump:
                return f"the solution re-registered the PyTorch operator {op}, which the harness or the baseline uses"
        for key, value in env.items():
            if environ.get(key) != value:
                return f"the solution changed {key}: NVLink multicast must stay off on shared GPU hosts"
        for t in thr.enumerate():
            if id(t) not in threads_before and _solution_thread(t, solution_files):
                return (f"the solution left a Python thread running ({t.name}): asynchronous code may not run inside "
                        f"the harness")
        return None

    return check


def _disable_dynamo_codes() -> tuple[types.CodeType, ...]:
    """The code objects of the wrapper torch._disable_dynamo makes (its nested function), compared by identity."""
    compile_module = sys.modules.get("torch._compile")
    maker = getattr(compile_module, "_disable_dynamo", None)
    code = getattr(maker, "__code__", None)
    return tuple(c for c in (code.co_consts if code else ()) if isinstance(c, types.CodeType))


def _pytorch_lazy_wrapper(new: Any, old: Any, wrapper_codes: tuple[types.CodeType, ...]) -> bool:
    """Whether ``new`` is PyTorch's own torch._disable_dynamo wrapper around exactly ``old`` (torch._dynamo does
    ``torch.manual_seed = torch._disable_dynamo(torch.manual_seed)`` when it is first imported). The wrapper's code
    must be the very code object torch/_compile.py defines, and the function it calls the original."""
    if not isinstance(new, types.FunctionType) or not any(new.__code__ is c for c in wrapper_codes):
        return False
    cells = dict(zip(new.__code__.co_freevars, new.__closure__ or ()))
    fn = cells.get("fn")
    try:
        return fn is not None and fn.cell_contents is old
    except ValueError:
        return False


def _solution_thread(t: threading.Thread, solution_files: tuple[str, ...]) -> bool:
    """Whether a thread runs the solution's own code (library threads, like a compile pool's, are left alone)."""
    if not t.is_alive():
        return False
    candidates = [getattr(t, "_target", None), getattr(t, "function", None), getattr(type(t), "run", None)]
    for c in candidates:
        code = getattr(getattr(c, "__func__", c), "__code__", None)
        if code is not None and os.path.realpath(code.co_filename) in solution_files:
            return True
    return False


# Operators the harness's comparison, input generation and refills, and the baselines' collectives, go through.
HARNESS_OPERATORS = (
    "aten::sub.Tensor", "aten::abs", "aten::gt.Tensor", "aten::gt.Scalar", "aten::ne.Tensor", "aten::eq.Tensor",
    "aten::any", "aten::sum", "aten::isfinite", "aten::where.self", "aten::logical_and", "aten::logical_not",
    "aten::logical_or", "aten::bitwise_and.Tensor", "aten::bitwise_or.Tensor", "aten::bitwise_not",
    "aten::add.Tensor", "aten::mul.Tensor", "aten::mul.Scalar", "aten::equal", "aten::_local_scalar_dense",
    "aten::copy_", "aten::clone", "aten::_to_copy", "aten::empty.memory_format", "aten::empty_strided",
    "aten::zeros_like", "aten::randn", "aten::normal_", "aten::uniform_", "aten::random_.from", "aten::randint",
    "aten::stack", "aten::max", "aten::mm", "aten::matmul", "aten::cat", "aten::fill_.Scalar", "aten::zero_",
    "aten::view", "aten::reshape", "aten::detach", "aten::alias",
    "c10d::allreduce_", "c10d::allgather_", "c10d::_allgather_base_", "c10d::reduce_scatter_",
    "c10d::_reduce_scatter_base_", "c10d::broadcast_", "c10d::barrier", "c10d::alltoall_base_", "c10d::send",
    "c10d::recv_",
)


def existing_operators(names: Iterable[str]) -> tuple[str, ...]:
    known = set(torch._C._dispatch_get_all_op_names())
    return tuple(n for n in names if n in known)


class Refusal(Exception):
    """The solution did something the rules forbid; the verdict is ``rejected``."""
