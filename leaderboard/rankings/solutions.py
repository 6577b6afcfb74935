"""A problem's ranking on one profile, built from its passed evaluations: one row per distinct solution, each
entrant's best, repeats pooled, each figure with how it was formed and how many evaluations stand behind it, and
the re-measurement that verifies or flags it. Plain functions over rows the selector loaded (no queries here).

- **Distinct solution**: evaluations whose source has the same ``Submission.source_key`` (comments and layout
  removed, ``submissions.fingerprint``) are one solution, credited to whoever submitted it first (a solo user, or
  a model run); its evaluations are pooled (``significance.pool``) into one estimate, never the best of N.
- **Entrant**: a user's solo submissions, or one model run. Each entrant keeps their best distinct solution.
- **Order and rank**: by pooled speedup, fastest first; the rank shown is the range ``significance.rank_ranges``
  gives over the pooled intervals. On a profile that does not measure speed (CPU) there is no order by speed and
  no rank: verdicts only, timings shown as pipeline checks.
- **Revisions and versions**: the selector passes only evaluations of one problem version and one timing protocol
  revision; rows of different ones are never ranked together.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Mapping

from leaderboard.rankings import significance

PAIRED = "median of paired per-iteration ratios"
RATIO_OF_MEDIANS = "ratio of the baseline's median to the solution's median"


def estimator_label(estimator: str | None, revision: int | None) -> str:
    """How a speedup was formed, in a few words (docs/protocol.md, "Timing")."""
    text = (estimator or "").lower()
    if text.startswith("median of per-iteration ratios") or "paired" in text:
        return PAIRED
    if "ratio of medians" in text or "ratio of the" in text:
        return RATIO_OF_MEDIANS
    if revision is not None:
        return RATIO_OF_MEDIANS if revision == 1 else PAIRED
    return "not recorded (revision 2 or earlier)"


@dataclass(frozen=True)
class Verification:
    """The re-measurement of a ranked figure: ``state`` is "verified" (its interval overlaps the figure's),
    "flagged" (it does not: both figures are shown), "pending" (queued or running) or "failed" (it did not pass)."""

    state: str
    submission_id: int
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    other_host: bool | None = None  # measured on another host than the original (None: unknown)

    @property
    def verified(self) -> bool:
        return self.state == "verified"

    @property
    def flagged(self) -> bool:
        return self.state == "flagged"


@dataclass(frozen=True)
class RankingEntry:
    rank: int  # position in the ranking (1 = fastest); see ``rank_range`` for what the intervals allow
    username: str
    user_id: int
    submission_id: int  # the first evaluation of this solution
    speedup: float | None  # pooled over ``evaluations``
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    baseline_median_us: float | None  # medians over the evaluations
    solution_median_us: float | None
    roofline_fraction: float | None
    submitted_at: datetime
    model_run_id: int | None = None
    model: str = ""
    protocol: str = ""
    evaluations: int = 1
    source_key: str = ""
    estimator: str = ""
    protocol_revision: int | None = None
    problem_version: int | None = None
    rank_best: int | None = None
    rank_worst: int | None = None
    timed: bool = True
    verification: Verification | None = None
    submission_ids: tuple[int, ...] = ()

    @property
    def rank_label(self) -> str:
        if not self.timed or self.rank_best is None:
            return ""
        return significance.rank_label((self.rank_best, self.rank_worst or self.rank_best))

    @property
    def pipeline_check(self) -> bool:
        """Timings of a profile that does not measure speed: shown as a pipeline check, never as a speedup."""
        return not self.timed


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def verification_of(
    estimate: significance.Estimate | None, evaluations: list[Mapping[str, Any]], remeasures: list[Mapping[str, Any]]
) -> Verification | None:
    """The verdict of a row's latest settled re-measurement against its pooled ``estimate`` (``evaluations``: its
    evaluations, of which only the measuring host is read; ``remeasures``: in submission order)."""
    if not remeasures:
        return None
    done = [r for r in remeasures if r.get("verdict") is not None]
    if not done:
        return Verification("pending", remeasures[-1]["submission_id"])
    last = max(done, key=lambda r: r["submission_id"])
    hosts = {e.get("worker") for e in evaluations if e.get("worker")}
    other = (last.get("worker") not in hosts) if last.get("worker") and hosts else None
    if last["verdict"] != "passed" or last.get("speedup") is None:
        return Verification("failed", last["submission_id"], other_host=other)
    remeasured = (
        significance.Interval(last["low"], last["high"])
        if last.get("low") is not None and last.get("high") is not None
        else None
    )
    agree = significance.agrees(
        estimate.interval if estimate else None,
        remeasured,
        original_value=estimate.value if estimate else None,
        remeasured_value=last["speedup"],
    )
    return Verification(
        "verified" if agree else "flagged",
        last["submission_id"],
        last["speedup"],
        last.get("low"),
        last.get("high"),
        other,
    )


def rank_solutions(
    evaluations: Iterable[Mapping[str, Any]],
    *,
    timed: bool,
    remeasures: Iterable[Mapping[str, Any]] = (),
    protocols: Mapping[int, str] | None = None,
) -> list[RankingEntry]:
    """The ranking from passed evaluations, each a mapping with: submission_id, user_id, username, model_run_id,
    model, source_key, created_at, speedup, low, high, baseline_us, solution_us, roofline, revision, estimator,
    version, worker. ``remeasures``: mappings with remeasure_of, submission_id, verdict, speedup, low, high, worker
    (verdict None while pending). ``protocols``: run id -> protocol label."""
    protocols = protocols or {}
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    for e in sorted(evaluations, key=lambda e: (e["created_at"], e["submission_id"])):
        by_key.setdefault(e["source_key"] or f"sub:{e['submission_id']}", []).append(e)
    checks: dict[int, list[Mapping[str, Any]]] = {}
    for r in remeasures:
        checks.setdefault(r["remeasure_of"], []).append(r)

    best: dict[tuple[int, int | None], tuple[tuple, RankingEntry]] = {}
    for key, items in by_key.items():
        first = items[0]
        estimate = significance.pool([(e["speedup"], e["low"], e["high"]) for e in items]) if timed else None
        mine = [r for e in items for r in checks.get(e["submission_id"], [])]
        entry = RankingEntry(
            rank=0,
            username=first["username"],
            user_id=first["user_id"],
            submission_id=first["submission_id"],
            speedup=estimate.value if estimate else None,
            speedup_ci_low=estimate.low if estimate else None,
            speedup_ci_high=estimate.high if estimate else None,
            baseline_median_us=_median(e["baseline_us"] for e in items),
            solution_median_us=_median(e["solution_us"] for e in items),
            roofline_fraction=_median(e["roofline"] for e in items) if timed else None,
            submitted_at=first["created_at"],
            model_run_id=first["model_run_id"],
            model=first.get("model") or "",
            protocol=protocols.get(first["model_run_id"], "") if first["model_run_id"] else "",
            evaluations=len(items),
            source_key=key,
            estimator=estimator_label(first.get("estimator"), first.get("revision")),
            protocol_revision=first.get("revision"),
            problem_version=first.get("version"),
            timed=timed,
            verification=verification_of(estimate, items, sorted(mine, key=lambda r: r["submission_id"]))
            if timed
            else None,
            submission_ids=tuple(e["submission_id"] for e in items),
        )
        entrant = (first["user_id"], first["model_run_id"])
        order = (
            (
                (0, -entry.speedup) if entry.speedup is not None else (1, 0.0),
                first["created_at"],
                first["submission_id"],
            )
            if timed
            else ((0, 0.0), first["created_at"], first["submission_id"])
        )
        if entrant not in best or order < best[entrant][0]:
            best[entrant] = (order, entry)

    ranked = [entry for _, entry in sorted(best.values(), key=lambda pair: pair[0])]
    intervals = [
        significance.Interval(e.speedup_ci_low, e.speedup_ci_high)
        if timed and e.speedup_ci_low is not None and e.speedup_ci_high is not None
        else None
        for e in ranked
    ]
    ranges = significance.rank_ranges(intervals)
    out = []
    for position, (entry, span) in enumerate(zip(ranked, ranges), start=1):
        values = dict(entry.__dict__)
        values.update(
            rank=position,
            rank_best=span[0] if span else (position if timed else None),
            rank_worst=span[1] if span else (position if timed else None),
        )
        out.append(RankingEntry(**values))
    return out
