"""The three roles of toppref as auth groups: dedicated assessors (tournaments), local crowd workers (HITs)
and researchers (campaigns, dashboard, API)."""

from django.db import migrations

ROLE_GROUPS = ("assessors", "crowd", "researchers")


def groups_create(apps, schema_editor):
    group_model = apps.get_model("auth", "Group")
    for name in ROLE_GROUPS:
        group_model.objects.get_or_create(name=name)


def groups_delete(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLE_GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("judging", "0002_surface_schema"),
    ]

    operations = [migrations.RunPython(groups_create, groups_delete)]
