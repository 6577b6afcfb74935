"""``Submission`` and ``TestRun`` take their shared fields from one abstract model, ``EvaluatedSource``: a test's
``sha256`` gains the index a submission's has, and its ``job_timeout_s`` the same help text. No table or column
changes name and no row is touched: adding the index keeps every value."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0011_standing_entries"),
    ]

    operations = [
        migrations.AlterField(
            model_name="testrun",
            name="job_timeout_s",
            field=models.PositiveIntegerField(help_text="the RQ job's limit, 1.2× the evaluator's phase limits"),
        ),
        migrations.AlterField(
            model_name="testrun",
            name="sha256",
            field=models.CharField(db_index=True, max_length=64),
        ),
    ]
