"""How scores are written as JSON, once for every page, export and API answer.

Two shapes exist and each is written here only: the **public** one (the API, exports' metadata): ``pass_at_k``,
``fast_p_at_k`` keyed ``"1"``, ``"1.5"``, ``"2"``; and the **stored** one (``RunScore.by_category``), the field names
of ``metrics.Aggregate`` with fast_p keyed ``"1.0"``, kept as rows already hold it. A score never travels without
its protocol: the public shapes carry its label.
"""

from __future__ import annotations

from typing import Any, Mapping

from leaderboard.rankings import metrics, significance
from leaderboard.rankings.memo import Memo


def fast_p(mapping: Mapping[float, float | None]) -> dict[str, float | None]:
    """fast_p@k keyed as the public shape writes p: ``"1"``, ``"1.5"``, ``"2"``."""
    return {f"{float(p):g}": v for p, v in mapping.items()}


# A protocol's public shape, kept per process for the values it is built from (with their types: 3 and 3.0 are
# written differently): a table of runs writes a run's protocol two or three times a row (its label, its fields, its
# scores' label), and checking and labelling it was a tenth of an export's CPU.
_PROTOCOLS = Memo(4096)
_PROTOCOL_FIELDS = ("mode", "k", "turn_budget", "tokens", "wall_time_s")


def protocol(run: Any) -> dict[str, Any]:
    """A run's protocol as an object: mode, k, turn budget, tokens, wall time and its one-line label (a new dict
    each call: the caller may change it). The label is the one stored with the run (``ModelRun.protocol_label``)
    when it has one: its columns were a valid protocol when it was written."""
    label = getattr(run, "protocol_label", "")
    if label:
        return {
            "mode": run.mode,
            "k": run.k,
            "turn_budget": run.turn_budget,
            "tokens": run.tokens,
            "wall_time_s": run.wall_time_s,
            "label": label,
        }
    values = tuple(getattr(run, name) for name in _PROTOCOL_FIELDS)
    return dict(_PROTOCOLS.get_or_build((values, tuple(map(type, values))), lambda: _protocol(run)))


def _protocol(run: Any) -> dict[str, Any]:
    p = metrics.Protocol.of_run(run)
    return {
        "mode": p.mode,
        "k": p.k,
        "turn_budget": p.turn_budget,
        "tokens": p.tokens,
        "wall_time_s": p.wall_time_s,
        "label": p.label(),
    }


def stored_protocol_label(run: Any) -> str:
    """The label ``ModelRun.protocol_label`` stores for ``run``: its protocol's ``label`` over its columns as the
    database holds them (k, turns and tokens integers, wall time a float); "" when they are no valid protocol, so
    readers write such a run as they always did."""
    try:
        return metrics.Protocol(
            run.mode, int(run.k), int(run.turn_budget), int(run.tokens), float(run.wall_time_s)
        ).label()
    except (ValueError, TypeError, AttributeError):
        return ""


def protocol_fields(run: Any) -> dict[str, Any]:
    """The same, flat, for the rows and metadata of exports (``protocol`` is the label)."""
    p = protocol(run)
    return {
        "protocol": p["label"],
        "protocol_mode": p["mode"],
        "protocol_k": p["k"],
        "protocol_turn_budget": p["turn_budget"],
        "protocol_tokens": p["tokens"],
        "protocol_wall_time_s": p["wall_time_s"],
    }


STORED_INTERVALS = {
    "pass_at_k": ("pass_at_k_low", "pass_at_k_high"),
    "fast_1": ("fast_1_low", "fast_1_high"),
    "fast_1_5": ("fast_1_5_low", "fast_1_5_high"),
    "fast_2": ("fast_2_low", "fast_2_high"),
    "geomean": ("geomean_low", "geomean_high"),
}


def intervals(a: metrics.Aggregate) -> dict[str, list[float]]:
    return {name: [iv.low, iv.high] for name, iv in a.intervals.items()}


def difference(d: significance.Difference) -> dict[str, Any]:
    """One figure of a comparison: B - A (B / A for the geomean) over the common problems, its interval and
    whether it is significant."""
    return {
        "figure": d.name,
        "a": d.a,
        "b": d.b,
        "difference": d.difference,
        "ratio": d.ratio,
        "interval": [d.interval.low, d.interval.high] if d.interval else None,
        "problems": d.problems,
        "significant": d.significant,
        "verdict": "significant" if d.significant else "no significant difference",
    }


def aggregate(a: metrics.Aggregate) -> dict[str, Any]:
    """A run's (or a category's) means, public shape."""
    return {
        "problems": a.problems,
        "pass_at_k": a.mean_pass_at_k,
        "intervals": intervals(a),
        "fast_p_at_k": fast_p(a.mean_fast_p_at_k),
        "geomean_speedup": a.geomean_speedup,
        "mean_roofline_fraction": a.mean_roofline_fraction,
        "coverage": a.coverage,
        "not_scorable": list(a.not_scorable),
        "not_attempted": list(a.not_attempted),
    }


def aggregate_record(a: metrics.Aggregate) -> dict[str, Any]:
    """The same means as ``RunScore.by_category`` stores them (stored shape)."""
    return {
        "problems": a.problems,
        "mean_pass_at_k": a.mean_pass_at_k,
        "mean_fast_p_at_k": {str(p): v for p, v in a.mean_fast_p_at_k.items()},
        "geomean_speedup": a.geomean_speedup,
        "mean_roofline_fraction": a.mean_roofline_fraction,
        "correct_attempts": a.correct_attempts,
        "not_scorable": list(a.not_scorable),
        "not_attempted": list(a.not_attempted),
        "coverage": a.coverage,
    }


def problem_score(s: metrics.ProblemScore) -> dict[str, Any]:
    return {
        "problem": s.problem_id,
        "category": s.category,
        "n": s.n,
        "c": s.c,
        "scorable": s.scorable,
        "pass_at_k": s.pass_at_k,
        "fast_p_at_k": fast_p(s.fast_p_at_k),
        "best_speedup": s.best_speedup,
        "geomean_speedup": s.geomean_speedup,
        "mean_roofline_fraction": s.mean_roofline_fraction,
    }


def run_score(score: metrics.RunScore) -> dict[str, Any]:
    """A run scored now: overall, per category and per problem, with the k it is scored at and the protocol."""
    return {
        "scored_at_k": score.k,
        "protocol": score.label(),
        "overall": aggregate(score.overall),
        "by_category": {c: aggregate(a) for c, a in score.by_category.items()},
        "problems": [problem_score(s) for s in score.problems.values()],
    }


def overall(score: metrics.RunScore) -> dict[str, Any]:
    """The whole run's means and the k they are at (exports' metadata)."""
    return {"scored_at_k": score.k, **aggregate(score.overall)}


def stored(run: Any) -> dict[str, Any]:
    """A run's precomputed scores (its RunScore row; all empty before the first result), public shape."""
    row = getattr(run, "score", None)
    label = protocol(run)["label"]
    if row is None:
        return {
            "scored_at_k": run.k,
            "protocol": label,
            "pass_at_k": None,
            "pass_at_1": None,
            "fast_p_at_k": fast_p({p: None for p in metrics.FAST_P_THRESHOLDS}),
            "geomean_speedup": None,
            "mean_roofline_fraction": None,
            "coverage": None,
            "problems_scored": 0,
            "problems_not_scorable": 0,
            "problems_not_attempted": 0,
            "correct_attempts": 0,
            "intervals": {},
            "status": "unfinished",
            "timed": metrics.measures_speed(run.profile),
            "protocol_revision": None,
        }
    return {
        "scored_at_k": row.k,
        "protocol": label,
        "pass_at_k": row.pass_at_k,
        "pass_at_1": row.pass_at_1,
        "fast_p_at_k": fast_p({p: getattr(row, metrics.fast_p_field(p)) for p in metrics.FAST_P_THRESHOLDS}),
        "geomean_speedup": row.geomean_speedup,
        "mean_roofline_fraction": row.mean_roofline_fraction,
        "coverage": row.coverage,
        "problems_scored": row.problems_scored,
        "problems_not_scorable": row.problems_not_scorable,
        "problems_not_attempted": row.problems_not_attempted,
        "correct_attempts": row.correct_attempts,
        "intervals": {
            name: [getattr(row, low), getattr(row, high)]
            for name, (low, high) in STORED_INTERVALS.items()
            if getattr(row, low) is not None
        },
        "status": row.status,
        "timed": row.timed,
        "protocol_revision": row.protocol_revision,
    }


# --- a run's whole score as ``RunScore.detail`` stores it (written at ingest, read by the run and compare pages) --


# Mappings are written as [key, value] pairs: a JSON object in PostgreSQL (jsonb) does not keep its keys' order.
def _keyed(mapping: Mapping[Any, Any]) -> list[list[Any]]:
    return [[p, v] for p, v in mapping.items()]


def _unkeyed(pairs: list[list[Any]]) -> dict[Any, Any]:
    return {p: v for p, v in pairs}


def _aggregate_record(a: metrics.Aggregate) -> dict[str, Any]:
    return {
        "problems": a.problems,
        "mean_pass_at_k": a.mean_pass_at_k,
        "mean_fast_p_at_k": _keyed(a.mean_fast_p_at_k),
        "geomean_speedup": a.geomean_speedup,
        "mean_roofline_fraction": a.mean_roofline_fraction,
        "correct_attempts": a.correct_attempts,
        "timed_correct_attempts": a.timed_correct_attempts,
        "not_scorable": list(a.not_scorable),
        "not_attempted": list(a.not_attempted),
        "intervals": [[name, iv.low, iv.high] for name, iv in a.intervals.items()],
    }


def _aggregate_of(d: Mapping[str, Any]) -> metrics.Aggregate:
    return metrics.Aggregate(
        problems=d["problems"],
        mean_pass_at_k=d["mean_pass_at_k"],
        mean_fast_p_at_k=_unkeyed(d["mean_fast_p_at_k"]),
        geomean_speedup=d["geomean_speedup"],
        mean_roofline_fraction=d["mean_roofline_fraction"],
        correct_attempts=d["correct_attempts"],
        timed_correct_attempts=d["timed_correct_attempts"],
        not_scorable=tuple(d["not_scorable"]),
        not_attempted=tuple(d["not_attempted"]),
        intervals={name: significance.Interval(low, high) for name, low, high in d["intervals"]},
    )


def _problem_record(s: metrics.ProblemScore) -> list[Any]:
    return [
        s.problem_id,
        s.category,
        s.k,
        s.n,
        s.c,
        s.excluded,
        s.pass_at_k,
        _keyed(s.fast_counts),
        _keyed(s.fast_p_at_k),
        s.best_speedup,
        s.geomean_speedup,
        s.mean_roofline_fraction,
    ]


def _problem_of(row: list[Any]) -> metrics.ProblemScore:
    pid, category, k, n, c, excluded, pass_k, counts, fast, best, geomean, roofline = row
    return metrics.ProblemScore(
        problem_id=pid,
        category=category,
        k=k,
        n=n,
        c=c,
        excluded=excluded,
        pass_at_k=pass_k,
        fast_counts=_unkeyed(counts),
        fast_p_at_k=_unkeyed(fast),
        best_speedup=best,
        geomean_speedup=geomean,
        mean_roofline_fraction=roofline,
    )


def score_record(score: metrics.RunScore) -> dict[str, Any]:
    """A run scored (``run_selectors.model_run_score``) as JSON, every figure kept exactly (floats written as
    ``repr`` writes them read back to the same value, mappings as ordered pairs), so ``score_of`` gives back an
    equal ``metrics.RunScore``."""
    return {
        "k": score.k,
        "thresholds": list(score.thresholds),
        "timed": score.timed,
        "problems": [_problem_record(s) for s in score.problems.values()],
        "overall": _aggregate_record(score.overall),
        "by_category": [[c, _aggregate_record(a)] for c, a in score.by_category.items()],
        "not_scorable": list(score.not_scorable),
        "not_attempted": list(score.not_attempted),
    }


def score_of(record: Mapping[str, Any], protocol: metrics.Protocol) -> metrics.RunScore:
    """The ``metrics.RunScore`` that ``score_record`` wrote, beside the run's ``protocol``."""
    problems = [_problem_of(row) for row in record["problems"]]
    return metrics.RunScore(
        protocol=protocol,
        k=record["k"],
        thresholds=tuple(record["thresholds"]),
        problems={s.problem_id: s for s in problems},
        overall=_aggregate_of(record["overall"]),
        by_category={c: _aggregate_of(a) for c, a in record["by_category"]},
        not_scorable=tuple(record["not_scorable"]),
        not_attempted=tuple(record["not_attempted"]),
        timed=record["timed"],
    )


def stored_score(run: Any, k: int | None = None) -> metrics.RunScore | None:
    """The run's whole score at ``k`` (default: its own) as its RunScore row stores it, with its intervals; None when
    the row holds none at that k (no result yet, or another k: the caller scores the run then)."""
    row = getattr(run, "score", None)  # None when it has no row yet (the accessor's error is an AttributeError)
    record = (getattr(row, "detail", None) or {}).get("score")
    if not record or record["k"] != (run.k if k is None else k):
        return None
    return score_of(record, metrics.Protocol.of_run(run))


def unscored(run: Any) -> metrics.RunScore:
    """A run's score with nothing counted (what ``metrics.score_run`` gives for no attempts, written out so that
    nothing is scored): what its page shows while its row holds no whole score."""
    thresholds = metrics.FAST_P_THRESHOLDS
    overall = {
        "problems": 0,
        "mean_pass_at_k": None,
        "mean_fast_p_at_k": [[p, None] for p in thresholds],
        "geomean_speedup": None,
        "mean_roofline_fraction": None,
        "correct_attempts": 0,
        "timed_correct_attempts": 0,
        "not_scorable": [],
        "not_attempted": [],
        "intervals": [],
    }
    return score_of(
        {
            "k": run.k,
            "thresholds": list(thresholds),
            "timed": metrics.measures_speed(run.profile),
            "problems": [],
            "overall": overall,
            "by_category": [],
            "not_scorable": [],
            "not_attempted": [],
        },
        metrics.Protocol.of_run(run),
    )


def stored_curves(run: Any) -> dict[str, Any] | None:
    """The run's curves (``overview.RunCurves`` as a dict) as its RunScore row stores them, or None."""
    row = getattr(run, "score", None)
    return (getattr(row, "detail", None) or {}).get("curves")


# --- two runs compared, as ``RunComparison.record`` stores it (written by a job, read by the comparison) ----------


def _difference_record(d: significance.Difference) -> list[Any]:
    interval = [d.interval.low, d.interval.high] if d.interval else None
    return [d.name, d.a, d.b, d.difference, interval, d.ratio, d.problems]


def _difference_of(row: list[Any]) -> significance.Difference:
    name, a, b, difference, interval, ratio, problems = row
    return significance.Difference(
        name, a, b, difference, significance.Interval(*interval) if interval else None, ratio=ratio, problems=problems
    )


def comparison_record(
    *,
    k: int,
    a: metrics.RunScore,
    b: metrics.RunScore,
    differences: list[significance.Difference],
    titles: Mapping[str, tuple[str, str]],
) -> dict[str, Any]:
    """Both runs' scores at ``k``, the differences with their intervals, and the title and category of every
    problem either attempted (the comparison's rows), every figure kept exactly as ``score_record`` keeps it."""
    return {
        "k": k,
        "a": score_record(a),
        "b": score_record(b),
        "differences": [_difference_record(d) for d in differences],
        "titles": [[pid, title, category] for pid, (title, category) in titles.items()],
    }


def comparison_of(
    record: Mapping[str, Any], a: Any, b: Any
) -> tuple[metrics.RunScore, metrics.RunScore, list[significance.Difference], dict[str, tuple[str, str]]]:
    """What ``comparison_record`` wrote, beside the two runs (their protocols)."""
    return (
        score_of(record["a"], metrics.Protocol.of_run(a)),
        score_of(record["b"], metrics.Protocol.of_run(b)),
        [_difference_of(row) for row in record["differences"]],
        {pid: (title, category) for pid, title, category in record["titles"]},
    )
