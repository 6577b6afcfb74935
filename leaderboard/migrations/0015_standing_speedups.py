"""A standing keeps its evaluations' speedups (``ProblemStanding.speedups``), which the problem page's distribution
read from every passed result per request; filled here from the results as they stand."""

from django.db import migrations, models

from evaluator.contract.profiles import PROFILES


def fill(apps, schema_editor):
    """Each standing's speedups from its passed evaluations, as ``problem_standing_refresh`` stores them (none for a
    version not recorded or a profile the site does not know: that standing ranks nothing)."""
    Result = apps.get_model("leaderboard", "Result")
    ProblemStanding = apps.get_model("leaderboard", "ProblemStanding")
    speedups = {}
    rows = Result.objects.filter(
        verdict="passed", submission__remeasure_of__isnull=True, speedup__isnull=False
    ).values_list("submission__problem_id", "submission__profile", "problem_version", "protocol_revision", "speedup")
    for problem_id, profile, version, revision, speedup in rows.iterator(chunk_size=5000):
        if version and profile in PROFILES:
            speedups.setdefault((problem_id, profile, version, revision or 0), []).append(speedup)
    for pk, problem_id, profile, version, revision in ProblemStanding.objects.values_list(
        "pk", "problem_id", "profile", "problem_version", "protocol_revision"
    ):
        found = speedups.get((problem_id, profile, version, revision))
        if found:
            ProblemStanding.objects.filter(pk=pk).update(speedups=sorted(found))


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0014_standing_history_db_default"),
    ]

    operations = [
        migrations.AddField(
            model_name="problemstanding",
            name="speedups",
            field=models.JSONField(
                blank=True, db_default=models.Value([], output_field=models.JSONField()), default=list
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
