"""Usernames unique by what a reader sees: a key per user (NFKC, case folded, look-alikes mapped), unique. Existing
users get theirs here; of existing users whose keys collide, the oldest keeps it and the others are logged, to be
renamed by an administrator (their accounts keep working)."""

import logging

from django.conf import settings
from django.db import migrations, models


def fill(apps, schema_editor):
    from leaderboard.names import username_key

    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    UsernameKey = apps.get_model("accounts", "UsernameKey")
    seen: set[str] = set()
    for user in User.objects.order_by("pk").only("pk", "username").iterator():
        key = username_key(user.username)
        if key in seen:
            logging.getLogger(__name__).warning(
                "user %s (%r) reads like an earlier user's name; rename it", user.pk, user.username
            )
            continue
        seen.add(key)
        UsernameKey.objects.create(user_id=user.pk, key=key)


class Migration(migrations.Migration):
    initial = True
    dependencies = [migrations.swappable_dependency(settings.AUTH_USER_MODEL)]
    operations = [
        migrations.CreateModel(
            name="UsernameKey",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key", models.CharField(max_length=600, unique=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=models.deletion.CASCADE, related_name="username_key", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
