"""Every other order the ranking of runs offers, read from an index instead of sorting every ranked run: each score
figure both ways over the ranked runs (the figure, then pass@k, the ranking's first tie-break), pass@k ascending, and
the run's model, tokens and wall time (never null: one index read either way, as id's and created_at's are)."""

from django.conf import settings
from django.db import migrations, models

from leaderboard.sort_indexes import AddIndexOnPostgres


RANKED = models.Q(("status", "ranked"))
# The figures as they were when this migration was written (column, name in the index): frozen here, so a later change
# to leaderboard/sort_indexes.py takes a migration of its own.
FIGURES = (
    ("pass_at_1", "pass_at_1"),
    ("fast_1_at_k", "fast_1"),
    ("fast_1_5_at_k", "fast_1_5"),
    ("fast_2_at_k", "fast_2"),
    ("geomean_speedup", "speedup"),
    ("mean_roofline_fraction", "roofline"),
    ("coverage", "coverage"),
)


def _ranked_by(column: str, name: str, direction: str) -> AddIndexOnPostgres:
    """The ranked scores by ``column`` in ``direction``, then pass@k best first (the ranking's first tie-break)."""
    return AddIndexOnPostgres(
        model_name="runscore",
        index=models.Index(
            models.OrderBy(models.F(column), descending=direction == "desc", nulls_last=True),
            models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
            condition=RANKED,
            name=f"rs_ranked_{name}_{direction}",
        ),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0019_run_score_ranked_order"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        *[
            migrations.AddIndex(model_name="modelrun", index=models.Index(fields=[field], name=name))
            for field, name in (("model", "run_model"), ("tokens", "run_tokens"), ("wall_time_s", "run_wall_time"))
        ],
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_k"), nulls_last=True),
                condition=RANKED,
                name="rs_ranked_pass_at_k_asc",
            ),
        ),
        *[_ranked_by(column, name, direction) for column, name in FIGURES for direction in ("desc", "asc")],
    ]
