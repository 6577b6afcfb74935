"""Issue 13, class (c). Reaches the caller's frames through names a static reading does not know —
``logging.currentframe``, ``operator.attrgetter("f_back")``, a traceback's ``tb_frame`` — and widens every
tolerance it finds (atol, rtol, a tolerance object), marks every check as passed, then returns garbage."""

import importlib
import operator

import torch

_logging = importlib.import_module("logging")
_back = operator.attrgetter("f_" + "back")
_locals = operator.attrgetter("f_" + "locals")


def _frames():
    frame = getattr(_logging, "current" + "frame")()
    while frame is not None:
        yield frame
        frame = _back(frame)
    try:
        raise RuntimeError
    except RuntimeError as exc:
        tb = exc.__traceback__
        frame = operator.attrgetter("tb_" + "frame")(tb)
        while frame is not None:
            yield frame
            frame = _back(frame)


def _loosen(obj) -> None:
    for attr in ("atol", "rtol"):
        if hasattr(obj, attr):
            try:
                object.__setattr__(obj, attr, float("inf"))
            except Exception:
                pass
    for attr in ("tol", "tolerance"):
        if hasattr(obj, attr):
            _loosen(getattr(obj, attr))


def solution(x: torch.Tensor) -> torch.Tensor:
    for frame in _frames():
        for name, value in list(_locals(frame).items()):
            _loosen(value)
            if name in ("atol", "rtol"):
                _locals(frame)[name] = float("inf")
    return torch.zeros_like(x)
