"""Class: running while the host holds the sandbox stopped. Between calls the host stops every process of the
sandbox with SIGSTOP. But the kernel continues a stopped process the moment a SIGCONT is generated for it, whatever
its handler or signal mask, and a POSIX timer can generate one with nothing of the solution's running: the call arms
timers (timer_create, SIGEV_SIGNAL, SIGCONT; through libc, as a red team did) that fire 0.3 to 12 ms after it
returns. Each firing continues the rank's threads while the host believes them held (through the baseline's window,
the host's checks), where a thread of the solution's could work off every clock. The host reads what each held
thread has used when it stops them and again before it continues them: any CPU time gained means it ran, and the
evaluation is refused. Here the continued threads only go back to waiting, which already costs them CPU time."""

import ctypes

import torch
import torch.distributed as dist

_libc = ctypes.CDLL(None, use_errno=True)


class _Sigevent(ctypes.Structure):
    _fields_ = [
        ("value", ctypes.c_void_p),
        ("signo", ctypes.c_int),
        ("notify", ctypes.c_int),
        ("pad", ctypes.c_byte * 48),
    ]


class _Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("interval", _Timespec), ("value", _Timespec)]


DELAYS_US = (300, 700, 1500, 3000, 6000, 12000)  # after each call: some land while the host holds the rank
_timers: list[ctypes.c_void_p] = []


def _arm() -> None:
    """One-shot timers armed again at every call (a repeating timer whose signal is ignored is parked by recent
    kernels after its first expiry; SIGCONT's default disposition counts as ignored)."""
    if not _timers:
        for _ in DELAYS_US:
            event = _Sigevent(signo=18, notify=0)  # SIGCONT, SIGEV_SIGNAL
            timer = ctypes.c_void_p()
            if _libc.timer_create(1, ctypes.byref(event), ctypes.byref(timer)) != 0:  # CLOCK_MONOTONIC
                print("ARENA_RT_ABSENT timer_create failed", ctypes.get_errno(), flush=True)
                return
            _timers.append(timer)
        print(f"ARENA_RT_TRY {len(_timers)} SIGCONT timers after every call", flush=True)
    for timer, us in zip(_timers, DELAYS_US):
        after = _Itimerspec(_Timespec(0, 0), _Timespec(0, us * 1000))
        _libc.timer_settime(timer, 0, ctypes.byref(after), None)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    _arm()
    return out
