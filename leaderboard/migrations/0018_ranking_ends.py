"""The overall ranking's counts and sorted interval ends per set of filters are kept at ingest (``RankingEnds``),
which every page of the ranking aggregated over every run per request; filled here from the runs and their scores
as they stand, as ``rankings.rank_ends`` computes them."""

from django.db import migrations, models


def fill(apps, schema_editor):
    from leaderboard.rankings.rank_ends import RUN_COLUMNS, ends_rows

    ModelRun = apps.get_model("leaderboard", "ModelRun")
    RankingEnds = apps.get_model("leaderboard", "RankingEnds")
    rows = ModelRun.objects.order_by().values_list(*RUN_COLUMNS).iterator(chunk_size=5000)
    RankingEnds.objects.bulk_create([RankingEnds(**record) for record in ends_rows(rows)], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0017_measured_baseline"),
    ]

    operations = [
        migrations.CreateModel(
            name="RankingEnds",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("filters", models.CharField(max_length=400, unique=True)),
                ("runs", models.PositiveIntegerField(help_text="runs these filters keep, any standing")),
                ("ranked", models.PositiveIntegerField(help_text="of which ranked")),
                ("pass_at_k_lows", models.BinaryField(default=b"")),
                ("pass_at_k_highs", models.BinaryField(default=b"")),
                ("fast_1_lows", models.BinaryField(default=b"")),
                ("fast_1_highs", models.BinaryField(default=b"")),
                ("fast_1_5_lows", models.BinaryField(default=b"")),
                ("fast_1_5_highs", models.BinaryField(default=b"")),
                ("fast_2_lows", models.BinaryField(default=b"")),
                ("fast_2_highs", models.BinaryField(default=b"")),
                ("speedup_lows", models.BinaryField(default=b"")),
                ("speedup_highs", models.BinaryField(default=b"")),
            ],
            options={
                "verbose_name_plural": "ranking ends",
            },
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
