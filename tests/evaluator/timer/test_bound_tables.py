"""The lazily bound tables of library addresses: libstdc++, libc10, libtorch and libpython call other objects through
entries (.got.plt) in pages shared with their writable data, which no seal covers. The engine keeps every such entry,
sealed, once a rank is set up, and compares them right after the solution's calls return: an entry re-pointed at code
loaded afterwards (a hook of the solution's) ends the rank with ENGINE_ALTERED_EXIT before the engine could run it; an
entry the loader binds on first use (from its object's lazy stub to a loaded function) is what lazy binding does, and
passes. Each case runs in a fresh interpreter with a one-rank gloo group, as a rank does."""

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import timer

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
    dynsym, dynstr, rela = by[".dynsym"], by[".dynstr"], by[".rela.plt"]
    found = {{}}
    for k in range(rela[5] // 24):
        offset, info, _ = struct.unpack_from("<QQq", data, rela[4] + 24 * k)
        if info & 0xFFFFFFFF != 7:  # R_X86_64_JUMP_SLOT
            continue
        st_name, = struct.unpack_from("<I", data, dynsym[4] + 24 * (info >> 32))
        at = dynstr[4] + st_name
        found[data[at:data.index(b"\\0", at)].decode()] = offset
    return found

def trampoline(target):
    page = mmap.mmap(-1, 4096, prot=7)
    page.write(b"\\xff\\x25\\x00\\x00\\x00\\x00" + struct.pack("<Q", target))
    return page, ctypes.addressof(ctypes.c_char.from_buffer(page))

path, base = library("libstdc++")
entries = slots(path)
word = lambda at: ctypes.c_uint64.from_address(base + at)
"""


@pytest.fixture(scope="module")
def engine_path() -> str:
    return str(timer.build())


def _run(engine_path: str, body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    source = (
        PROLOGUE.format(tmp=tmp_path, engine=engine_path, feed=str(tmp_path / "feed"), out=str(tmp_path / "out"))
        + body
        + "\nimport sys\nsys.stdout.flush()\nos._exit(0)\n"
    )
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, cwd=ROOT, timeout=120)


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
feed.write([x])
engine.step(True, call, feed.fd, out.fd)
print("not refused", flush=True)
""",
        tmp_path,
    )
    assert done.returncode == timer.ENGINE_ALTERED_EXIT, (done.returncode, done.stdout, done.stderr[-2000:])
    assert "watched True" in done.stdout and "not refused" not in done.stdout
    assert "libstdc++" in done.stderr and "re-pointed outside the code loaded before the solution" in done.stderr


def test_an_entry_bound_on_first_use_to_a_loaded_function_passes_and_the_watch_is_taken_once(engine_path, tmp_path):
    done = _run(
        engine_path,
        """
engine.watch_bound_tables()
libc = ctypes.CDLL(None)
libc.dlopen.restype = libc.dlsym.restype = ctypes.c_void_p
libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
own = libc.dlopen(path.encode(), 1 | 4)  # RTLD_LAZY | RTLD_NOLOAD: the library as loaded (torch loads it locally)
code = [(int(l.split()[0].split("-")[0], 16), int(l.split()[0].split("-")[1], 16)) for l in open("/proc/self/maps")
        if l.split()[1][2] == "x" and l.rstrip().endswith(os.path.basename(path))]
own_code = lambda v: any(lo <= v < hi for lo, hi in code)
lazy = [n for n, at in entries.items() if own_code(word(at).value) and libc.dlsym(own, n.encode())]
def call(a):
    # What the loader does on a first call through a lazy entry: the entry now holds the function, in loaded code.
    word(entries[lazy[0]]).value = libc.dlsym(own, lazy[0].encode())
    return a * 2
feed.write([x])
step = engine.step(True, call, feed.fd, out.fd)
values, _ = out.read_frame(step["nbytes"])
try:
    engine.watch_bound_tables()
    again = "watched twice"
except RuntimeError as exc:
    again = str(exc)
print(json.dumps({"lazy": len(lazy), "doubled": torch.equal(values[0], x * 2), "again": again}))
""",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["lazy"] > 0 and out["doubled"] is True
    assert out["again"] == "the engine already watches the tables of library addresses"
