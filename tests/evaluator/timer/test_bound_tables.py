"""What the engine calls through between the solution's return and its reply. libstdc++, libc10, libtorch and libpython
call other objects (and their own exported functions) through entries (.got.plt) in pages shared with their writable
data, which no seal covers. The engine keeps every such entry, sealed, once a rank is set up, and compares them as the
solution's calls return, before anything allocates: an entry re-pointed anywhere (code loaded afterwards, or another
function loaded before) ends the rank with ENGINE_ALTERED_EXIT; only an entry still at its lazy stub when kept (the
file's word plus the load base) may change, to a loaded function, as the loader binds it. The outputs' and inputs'
implementations must be torch's own dense ones before any of their virtual functions is called. Each case runs in a
fresh interpreter with a one-rank gloo group, as a rank does."""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import timer
from evaluator.host import sandbox

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the hook's trampoline is x86_64 code")

# Finds libstdc++'s lazily bound entries by reading its file (section headers, .rela.plt, .dynsym), as an attacker
# would, and makes an anonymous executable page that jumps on to a given address.
PROLOGUE = """
import ctypes, json, mmap, os, struct, torch, torch.distributed as dist
from evaluator import timer, wire
from evaluator.timer.protocol import open_engine
dist.init_process_group("gloo", init_method="file://{tmp}/store", rank=0, world_size=1)
engine = timer.load({engine!r})
read_fd, write_fd = os.pipe()
open_engine(engine, write_fd, dist.group.WORLD, torch.device("cpu"))
feed = wire.Slot.open({feed!r}, writable=True, pinned=False)
out = wire.Slot.open({out!r}, writable=True, pinned=False)
x = torch.randn(1000)
KEY = timer.mask_key()
def put(values):  # as the judge writes a feed frame: masked under the call's key (_engine.cpp mask_frame)
    n = feed.write(values)
    engine.mask_frame(feed.bytes[:n].numpy(), KEY)

def library(name):
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) > 5 and os.path.basename(parts[5]).startswith(name) and parts[2] == "00000000":
            return parts[5], int(parts[0].split("-")[0], 16)
    raise LookupError(name)

def slots(path):
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    names = sections[shstrndx]
    def name(s):
        at = names[4] + s[0]
        return data[at:data.index(b"\\0", at)].decode()
    by = {{name(s): s for s in sections}}
    dynsym, dynstr, rela, got = by[".dynsym"], by[".dynstr"], by[".rela.plt"], by[".got.plt"]
    found = {{}}
    for k in range(rela[5] // 24):
        offset, info, _ = struct.unpack_from("<QQq", data, rela[4] + 24 * k)
        if info & 0xFFFFFFFF != 7:  # R_X86_64_JUMP_SLOT
            continue
        st_name, = struct.unpack_from("<I", data, dynsym[4] + 24 * (info >> 32))
        at = dynstr[4] + st_name
        # The file's word: the entry holds it plus the load base until the loader binds it (its lazy stub).
        word, = struct.unpack_from("<Q", data, got[4] + offset - got[3])
        found[data[at:data.index(b"\\0", at)].decode()] = (offset, word)
    return found

def trampoline(target):
    page = mmap.mmap(-1, 4096, prot=7)
    page.write(b"\\xff\\x25\\x00\\x00\\x00\\x00" + struct.pack("<Q", target))
    return page, ctypes.addressof(ctypes.c_char.from_buffer(page))

path, base = library({lib!r})
found = slots(path)
entries = {{name: offset for name, (offset, _) in found.items()}}
word = lambda at: ctypes.c_uint64.from_address(base + at)
def step_once(call):
    put([x])
    return engine.step(True, call, feed.fd, out.fd, key=KEY)
libc = ctypes.CDLL(None)
libc.dlopen.restype = libc.dlsym.restype = ctypes.c_void_p
libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
own = libc.dlopen(path.encode(), 1 | 4)  # RTLD_LAZY | RTLD_NOLOAD: the library as loaded (torch loads it locally)
resolved = {{n: libc.dlsym(own, n.encode()) for n in found}}
stubs = [n for n, (at, w) in found.items() if word(at).value == base + w and resolved[n]]
bound_here = [n for n, (at, w) in found.items() if word(at).value != base + w and resolved[n] == word(at).value]
"""


@pytest.fixture(scope="module")
def engine_path() -> str:
    return str(timer.build())


def _run(
    engine_path: str, body: str, tmp_path: Path, lib: str = "libstdc++", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    source = (
        PROLOGUE.format(
            tmp=tmp_path, engine=engine_path, lib=lib, feed=str(tmp_path / "feed"), out=str(tmp_path / "out")
        )
        + body
        + "\nimport sys\nsys.stdout.flush()\nos._exit(0)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env
    )


def _ended_by_the_engine(done: subprocess.CompletedProcess, lib: str = "libstdc++") -> None:
    assert done.returncode == timer.ENGINE_ALTERED_EXIT, (done.returncode, done.stdout, done.stderr[-2000:])
    assert "not refused" not in done.stdout and lib in done.stderr


def _re_pointed(entry: str, function: str) -> str:
    """A case's body: the entry named by the expression ``entry`` pointed, during a timed call, at the function named by
    ``function`` (both functions loaded before the watch)."""
    return f"""
engine.watch_bound_tables()
def call(a):
    word(entries[{entry}]).value = resolved[{function}]
    return a * 2
step_once(call)
print("not refused", flush=True)
"""


def test_an_entry_re_pointed_at_code_loaded_after_the_watch_ends_the_rank_before_the_engine_runs_it(
    engine_path, tmp_path
):
    done = _run(
        engine_path,
        """
print("watched", engine.watch_bound_tables() > 0, flush=True)
kept = []
def call(a):
    # operator new's call of malloc, which the engine makes as it builds its report: a hook that does what malloc
    # does, so the process runs on as if nothing had happened.
    entry = word(entries["malloc"])
    page, at = trampoline(entry.value)
    kept.append(page)
    entry.value = at
    return a * 2
step_once(call)
print("not refused", flush=True)
""",
        tmp_path,
    )
    _ended_by_the_engine(done)
    assert "watched True" in done.stdout and "re-pointed outside the code loaded before the solution" in done.stderr


def test_an_entry_bound_on_first_use_to_a_loaded_function_passes_and_the_watch_is_taken_once(engine_path, tmp_path):
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
def call(a):
    # What the loader does on a first call through a lazy entry: the entry now holds the function, in loaded code.
    word(entries[stubs[0]]).value = resolved[stubs[0]]
    return a * 2
step = step_once(call)
values, _ = out.read_frame(step["nbytes"])
try:
    engine.watch_bound_tables()
    again = "watched twice"
except RuntimeError as exc:
    again = str(exc)
print(json.dumps({"lazy": len(stubs), "doubled": torch.equal(values[0], x * 2), "again": again}))
""",
        tmp_path,
        lib="libpython",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["lazy"] > 0 and out["doubled"] is True
    assert out["again"] == "the engine already watches the tables of library addresses"


def test_an_entry_already_bound_when_watched_is_held_to_its_function_even_within_loaded_code(engine_path, tmp_path):
    # libstdc++ calls many of its own exported functions through such entries: re-pointed at another of its functions
    # (code loaded before the watch), one would still do what the solution chose inside the engine.
    done = _run(engine_path, _re_pointed("bound_here[0]", "bound_here[1]"), tmp_path)
    _ended_by_the_engine(done)


def test_a_rank_starts_with_every_entry_bound_so_none_may_be_re_pointed_even_to_loaded_code(engine_path, tmp_path):
    # Under lazy binding an entry still at its stub when watched may change to any function loaded by then, as the
    # loader binds it, so a solution could point one at the wrong function. A rank's environment has the loader bind
    # every entry at load: none is a stub when watched, and each is held to its function.
    env = {**os.environ, "LD_BIND_NOW": sandbox.environment(dict(os.environ), "cpu").get("LD_BIND_NOW", "")}
    rare = '[n for n in ("ttyname", "ctermid", "getlogin", "setsid", "getsid", "execv", "fork") if resolved.get(n)]'
    body = f'print("stubs", len(stubs), flush=True)\nrare = {rare}\n' + _re_pointed("rare[0]", "rare[1]")
    done = _run(engine_path, body, tmp_path, lib="libpython", env=env)
    assert "stubs 0" in done.stdout, (done.stdout, done.stderr[-2000:])
    _ended_by_the_engine(done, "libpython")


def test_the_engines_allocations_do_not_go_through_the_allocator_the_registry_holds_now(engine_path, tmp_path):
    # c10's registry of allocators is writable memory: a red team's allocator put there ran its code inside the
    # engine before every call and told its first call where a window's later inputs were. The engine allocates with
    # the allocators it kept at open, so one put in their place (here a broken one, whose every function is null)
    # is never called by it.
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
c10 = ctypes.CDLL(library("libc10")[0])
set_allocator = c10._ZN3c1012SetAllocatorENS_10DeviceTypeEPNS_9AllocatorEh
set_allocator.argtypes = [ctypes.c_int8, ctypes.c_void_p, ctypes.c_uint8]
get_allocator = c10._ZN3c1012GetAllocatorERKNS_10DeviceTypeE
get_allocator.restype, get_allocator.argtypes = ctypes.c_void_p, [ctypes.POINTER(ctypes.c_int8)]
cpu = ctypes.c_int8(0)
original = get_allocator(ctypes.byref(cpu))
nothing = (ctypes.c_uint64 * 16)()
broken = (ctypes.c_uint64 * 4)(ctypes.addressof(nothing))
def call(a):
    out = a * 2
    set_allocator(0, ctypes.addressof(broken), 255)  # from here on torch's own CPU allocations would fault
    return out
first = step_once(call)
second = step_once(lambda a: a.add_(a))  # allocates nothing itself: the engine made its input
set_allocator(0, original, 255)
print(json.dumps({"steps": 2, "registry": "restored"}))
""",
        tmp_path,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"steps": 2, "registry": "restored"}


def test_an_output_whose_implementation_points_at_other_functions_is_refused_before_the_engine_calls_one(
    engine_path, tmp_path
):
    # The rules read the outputs through their implementations' virtual functions: a copy of torch's table, one entry
    # of which a solution would make its own, is refused whatever it holds (here, the same functions).
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
kept = []
def call(a):
    out = a * 2
    impl = ctypes.c_uint64.from_address(out._cdata)
    table = (ctypes.c_uint64 * 130)(*[ctypes.c_uint64.from_address(impl.value - 16 + 8 * k).value for k in range(130)])
    kept.append(table)
    impl.value = ctypes.addressof(table) + 16
    return out
try:
    step_once(call)
    said = "passed"
except RuntimeError as exc:
    said = str(exc)
print(json.dumps({"said": said}))
""",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])["said"]
    assert "not a dense tensor of torch's own implementation" in said


def test_an_output_over_its_input_is_found_whatever_its_storage_says_of_its_size(engine_path, tmp_path):
    # A storage's note of its size is the solution's memory: zeroed, the storage spans nothing, but the output's
    # view still reaches its input's bytes, which is where the engine reads it from.
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
def call(a):
    a.mul_(2)
    out = a.view(a.shape)
    impl = out.untyped_storage()._cdata
    words = [ctypes.c_uint64.from_address(impl + 8 * k) for k in range(16)]
    [w for w in words if w.value == a.nbytes][0].value = 0
    return out
print(json.dumps(step_once(call)["aliases"]))
""",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["output 0 shares memory with input 0"]


def test_an_output_whose_device_or_layout_is_sent_to_a_policy_of_its_own_is_refused(engine_path, tmp_path):
    # The bits that send a tensor's device (or layout) to Python, found as a wrapper subclass sets them, set on a
    # plain output: torch's own code would then ask the solution where the output lies.
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
class W(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return NotImplemented
libc.malloc_usable_size.restype = ctypes.c_size_t
libc.malloc_usable_size.argtypes = [ctypes.c_void_p]
size = libc.malloc_usable_size(torch.zeros(1)._cdata)  # the implementation's own bytes: nothing past them is touched
def impl_bytes(t):
    return bytearray(ctypes.string_at(t._cdata, size))
said = {}
for flag in ("dispatch_device", "dispatch_layout"):
    # Bytes that differ between any two plain wrappers (pointers) are not flags: only a byte all plain ones share.
    plains = [impl_bytes(torch.Tensor._make_wrapper_subclass(W, (4,))) for _ in range(8)]
    custom = impl_bytes(torch.Tensor._make_wrapper_subclass(W, (4,), **{flag: True}))
    plain = plains[0]
    steady = [k for k in range(size) if all(p[k] == plain[k] for p in plains)]
    bits = [(k, plain[k] ^ custom[k]) for k in steady if bin(plain[k] ^ custom[k]).count("1") in (1, 2)]
    bits = [(k, b) for k, b in bits if not plain[k] & b]
    made = []
    def call(a):
        out = a * 2
        for k, b in bits:
            ctypes.c_uint8.from_address(out._cdata + k).value |= b
        made.append(out)
        return out
    try:
        step_once(call)
        said[flag] = "passed"
    except RuntimeError as exc:
        said[flag] = str(exc)
    for k, b in bits:  # plain again before the engine lets it go (its release would ask where it lies)
        ctypes.c_uint8.from_address(made[0]._cdata + k).value &= ~b & 0xFF
print(json.dumps(said))
""",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    for flag in ("dispatch_device", "dispatch_layout"):
        assert "not a dense tensor of torch's own implementation" in said[flag], said


def test_no_signal_reaches_the_engine_between_a_calls_return_and_the_next_call(engine_path, tmp_path):
    # A handler the call installed could run while the engine puts the dispositions back, and install another that
    # runs later: from the return on, every signal but a fault's waits for the next call, which starts with the mask
    # the rank had.
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
def blocked():
    line = [l for l in open("/proc/thread-self/status") if l.startswith("SigBlk:")][0]
    return int(line.split()[1], 16)
inside = []
def call(a):
    inside.append(blocked())
    return a * 2
before = blocked()
for _ in range(2):
    step_once(call)
    after = blocked()
print(json.dumps({"before": before, "inside": inside, "after": after}))
""",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["inside"] == [out["before"], out["before"]]
    assert out["after"] & (1 << (14 - 1)) and out["after"] & (1 << (10 - 1))  # SIGALRM and SIGUSR1 wait


def test_an_output_sharing_its_inputs_bytes_is_found_without_copying_it_apart(engine_path, tmp_path):
    # A lazy clone shares its input's bytes until written, and a mutable read of its address makes the copy: after
    # the clock. A view whose stride is rewritten to wrap the address arithmetic is read as the engine copies it.
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
def lazy(a):
    a.mul_(2)
    return torch._lazy_clone(a)
def wrapped(a):
    a.mul_(2)
    out = a.view(10, 100)
    words = [ctypes.c_int64.from_address(out._cdata + 8 * k) for k in range(40)]
    at = next(k for k in range(35) if [w.value for w in words[k : k + 2]] == [10, 100] and words[k + 5].value == 100)
    words[at + 5].value = -(2**62)
    return out
said = {}
for name, call in (("lazy", lazy), ("wrapped", wrapped)):
    said[name] = step_once(call)["aliases"]
print(json.dumps(said))
""",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said == {"lazy": ["output 0 shares memory with input 0"], "wrapped": ["output 0 shares memory with input 0"]}
