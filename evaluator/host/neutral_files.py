"""Files every sandbox sees in place of the host's own, so that nothing a solution can read names the host.

A red team read, from inside a sandbox: the host's accounts and their homes (/etc/passwd, /etc/group), its hostname
(/etc/hosts), the kernel's command line and boot id (/proc/cmdline, /proc/sys/kernel/random/boot_id), and, from the
interpreter's own site-packages, the checkout an editable install points to (its finder, its .pth file and
direct_url.json). The sandbox binds the host's configuration files no more: it binds files of ours, written once
under the host's cache root (whose path the mount table shows, by design: docs/threat-model.md), over those paths;
and it binds an empty file over every install file that records where a package was installed from.
"""

from __future__ import annotations

import glob
import os
import site
import sys
import sysconfig
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


def site_dirs() -> tuple[str, ...]:
    """The site-packages folders the sandboxes bind: the interpreter's, and its base interpreter's under a virtual
    environment (both are install paths bound at their own paths)."""
    found = list(site.getsitepackages())
    for key in ("purelib", "platlib"):
        path = sysconfig.get_path(key, vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
        if path and path not in found:
            found.append(path)
    return tuple(p for p in found if os.path.isdir(p))


def install_records(dirs: tuple[str, ...]) -> tuple[str, ...]:
    """The install records in ``dirs`` (site-packages folders), and every .pth file there with a line other than an
    import, or a "/" anywhere: a line that is a folder, or an import that puts one on the path, names where a
    package's code lies (what an editable install writes). Read at every sandbox's start: a package installed or
    reinstalled while the worker runs is seen."""
    found: set[str] = set()
    for site_dir in dirs:
        for pattern in _RECORDS:
            found.update(p for p in glob.glob(os.path.join(site_dir, pattern)) if os.path.isfile(p))
        for pth in glob.glob(os.path.join(site_dir, "*.pth")):
            try:
                text = Path(pth).read_text(errors="replace")
            except OSError:
                continue
            lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
            if "/" in text or any(not line.startswith(("import ", "import\t")) for line in lines):
                found.add(pth)
    return tuple(sorted(found))
