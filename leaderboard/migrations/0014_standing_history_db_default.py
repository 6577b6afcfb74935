"""A standing's ``history`` gets a database default ([]), so a web process of the release before 0013, which does not
write the column, can still insert a standing while a deployment is under way. No row changes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0013_stored_page_figures"),
    ]

    operations = [
        migrations.AlterField(
            model_name="problemstanding",
            name="history",
            field=models.JSONField(
                blank=True, db_default=models.Value([], output_field=models.JSONField()), default=list
            ),
        ),
    ]
