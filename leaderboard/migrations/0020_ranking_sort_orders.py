"""Every other order the ranking of runs offers, read from an index instead of sorting every run: each score figure
both ways over the ranked runs (the figure, then pass@k, the ranking's first tie-break), pass@k ascending, and the
run's own columns with many values (id, model, upload time, tokens, wall time) in the direction no index read yet."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0019_run_score_ranked_order"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(models.OrderBy(models.F("id"), descending=True, nulls_last=True), name="run_id_desc"),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(
                models.OrderBy(models.F("model"), descending=True, nulls_last=True), name="run_model_desc"
            ),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(
                models.OrderBy(models.F("created_at"), descending=True, nulls_last=True), name="run_created_desc"
            ),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(
                models.OrderBy(models.F("tokens"), descending=True, nulls_last=True), name="run_tokens_desc"
            ),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(
                models.OrderBy(models.F("wall_time_s"), descending=True, nulls_last=True), name="run_wall_time_desc"
            ),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(models.OrderBy(models.F("model"), nulls_last=True), name="run_model_asc"),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(models.OrderBy(models.F("tokens"), nulls_last=True), name="run_tokens_asc"),
        ),
        migrations.AddIndex(
            model_name="modelrun",
            index=models.Index(models.OrderBy(models.F("wall_time_s"), nulls_last=True), name="run_wall_time_asc"),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_k"), nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_pass_at_k_asc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_1"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_pass_at_1_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_1"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_pass_at_1_asc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_at_k"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_at_k"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_asc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_5_at_k"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_5_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_1_5_at_k"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_1_5_asc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_2_at_k"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_2_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("fast_2_at_k"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_fast_2_asc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("geomean_speedup"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_speedup_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("geomean_speedup"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_speedup_asc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("mean_roofline_fraction"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_roofline_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("mean_roofline_fraction"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_roofline_asc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("coverage"), descending=True, nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_coverage_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("coverage"), nulls_last=True),
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="rs_ranked_coverage_asc",
            ),
        ),
    ]
