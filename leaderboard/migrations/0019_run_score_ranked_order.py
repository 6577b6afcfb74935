"""The ranked runs in the ranking's default order (best pass@k first, missing last): the first rows of a page of it,
its exports, the API's ranking and the cost chart are read from this index instead of sorting every run."""

from django.db import migrations, models

from leaderboard.sort_indexes import AddIndexOnPostgres


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0018_ranking_ends"),
    ]

    operations = [
        AddIndexOnPostgres(
            model_name="runscore",
            index=models.Index(
                models.OrderBy(models.F("pass_at_k"), descending=True, nulls_last=True),
                condition=models.Q(("status", "ranked")),
                name="run_score_ranked_pass_at_k",
            ),
        ),
    ]
