"""E-mail confirmation and the verdict-notification setting: one row per signed-up user (none for existing users,
who count as confirmed)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_username_keys"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [
        migrations.CreateModel(
            name="AccountEmail",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("confirmed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "notify_verdicts",
                    models.BooleanField(default=False, help_text="E-mail the user when a verdict lands."),
                ),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=models.deletion.CASCADE, related_name="account_email", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
        ),
    ]
