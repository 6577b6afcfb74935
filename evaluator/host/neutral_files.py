"""Files every sandbox sees in place of the host's own, so that nothing a solution can read names the host.

A red team read, from inside a sandbox: the host's accounts and their homes (/etc/passwd, /etc/group), its hostname
(/etc/hosts), the kernel's command line and boot id (/proc/cmdline, /proc/sys/kernel/random/boot_id), and, from the
interpreter's own site-packages, the checkout an editable install points to (its finder, its .pth file and
direct_url.json). The sandbox binds the host's configuration files no more: it binds files of ours, written once
under the host's cache root (whose path the mount table shows, by design: docs/threat-model.md), over those paths;
and it binds an empty file over every install file that records where a package was installed from.
"""

from __future__ import annotations

import functools
import glob
import os
from pathlib import Path

from evaluator import timer as compiled_timer


def contents(sandbox: tuple[int, int], judge: tuple[int, int]) -> dict[str, str]:
    """Inside path -> what it holds. Only the (uid, gid) the sandboxes run as have accounts."""
    return {
        "/etc/passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"sandbox:x:{sandbox[0]}:{sandbox[1]}:sandbox:/tmp/home:/usr/sbin/nologin\n"
            f"judge:x:{judge[0]}:{judge[1]}:judge:/tmp/home:/usr/sbin/nologin\n"
        ),
        "/etc/group": f"root:x:0:\nsandbox:x:{sandbox[1]}:\njudge:x:{judge[1]}:\n",
        "/etc/hosts": "127.0.0.1\tlocalhost arena-sandbox arena-judge\n::1\tlocalhost\n",
        "/proc/cmdline": "arena\n",
        "/proc/sys/kernel/random/boot_id": "00000000-0000-0000-0000-000000000000\n",
    }


# Install files that record where a package came from: an editable install's finder and path file name the checkout,
# direct_url.json names the folder or URL a package was installed from.
_RECORDS = ("__editable__*", "__pycache__/__editable__*", "*.egg-link", "*.dist-info/direct_url.json")


def _folder() -> Path:
    return compiled_timer.cache_dir() / "neutral"


def _write(path: Path, text: str) -> None:
    """Writes ``text`` at ``path`` unless it is there already (several workers may write at once: a rename is whole)."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def files(sandbox: tuple[int, int], judge: tuple[int, int]) -> list[tuple[str, str]]:
    """(host file, inside path) for each file of ours, written first where missing."""
    folder = _folder()
    out = []
    for inside, text in contents(sandbox, judge).items():
        host = folder / inside.strip("/").replace("/", "_")
        _write(host, text)
        out.append((str(host), inside))
    return out


def empty() -> str:
    """An empty file of ours, bound over each install record."""
    host = _folder() / "empty"
    _write(host, "")
    return str(host)


@functools.lru_cache(maxsize=8)
def install_records(site_dirs: tuple[str, ...]) -> tuple[str, ...]:
    """The install records in ``site_dirs`` (the interpreter's site-packages folders), and every .pth file there that
    names a folder (a line that is a path: what an editable install of the older kind writes)."""
    found: set[str] = set()
    for site_dir in site_dirs:
        for pattern in _RECORDS:
            found.update(p for p in glob.glob(os.path.join(site_dir, pattern)) if os.path.isfile(p))
        for pth in glob.glob(os.path.join(site_dir, "*.pth")):
            try:
                lines = Path(pth).read_text(errors="replace").splitlines()
            except OSError:
                continue
            if any(line.strip().startswith(("/", "~")) for line in lines):
                found.add(pth)
    return tuple(sorted(found))
