"""Fills the database with a realistic, made-up leaderboard: demo problems, users, model runs with k attempts
per problem and their results, and solo submissions; then computes every run's RunScore through the service
the real pipeline uses. For trying the pages and measuring them at scale (benchmarks/ranking_pages.py).

    python manage.py seed_demo --runs 100 --problems 60 --attempts 3

Everything it makes is marked: problems are in suite "demo" (ids ``<category>/demo_NNN``), runs have
``is_demo=True``, users are called ``demo-user-NN``. Fake problems exist only here. A second run replaces the
previous demo data (and only it); ``--clear`` removes it and stops.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from datetime import date, timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils import timezone

from evaluator.contract.result import TIMING_PROTOCOL_REVISION, empty_document
from leaderboard.models import ModelRun, Problem, Result, RunScore, Submission, Trajectory
from leaderboard.rankings.generations import rankings_changed
from leaderboard.rankings.scores import stored_protocol_label
from leaderboard.rankings.services import run_score_refresh, standings_rebuild
from leaderboard.submissions.fingerprint import source_key
from leaderboard.submissions.queueing import job_timeout_s
from problems.registry import CATEGORIES

DEMO_SUITE = "demo"
DEMO_USER_PREFIX = "demo-user-"
PROFILES = ("h200-nvlink-4", "h200-nvlink-8", "h100-nvlink-8", "cpu-gloo-4")
PRECISIONS = ("bf16", "bf16", "fp8", "fp32")
FAMILIES = ("atlas-coder", "kestrel", "quokka-instruct", "nimbus", "orca-kernel", "tern", "marlin-r", "basalt")
PROVIDERS = ("Atlas AI", "Kestrel Labs", "Quokka", "Nimbus Research", "Orca Systems", "Tern", "Marlin", "Basalt")
SIZES = ("8b", "32b", "70b", "235b-a22b", "405b", "mini", "pro")
BATCH = 2000
DEMO_SOURCE = (
    "# demo attempt made up by `manage.py seed_demo`; never evaluated\n"
    "def solution(*inputs):\n    raise NotImplementedError('demo')\n"
)


class Command(BaseCommand):
    help = __doc__.split("\n\n")[0]

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=100)
        parser.add_argument("--problems", type=int, default=60)
        parser.add_argument("--attempts", type=int, default=3, help="k: attempts per problem in every run")
        parser.add_argument("--users", type=int, default=12)
        parser.add_argument("--seed", type=int, default=20261129)
        parser.add_argument(
            "--min-coverage",
            type=float,
            default=1.0,
            help="each run attempts a random share of the problems between this and 1 (default: all)",
        )
        parser.add_argument("--clear", action="store_true", help="remove the demo data and stop")

    def handle(self, *args, runs, problems, attempts, users, seed: int, clear, min_coverage, **options):
        if min(runs, problems, attempts, users) < (0 if clear else 1):
            raise CommandError("--runs, --problems, --attempts and --users must be 1 or more")
        started = time.perf_counter()
        removed = clear_demo()
        if removed:
            self.stdout.write(f"removed the previous demo data: {removed}")
        if clear:
            return
        report = seed_demo(
            runs=runs,
            problems=problems,
            attempts=attempts,
            users=users,
            seed=seed,
            min_coverage=min_coverage,
            log=lambda text: self.stdout.write(text),
        )
        if connection.vendor == "postgresql":
            # A bulk load leaves the planner without statistics until autovacuum analyzes the tables (never, where it
            # is off): the pages' queries would be planned on guesses (a parallel scan to find a handful of rows).
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        self.stdout.write(self.style.SUCCESS(f"seeded {report} in {time.perf_counter() - started:.1f} s"))


def clear_demo() -> str:
    """Deletes every demo row (and nothing else), children first, with set-based deletes."""
    User = get_user_model()
    demo_problems = Problem.objects.filter(suite=DEMO_SUITE)
    demo_users = User.objects.filter(username__startswith=DEMO_USER_PREFIX)
    submissions = Submission.objects.filter(problem__suite=DEMO_SUITE) | Submission.objects.filter(
        model_run__is_demo=True
    )
    counts = {
        "trajectories": Trajectory.objects.filter(submission__in=submissions).delete()[0],
        "results": Result.objects.filter(submission__in=submissions).delete()[0],
    }
    counts["submissions"] = submissions.delete()[0]
    RunScore.objects.filter(model_run__is_demo=True).delete()
    counts["runs"] = ModelRun.objects.filter(is_demo=True).delete()[0]
    counts["problems"] = demo_problems.delete()[0]
    counts["users"] = demo_users.delete()[0]
    if any(counts.values()):
        standings_rebuild()  # the standings counted what was deleted here
    rankings_changed()  # rows deleted here bypass the services: every cached ranking page may show them
    return ", ".join(f"{n} {what}" for what, n in counts.items() if n)


def _demo_problems(count: int, rng: random.Random) -> list[Problem]:
    categories = list(CATEGORIES)
    rows = []
    for i in range(count):
        category = categories[i % len(categories)]
        pid = f"{category}/demo_{i + 1:03d}"
        rows.append(
            Problem(
                id=pid,
                title=f"Demo problem {i + 1} ({CATEGORIES[category].lower()})",
                category=category,
                summary="Demo data made up by `manage.py seed_demo`; not a real problem.",
                version=1,
                content_hash=hashlib.sha256(pid.encode()).hexdigest(),
                statement=(
                    "Made up by `python manage.py seed_demo` to fill a realistic database. Not part of the suite."
                ),
                reference_source="# demo problem: no reference\n",
                codebase="demo",
                function="demo",
                world_sizes=[2, 4, 8],
                presets={"small": {"dtype": "float32", "params": {}}, "bench": {"dtype": "bfloat16", "params": {}}},
                tolerances={"float32": {"atol": 1e-5, "rtol": 1e-5}, "bfloat16": {"atol": 1e-2, "rtol": 1e-2}},
                roofline={},
                suite=DEMO_SUITE,
                is_active=True,
            )
        )
    Problem.objects.bulk_create(rows)
    return rows


def _document(problem: Problem, verdict: str, speedup: float | None, baseline_us: float, roofline_us: float) -> dict:
    doc = empty_document()
    doc["verdict"] = verdict
    doc["message"] = f"demo result ({verdict})"
    doc["problem"] = {"id": problem.id, "version": problem.version, "content_hash": problem.content_hash}
    if speedup is not None:
        solution_us = baseline_us / speedup
        doc["timing"] = {
            "method": "demo",
            "baseline": {"median_us": baseline_us},
            "solution": {"median_us": solution_us},
            "speedup": speedup,
            "speedup_ci": [speedup * 0.97, speedup * 1.03],
            "protocol_revision": TIMING_PROTOCOL_REVISION,
            "speedup_estimator": "median of per-iteration ratios (demo)",
        }
        doc["roofline"] = {
            "time_us": roofline_us,
            "bound": "link",
            "solution_fraction": roofline_us / solution_us,
            "baseline_fraction": roofline_us / baseline_us,
        }
    return doc


def _outcome(rng: random.Random, skill: float, difficulty: float, speed: float) -> tuple[str, float | None]:
    if rng.random() < 0.01:
        return "infra_error", None
    if rng.random() < 1 / (1 + math.exp(-(skill - difficulty))):
        return "passed", round(math.exp(rng.gauss(speed, 0.35)), 4)
    return rng.choices(
        ["wrong_output", "compile_error", "runtime_error", "timeout", "rejected"], weights=[50, 20, 18, 8, 4]
    )[0], None


def seed_demo(
    *, runs: int, problems: int, attempts: int, users: int, seed: int, min_coverage: float = 1.0, log=print
) -> str:
    rng = random.Random(seed)
    now = timezone.now()
    with transaction.atomic():
        demo = _demo_problems(problems, rng)
        difficulty = {p.id: rng.gauss(1.0, 1.6) for p in demo}
        speed_offset = {p.id: rng.gauss(0.0, 0.25) for p in demo}
        baseline_us = {p.id: math.exp(rng.uniform(math.log(15), math.log(5000))) for p in demo}
        roof_share = {p.id: rng.uniform(0.15, 0.6) for p in demo}  # roofline / baseline time

        User = get_user_model()
        people = [User(username=f"{DEMO_USER_PREFIX}{i + 1:02d}") for i in range(users)]
        for person in people:
            person.set_unusable_password()
        people = User.objects.bulk_create(people)

        run_rows = []
        for i in range(runs):
            family = rng.randrange(len(FAMILIES))
            mode = "agentic" if rng.random() < 0.6 else "zero-shot"
            turns = rng.choice([5, 10, 20, 40]) if mode == "agentic" else 0
            tokens = int(problems * attempts * (3000 if mode == "zero-shot" else 2500 * turns) * rng.uniform(0.5, 1.5))
            model = f"{FAMILIES[family]}-{rng.choice(SIZES)}"
            run_rows.append(
                ModelRun(
                    user=people[i % len(people)],
                    model=model,
                    provider=PROVIDERS[family],
                    mode=mode,
                    k=attempts,
                    turn_budget=turns,
                    tokens=tokens,
                    wall_time_s=round(tokens / rng.uniform(400, 2000), 1),
                    profile=rng.choice(PROFILES),
                    precision=rng.choice(PRECISIONS),
                    suite=DEMO_SUITE,
                    run_date=date.today() - timedelta(days=rng.randrange(365)),
                    open_weights=rng.random() < 0.4,
                    notes="Demo run made up by `manage.py seed_demo`.",
                    is_demo=True,
                    state=ModelRun.State.FINISHED,
                    manifest={
                        "model": model,
                        "provider": PROVIDERS[family],
                        "protocol": mode,
                        "k": attempts,
                        "turn_budget": turns,
                        "tokens": tokens,
                        "demo": True,
                    },
                    archive_name="demo.zip",
                    archive_sha256=hashlib.sha256(f"demo-{seed}-{i}".encode()).hexdigest(),
                    finished_at=now,
                )
            )
        for run in run_rows:
            run.protocol_label = stored_protocol_label(run)
        run_rows = ModelRun.objects.bulk_create(run_rows)
        log(f"  {len(demo)} demo problems, {len(people)} users, {len(run_rows)} runs")

        timeout = job_timeout_s()
        pending: list[tuple[Submission, dict]] = []
        total = {"submissions": 0}

        def flush() -> None:
            if not pending:
                return
            created = Submission.objects.bulk_create([s for s, _ in pending], batch_size=BATCH)
            Result.objects.bulk_create(
                [
                    Result(
                        submission=s,
                        document=doc,
                        verdict=doc["verdict"],
                        speedup=(doc["timing"] or {}).get("speedup"),
                        speedup_ci_low=(doc["timing"] or {}).get("speedup_ci", [None])[0],
                        speedup_ci_high=(doc["timing"] or {}).get("speedup_ci", [None, None])[1],
                        baseline_median_us=((doc["timing"] or {}).get("baseline") or {}).get("median_us"),
                        solution_median_us=((doc["timing"] or {}).get("solution") or {}).get("median_us"),
                        roofline_fraction=(doc["roofline"] or {}).get("solution_fraction"),
                        problem_version=1,
                        problem_hash=doc["problem"]["content_hash"],
                        protocol_revision=(doc["timing"] or {}).get("protocol_revision"),
                        speedup_estimator=(doc["timing"] or {}).get("speedup_estimator") or "",
                        worker=s.worker,
                    )
                    for s, (_, doc) in zip(created, pending)
                    if doc is not None
                ],
                batch_size=BATCH,
            )
            for s, (_, doc) in zip(created, pending):
                if doc is not None and doc["verdict"] == "passed" and s.model_run_id is None and s.remeasure_of is None:
                    passed_solo.append((s, doc))
            total["submissions"] += len(created)
            pending.clear()

        passed_solo: list[tuple[Submission, dict]] = []

        def add(
            user,
            problem: Problem,
            profile: str,
            verdict: str | None,
            speedup: float | None,
            run: ModelRun | None = None,
            attempt: int | None = None,
            variant: int = 0,
        ) -> None:
            # The source names what makes it a distinct solution: a user's repeats of one variant are the same code.
            text = DEMO_SOURCE + f"_DEMO = {problem.id!r}, {run.pk if run else user.pk}, {attempt or 0}, {variant}\n"
            done = verdict is not None
            submission = Submission(
                user=user,
                problem=problem,
                profile=profile,
                problem_version=1,
                problem_hash=problem.content_hash,
                filename=f"attempt_{attempt}.py" if attempt else "solution.py",
                source=text,
                sha256=hashlib.sha256(text.encode()).hexdigest(),
                source_key=source_key(text),
                state=Submission.State.FINISHED if done else Submission.State.QUEUED,
                verdict=verdict,
                job_id="demo",
                enqueue_count=1,
                enqueued_at=now,
                job_timeout_s=timeout,
                worker=f"demo-host-{rng.randrange(2) + 1}" if done else "",
                started_at=now if done else None,
                finished_at=now if done else None,
                model_run=run,
                attempt=attempt,
            )
            doc = (
                _document(
                    problem,
                    verdict,
                    speedup,
                    baseline_us[problem.id] * rng.uniform(0.97, 1.03),
                    baseline_us[problem.id] * roof_share[problem.id],
                )
                if done
                else None
            )
            pending.append((submission, doc))
            if len(pending) >= BATCH:
                flush()

        unfinished = {run.pk for i, run in enumerate(run_rows) if runs >= 2 and i % 7 == 1}
        partial = {run.pk for i, run in enumerate(run_rows) if runs >= 3 and i % 7 == 2 and len(demo) > 1}
        for run in run_rows:
            skill, speed = rng.gauss(-0.3, 1.0), rng.gauss(0.05, 0.2)
            coverage = rng.uniform(min(max(min_coverage, 0.0), 1.0), 1.0)
            skipped = demo[-1].id if run.pk in partial else None  # a partial run: finished, one problem missing
            for number, problem in enumerate(demo):
                if problem.id == skipped or (coverage < 1.0 and rng.random() > coverage):
                    continue
                for attempt in range(1, attempts + 1):
                    verdict, speedup = _outcome(rng, skill, difficulty[problem.id], speed + speed_offset[problem.id])
                    if run.pk in unfinished and number >= len(demo) // 2:  # still being evaluated
                        verdict, speedup = None, None
                    add(run.user, problem, run.profile, verdict, speedup, run, attempt)
        for person in people:  # hand-written solutions to a third of the problems each, some resubmitted
            for problem in rng.sample(demo, max(1, len(demo) // 3)):
                profile = rng.choice(PROFILES)
                verdict, speedup = _outcome(rng, 1.0, difficulty[problem.id], 0.15 + speed_offset[problem.id])
                add(person, problem, profile, verdict, speedup)
                if verdict == "passed" and rng.random() < 0.3:  # the same code again: pooled, never best-of-N
                    for _ in range(rng.randrange(1, 4)):
                        add(person, problem, profile, "passed", round(speedup * math.exp(rng.gauss(0, 0.08)), 4))
        flush()

        # Re-measurements of some passed solo results on GPU profiles: most agree, a few do not (flagged).
        for original, doc in list(passed_solo):
            if original.profile.startswith("cpu") or rng.random() > 0.15:
                continue
            agrees = rng.random() < 0.8
            factor = rng.uniform(0.995, 1.005) if agrees else rng.uniform(0.6, 0.8)
            speedup = round(doc["timing"]["speedup"] * factor, 4)
            add(original.user, original.problem, original.profile, "passed", speedup)
            pending[-1][0].source, pending[-1][0].source_key = original.source, original.source_key
            pending[-1][0].sha256, pending[-1][0].remeasure_of = original.sha256, original
        passed_solo.clear()
        flush()
        ModelRun.objects.filter(pk__in=unfinished).update(state=ModelRun.State.RUNNING, finished_at=None)

        for run in run_rows:
            run_score_refresh(model_run_id=run.pk)
        standings_rebuild()  # results written here bypass the services: the stored standings are recomputed
        rankings_changed()  # results written here bypass the services: every cached ranking page may be stale
    return f"{len(demo)} problems, {len(people)} users, {len(run_rows)} runs, {total['submissions']} submissions"
