"""The system-call filter every sandbox runs under (the solution's, the judge's, a proposal check's, a prebuild's):
a classic BPF program that bubblewrap loads with ``--seccomp FD`` just before it runs the sandbox's first program,
so it holds from that program's first instruction and for everything it starts.

It refuses, with EPERM, what no solution, judge or build needs and where the kernel's local privilege escalations
live: new namespaces of any kind (``unshare``, ``setns``, ``clone`` with a CLONE_NEW* flag; ``clone3``, whose flags a
filter cannot read, answers ENOSYS so that the C library falls back to ``clone``, which it can), mounts old and new,
``pivot_root``/``chroot``, the kernel keyring, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring`` and native
AIO, the process's pages handed to the kernel by reference (``vmsplice``, ``SO_ZEROCOPY``), a pipe copied without
being read (``tee``), ``signalfd`` and file notifications (``inotify``, ``fanotify``), tracing and writing other
processes' memory (``ptrace``,
``process_vm_writev``, ``pidfd_getfd``), file handles (``open_by_handle_at``), modules, kexec, swap, reboot, the
clocks, accounting, quotas and the kernel log. Any other ABI than the host's own (i386 through ``int 0x80`` on
x86_64, x32) is refused whole.

This is the equivalent of bubblewrap's ``--disable-userns``, which needs ``--unshare-user``: as root that maps the
sandbox's uid to uid 0 on the host (measured: ``uid_map`` ``65534 0 1``), which the sandboxes must never be.

Written here rather than through libseccomp: the GPU hosts run their own Python, and a filter of fifty instructions
needs no library. tests/evaluator/host/test_sandbox_limits.py checks every number against libseccomp's own tables
where the host has it."""

from __future__ import annotations

import errno
import os
import platform
import struct

# <linux/audit.h>
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

# <linux/seccomp.h>
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# <linux/bpf_common.h>
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x05 | 0x40 | 0x00  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
# args[k]'s low word on a little-endian machine (both arches are)
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW, _ARG2_LOW = 0, 4, 16, 24, 32

# CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET.
# (CLONE_NEWTIME, 0x80, is unshare's and clone3's only: in clone's flags that bit is part of the exit signal.)
CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

# The refused calls, by name: what the documentation lists and the GPU check must confirm (docs/threat-model.md).
REFUSED = (
    # namespaces and mounts
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    # kernel surfaces no solution needs
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # Native AIO: I/O the kernel and the device finish into the process's memory while the host holds it stopped
    # between calls, with no thread of it running (a red team's reads landed so); POSIX aio_* is threads instead.
    "io_setup",
    "io_destroy",
    "io_submit",
    "io_cancel",
    "io_getevents",
    "io_pgetevents",
    # The process's own pages handed to the kernel by reference, to be copied later (a pipe's, then a paced send's):
    # a red team's peer read a rank's next inputs from pages its engine reused; setsockopt's SO_ZEROCOPY below.
    "vmsplice",
    # A pipe's data copied without consuming it: a peer holding a copy of a rank's command pipe (passed over a socket
    # and kept in flight, where no stop sees it) would read the key that rank's feed frame is masked under and leave
    # the command for the rank's engine. Reading the pipe otherwise consumes the command, and the rank waits out the
    # host's limit. The channel lock refuses it on a rank's own command descriptor only; nothing here pipes data.
    "tee",
    # Every signalfd of a process waits on one queue of the kernel's, which epoll's per-file limits do not see: a red
    # team's 1,000 x 1,000 watchers made each signal the host sent (its own SIGSTOP and SIGCONT) run a million
    # wake-ups with interrupts off, about 100 ms of a core, stalling the host in kill(). Nothing a solution, a judge
    # or a build runs uses them.
    "signalfd",
    "signalfd4",
    # The same through a file's notifications: inotify watches on the output slot the host copies after every call,
    # each in thousands of epolls, made every copy run 357,000 wake-ups a rank inside the host's own system call
    # (300 ms a copy, an evaluation 13 times longer, and it passed). Nothing a solution, a judge or a build runs
    # watches files.
    "inotify_init",
    "inotify_init1",
    "fanotify_init",
    # other processes
    "ptrace",
    "process_vm_writev",
    "pidfd_getfd",
    # files by handle, modules, kexec, swap, power, clocks, accounting, quotas, the kernel log
    "open_by_handle_at",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "swapon",
    "swapoff",
    "reboot",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "vhangup",
    # x86_64 only: port I/O and the old library loader
    "iopl",
    "ioperm",
    "uselib",
)
CLONE_CHECKED = "clone"  # refused (EPERM) when its flags ask for a new namespace
# prctl(PR_SET_DUMPABLE, non-zero) is refused: a process of the sandbox made dumpable again lets the others of its uid
# open its /proc/PID/mem, whose writes pass over read-only and sealed pages (the engine's tables, its code). prctl's
# option is an int, so its low word is all the kernel reads.
PRCTL_CHECKED = "prctl"
PR_SET_DUMPABLE = 4
# setsockopt(SOL_SOCKET, SO_ZEROCOPY) is refused: a send then takes the process's pages by reference, and the kernel
# copies them when it sends (paced, while the process is held between calls), whatever they hold by then. Without it
# MSG_ZEROCOPY copies at the call, as any send does.
SETSOCKOPT_CHECKED = "setsockopt"
SOL_SOCKET, SO_ZEROCOPY = 1, 60
ENOSYS_CALLS = ("clone3",)  # the C library falls back to clone, whose flags the filter can read

# System-call numbers (arch/x86/entry/syscalls/syscall_64.tbl; include/uapi/asm-generic/unistd.h for aarch64).
SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "unshare": 272,
        "setns": 308,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "chroot": 161,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "keyctl": 250,
        "add_key": 248,
        "request_key": 249,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "io_setup": 206,
        "io_destroy": 207,
        "io_submit": 209,
        "io_cancel": 210,
        "io_getevents": 208,
        "io_pgetevents": 333,
        "vmsplice": 278,
        "tee": 276,
        "signalfd": 282,
        "signalfd4": 289,
        "inotify_init": 253,
        "inotify_init1": 294,
        "fanotify_init": 300,
        "ptrace": 101,
        "process_vm_writev": 311,
        "pidfd_getfd": 438,
        "open_by_handle_at": 304,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "swapon": 167,
        "swapoff": 168,
        "reboot": 169,
        "settimeofday": 164,
        "clock_settime": 227,
        "clock_adjtime": 305,
        "acct": 163,
        "quotactl": 179,
        "quotactl_fd": 443,
        "syslog": 103,
        "vhangup": 153,
        "iopl": 172,
        "ioperm": 173,
        "uselib": 134,
        "clone": 56,
        "clone3": 435,
        "prctl": 157,
        "setsockopt": 54,
    },
    "aarch64": {
        "unshare": 97,
        "setns": 268,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "chroot": 51,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "keyctl": 219,
        "add_key": 217,
        "request_key": 218,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "io_setup": 0,
        "io_destroy": 1,
        "io_submit": 2,
        "io_cancel": 3,
        "io_getevents": 4,
        "io_pgetevents": 292,
        "vmsplice": 75,
        "tee": 77,
        "signalfd4": 74,
        "inotify_init1": 26,
        "fanotify_init": 262,
        "ptrace": 117,
        "process_vm_writev": 271,
        "pidfd_getfd": 438,
        "open_by_handle_at": 265,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "swapon": 224,
        "swapoff": 225,
        "reboot": 142,
        "settimeofday": 170,
        "clock_settime": 112,
        "clock_adjtime": 266,
        "acct": 89,
        "quotactl": 60,
        "quotactl_fd": 443,
        "syslog": 116,
        "vhangup": 58,
        "clone": 220,
        "clone3": 435,
        "prctl": 167,
        "setsockopt": 208,
    },
}
AUDIT_ARCH = {"x86_64": AUDIT_ARCH_X86_64, "aarch64": AUDIT_ARCH_AARCH64}


class UnsupportedArch(RuntimeError):
    pass


def machine() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def program(arch: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions, for ``arch`` (default: this machine's)."""
    arch = arch or machine()
    if arch not in SYSCALLS:
        raise UnsupportedArch(f"no system-call filter for {arch!r} (x86_64 and aarch64 only)")
    numbers = SYSCALLS[arch]
    refused = [numbers[n] for n in REFUSED if n in numbers]
    # Layout: arch check, number load, [x32 check], one test per refused call, clone3, clone, prctl, setsockopt,
    # allow, clone's flag test, allow, prctl's option and argument tests, allow, setsockopt's level and option tests,
    # allow, then the shared returns (EPERM, ENOSYS).
    # Jumps are forward and relative.
    head: list[tuple[int, int, int, int]] = [
        _insn(_LD_W_ABS, _ARCH),
        _insn(_JEQ_K, AUDIT_ARCH[arch], jt=1, jf=0),
        _insn(_RET_K, RET_ERRNO | errno.EPERM),  # another ABI than the host's
        _insn(_LD_W_ABS, _NR),
    ]
    body_len = (1 if arch == "x86_64" else 0) + len(refused) + 4 + 1 + 3 + 5 + 5
    # index (within the part after ``head``) of the two shared returns
    eperm_at, enosys_at = body_len, body_len + 1
    body: list[tuple[int, int, int, int]] = []

    def to(target: int) -> int:
        offset = target - len(body) - 1
        if not 0 <= offset <= 255:
            raise ValueError("seccomp program too long for its jumps")
        return offset

    if arch == "x86_64":
        body.append(_insn(_JGE_K, X32_SYSCALL_BIT, jt=to(eperm_at)))
    for nr in refused:
        body.append(_insn(_JEQ_K, nr, jt=to(eperm_at)))
    body.append(_insn(_JEQ_K, numbers["clone3"], jt=to(enosys_at)))
    clone_check_at = len(body) + 4  # after this jump, prctl's, setsockopt's and the allow that follows them
    prctl_check_at = clone_check_at + 3
    sockopt_check_at = prctl_check_at + 5
    body.append(_insn(_JEQ_K, numbers[CLONE_CHECKED], jt=to(clone_check_at)))
    body.append(_insn(_JEQ_K, numbers[PRCTL_CHECKED], jt=to(prctl_check_at)))
    body.append(_insn(_JEQ_K, numbers[SETSOCKOPT_CHECKED], jt=to(sockopt_check_at)))
    body.append(_insn(_RET_K, RET_ALLOW))
    assert len(body) == clone_check_at
    body.append(_insn(_LD_W_ABS, _ARG0_LOW))
    body.append(_insn(_JSET_K, CLONE_NEW_ANY, jt=to(eperm_at)))
    body.append(_insn(_RET_K, RET_ALLOW))
    assert len(body) == prctl_check_at
    allow_at = prctl_check_at + 4
    body.append(_insn(_LD_W_ABS, _ARG0_LOW))
    body.append(_insn(_JEQ_K, PR_SET_DUMPABLE, jf=to(allow_at)))
    body.append(_insn(_LD_W_ABS, _ARG1_LOW))
    body.append(_insn(_JEQ_K, 0, jt=to(allow_at), jf=to(eperm_at)))
    body.append(_insn(_RET_K, RET_ALLOW))
    assert len(body) == sockopt_check_at
    sockopt_allow_at = sockopt_check_at + 4
    body.append(_insn(_LD_W_ABS, _ARG1_LOW))
    body.append(_insn(_JEQ_K, SOL_SOCKET, jf=to(sockopt_allow_at)))
    body.append(_insn(_LD_W_ABS, _ARG2_LOW))
    body.append(_insn(_JEQ_K, SO_ZEROCOPY, jt=to(eperm_at), jf=to(sockopt_allow_at)))
    body.append(_insn(_RET_K, RET_ALLOW))
    assert len(body) == body_len
    body.append(_insn(_RET_K, RET_ERRNO | errno.EPERM))
    body.append(_insn(_RET_K, RET_ERRNO | errno.ENOSYS))
    return head + body


def compiled(arch: str | None = None) -> bytes:
    """The filter as bubblewrap's ``--seccomp`` reads it: an array of ``struct sock_filter`` in the host's order."""
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program(arch))


# bubblewrap reads the filter from a descriptor. The sandboxes' callers pass only their own descriptors to the
# child (``pass_fds``), so the filter travels in the command line instead: this runs first, as the host's root, puts
# the bytes in a pipe and becomes bubblewrap with the pipe's number in place of FD_PLACEHOLDER. bubblewrap's own
# options go to it in a memory file (``--args``), not on its command line: the sandbox's first process is
# bubblewrap's, and its command line, which every process in the sandbox can read (/proc/1/cmdline), would name
# every host folder bound and every variable set. Only the sandbox's command is left there.
FD_PLACEHOLDER = "@ARENA_SECCOMP_FD@"
_LOADER = (
    "import os,sys\n"
    "data=bytes.fromhex(sys.argv[1])\n"
    "r,w=os.pipe()\n"
    "os.write(w,data)\n"
    "os.close(w)\n"
    "os.set_inheritable(r,True)\n"
    "n=int(sys.argv[3])\n"
    f"opts=[str(r) if a=={FD_PLACEHOLDER!r} else a for a in sys.argv[4:4+n]]\n"
    "a=os.memfd_create('arena-sandbox-options',0)\n"
    "v=memoryview(b''.join(os.fsencode(o)+b'\\0' for o in opts))\n"
    "while v:v=v[os.write(a,v):]\n"
    "os.lseek(a,0,0)\n"
    "os.set_inheritable(a,True)\n"
    "os.execv(sys.argv[2],[sys.argv[2],'--args',str(a),'--',*sys.argv[4+n:]])\n"
)


def wrap(python: str, bwrap: str, options: list[str], command: list[str], arch: str | None = None) -> list[str]:
    """bubblewrap at ``bwrap`` with ``options`` (which hold ``--seccomp FD_PLACEHOLDER``), running ``command``,
    preceded by the loader, run by ``python``."""
    if FD_PLACEHOLDER not in options:
        raise ValueError("the sandbox's command line has no --seccomp placeholder")
    return [python, "-I", "-S", "-c", _LOADER, compiled(arch).hex(), bwrap, str(len(options)), *options, *command]


def host_python() -> str:
    """An interpreter for the loader: the running one (it is the host's)."""
    import sys

    return os.path.realpath(sys.executable)
