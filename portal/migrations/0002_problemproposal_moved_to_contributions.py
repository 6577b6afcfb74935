"""ProblemProposal now lives in the contributions app (portal/contributions/models.py) with the same table; this
removes it from the portal app's state only. The table stays."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0001_problem_proposals"),
        ("contributions", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ProblemProposal")],
            database_operations=[],
        ),
    ]
