"""What the ranking of runs and a problem page read instead of computing it per request, kept at ingest from now on:
each problem standing's best speedup over time (``ProblemStanding.history``), each problem version's measured
roofline per profile (``MeasuredRoofline``) and the values the runs' filters offer (``RunFilterChoice``). Filled here
from the rows as they stand, as ``rebuild_standings`` would."""

import math

import django.db.models.deletion
from django.db import migrations, models


def fill(apps, schema_editor):
    ModelRun = apps.get_model("leaderboard", "ModelRun")
    RunFilterChoice = apps.get_model("leaderboard", "RunFilterChoice")
    Result = apps.get_model("leaderboard", "Result")
    MeasuredRoofline = apps.get_model("leaderboard", "MeasuredRoofline")
    ProblemStanding = apps.get_model("leaderboard", "ProblemStanding")
    StandingEntry = apps.get_model("leaderboard", "StandingEntry")

    seen = set(ModelRun.objects.order_by().values_list("profile", "precision", "k").distinct())
    RunFilterChoice.objects.bulk_create([RunFilterChoice(profile=p, precision=q, k=k) for p, q, k in seen])

    newest = {}
    rows = (
        Result.objects.filter(problem_version__isnull=False, document__roofline__time_us__isnull=False)
        .order_by("recorded_at", "submission_id")
        .values_list(
            "submission__problem_id",
            "submission__profile",
            "problem_version",
            "document__roofline__time_us",
            "document__roofline__bound",
            "recorded_at",
            "submission_id",
        )
    )
    for problem_id, profile, version, time_us, bound, at, sid in rows.iterator(chunk_size=2000):
        newest[problem_id, profile, version] = MeasuredRoofline(
            problem_id=problem_id,
            profile=profile,
            problem_version=version,
            time_us=time_us,
            bound=bound,
            recorded_at=at,
            submission_id=sid,
        )
    MeasuredRoofline.objects.bulk_create(newest.values(), batch_size=1000)

    # The best speedup over time, from each standing's rows (as ``overview.best_over_time`` reads them).
    histories = {}
    entries = (
        StandingEntry.objects.filter(speedup__isnull=False)
        .order_by("standing_id", "submitted_at", "submission_id")
        .values_list("standing_id", "submitted_at", "speedup", "model", "model_run_id", "username", "submission_id")
    )
    for standing_id, at, speedup, model, run_id, username, sid in entries.iterator(chunk_size=2000):
        points = histories.setdefault(standing_id, [])
        if math.isfinite(speedup) and (not points or speedup > points[-1][1]):
            points.append([at.isoformat(), speedup, f"{model} (run #{run_id})" if run_id else username, sid])
    for standing_id, points in histories.items():
        ProblemStanding.objects.filter(pk=standing_id).update(history=points)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0012_evaluated_source"),
    ]

    operations = [
        migrations.AddField(
            model_name="problemstanding",
            name="history",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.CreateModel(
            name="RunFilterChoice",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("profile", models.CharField(max_length=64)),
                ("precision", models.CharField(blank=True, max_length=32)),
                ("k", models.PositiveSmallIntegerField()),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("profile", "precision", "k"), name="run_filter_choice_unique")
                ],
            },
        ),
        migrations.CreateModel(
            name="MeasuredRoofline",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("profile", models.CharField(max_length=64)),
                ("problem_version", models.PositiveIntegerField()),
                ("time_us", models.JSONField(blank=True, null=True)),
                ("bound", models.JSONField(blank=True, null=True)),
                ("recorded_at", models.DateTimeField(help_text="when the evaluation it comes from was recorded")),
                ("submission_id", models.PositiveBigIntegerField(help_text="the evaluation it comes from")),
                (
                    "problem",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="measured_rooflines",
                        to="leaderboard.problem",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("problem", "profile", "problem_version"), name="measured_roofline_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
