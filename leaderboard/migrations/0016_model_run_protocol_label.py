"""A model run keeps its protocol's one-line label (``ModelRun.protocol_label``), which every table of runs wrote
per row and per request; filled here for the runs already stored, as creating a run writes it."""

from django.db import migrations, models

from leaderboard.rankings.scores import stored_protocol_label


def fill(apps, schema_editor):
    ModelRun = apps.get_model("leaderboard", "ModelRun")
    changed = []
    for run in ModelRun.objects.only("pk", "mode", "k", "turn_budget", "tokens", "wall_time_s").iterator(
        chunk_size=2000
    ):
        run.protocol_label = stored_protocol_label(run)
        changed.append(run)
    ModelRun.objects.bulk_update(changed, ["protocol_label"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0015_standing_speedups"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelrun",
            name="protocol_label",
            field=models.CharField(blank=True, default="", help_text="the protocol in one line", max_length=200),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
