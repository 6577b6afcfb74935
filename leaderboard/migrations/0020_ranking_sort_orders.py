"""Every other order the ranking of runs offers, read from an index instead of sorting every ranked run: each score
figure both ways over the ranked runs (the figure, then pass@k, the ranking's first tie-break), pass@k ascending, and
the run's model, tokens and wall time (never null: one index read either way, as id's and created_at's are)."""

from django.conf import settings
from django.db import migrations, models

from leaderboard.sort_indexes import AddIndexOnPostgres


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0019_run_score_ranked_order"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(fields=["model"], name="run_model"),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(fields=["tokens"], name="run_tokens"),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(fields=["wall_time_s"], name="run_wall_time"),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_k"), nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_pass_at_k_asc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_1"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_pass_at_1_desc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_1"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_pass_at_1_asc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_at_k"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_desc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_at_k"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_asc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_5_at_k"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_5_desc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_5_at_k"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_5_asc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_2_at_k"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_2_desc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_2_at_k"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_2_asc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("geomean_speedup"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_speedup_desc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("geomean_speedup"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_speedup_asc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("mean_roofline_fraction"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_roofline_desc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("mean_roofline_fraction"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_roofline_asc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("coverage"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_coverage_desc",
            ),
        ),
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("coverage"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_coverage_asc",
            ),
        ),
    ]
