"""A second static layer from the field: KernelGuard (PyPI ``kernelguard``, MIT; GPU MODE's rule-based detector of
kernel-competition hacks) reads the solution's source beside our own static checks
(evaluator/analysis/static_checks.py).

Every rule it matches is recorded in the result (``static_checks.kernelguard``); a rule whose own policy is to filter
automatically (its precision-first "certain" rules, e.g. a CUDA timer's method reassigned) refuses the solution as
our own rules do. Its entry point is configured to our ``solution``. Where the package is not installed (a GPU host
that brought its own environment), the layer says so in the result and our own rules stand alone."""

from __future__ import annotations

import functools
from typing import Any

ENTRYPOINT = "solution"


@functools.lru_cache(maxsize=1)
def _detector() -> Any:
    try:
        import kernelguard
    except ImportError:
        return None
    config = kernelguard.build_default_runtime_config()
    config["entrypoints"]["names"] = [ENTRYPOINT]
    kernelguard.apply_runtime_config(config)
    return kernelguard


def review(source: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """KernelGuard's report for ``source`` (for the result) and the rules it is certain of, as (rule, evidence)."""
    kg = _detector()
    if kg is None:
        return {"available": False, "reason": "kernelguard is not installed on this host"}, []
    try:
        found = kg.analyze_code(source, compute_structural_hash=False)
    except Exception as exc:  # noqa: BLE001 - a third-party detector's failure must not decide a verdict
        return {"available": True, "error": f"{type(exc).__name__}: {exc}"[:300]}, []
    matches = found.get("matched_patterns") or []
    rules = [
        {"rule": str(m.get("pattern")), "severity": str(m.get("severity")), "evidence": str(m.get("evidence"))[:300]}
        for m in matches
    ]
    certain = [
        (str(m.get("pattern")), str(m.get("evidence"))[:300])
        for m in matches
        if kg.strongest_rule_outcome([m]) == kg.AUTO_FILTER
    ]
    report = {
        "available": True,
        "version": getattr(kg, "__version__", None) or _version(),
        "classification": found.get("classification"),
        "rules": rules,
    }
    return report, certain


def _version() -> str | None:
    try:
        import importlib.metadata

        return importlib.metadata.version("kernelguard")
    except Exception:  # noqa: BLE001
        return None
