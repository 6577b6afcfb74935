"""ProblemProposal moves from the portal app to contributions, keeping its table (portal_problemproposal): this
migration creates it in contributions' state only; portal's 0002 removes it from portal's state. No data moves. The
proposal's content type (and so its permissions) is renamed to the new app label rather than recreated."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def rename_content_type(apps, schema_editor, old="portal", new="contributions"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=new, model="problemproposal").exists():
        ContentType.objects.filter(app_label=old, model="problemproposal").update(app_label=new)


def restore_content_type(apps, schema_editor):
    rename_content_type(apps, schema_editor, old="contributions", new="portal")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("portal", "0001_problem_proposals"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ProblemProposal",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("category", models.CharField(max_length=64)),
                        (
                            "name",
                            models.CharField(
                                help_text="the folder name: lower-case letters, digits, underscores", max_length=100
                            ),
                        ),
                        ("title", models.CharField(help_text="from problem.toml", max_length=200)),
                        ("version", models.PositiveIntegerField(help_text="from problem.toml")),
                        ("problem_toml", models.TextField()),
                        ("reference_py", models.TextField()),
                        ("readme_md", models.TextField()),
                        (
                            "solutions",
                            models.JSONField(
                                blank=True,
                                default=list,
                                help_text='known answers: [{"kind": "correct"|"wrong", "filename", "source"}]',
                            ),
                        ),
                        (
                            "content_hash",
                            models.CharField(
                                help_text="SHA-256 of the three files, as the registry hashes", max_length=64
                            ),
                        ),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("submitted", "Submitted"),
                                    ("checking", "Checking"),
                                    ("checked", "Checked"),
                                    ("failed", "Failed"),
                                    ("accepted", "Accepted"),
                                    ("rejected", "Rejected"),
                                ],
                                db_index=True,
                                default="submitted",
                                max_length=16,
                            ),
                        ),
                        ("check_report", models.JSONField(blank=True, null=True)),
                        ("check_job_id", models.CharField(blank=True, max_length=100)),
                        ("check_count", models.PositiveIntegerField(default=0, help_text="checks enqueued so far")),
                        ("check_worker", models.CharField(blank=True, max_length=200)),
                        ("checked_at", models.DateTimeField(blank=True, null=True)),
                        ("moderator_note", models.TextField(blank=True)),
                        ("reviewed_at", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "author",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="problem_proposals",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "moderator",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "portal_problemproposal",
                        "ordering": ["-created_at", "-pk"],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(rename_content_type, restore_content_type),
    ]
