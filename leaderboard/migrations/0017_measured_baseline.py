"""A problem version's baseline on a profile is kept at ingest (``MeasuredBaseline``: how many evaluations timed it and
the median of their medians), which the problem page computed per request over every evaluation; filled here from the
results as they stand, as ``rankings.stored_figures`` writes it."""

import statistics

import django.db.models.deletion
from django.db import migrations, models


def fill(apps, schema_editor):
    Result = apps.get_model("leaderboard", "Result")
    MeasuredBaseline = apps.get_model("leaderboard", "MeasuredBaseline")
    times = {}
    rows = Result.objects.filter(baseline_median_us__isnull=False, problem_version__isnull=False).values_list(
        "submission__problem_id", "submission__profile", "problem_version", "baseline_median_us"
    )
    for problem_id, profile, version, median_us in rows.iterator(chunk_size=5000):
        times.setdefault((problem_id, profile, version), []).append(median_us)
    MeasuredBaseline.objects.bulk_create(
        [
            MeasuredBaseline(
                problem_id=problem_id,
                profile=profile,
                problem_version=version,
                evaluations=len(values),
                median_us=statistics.median(values),
            )
            for (problem_id, profile, version), values in times.items()
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0016_model_run_protocol_label"),
    ]

    operations = [
        migrations.CreateModel(
            name="MeasuredBaseline",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("profile", models.CharField(max_length=64)),
                ("problem_version", models.PositiveIntegerField()),
                ("evaluations", models.PositiveIntegerField()),
                ("median_us", models.FloatField()),
                (
                    "problem",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="measured_baselines",
                        to="leaderboard.problem",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("problem", "profile", "problem_version"), name="measured_baseline_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
