from django.db import migrations
from django.db.models import F


def drop_foreign_campaign_scores(apps, schema_editor):
    """A run uploaded to one campaign was scored for every finished campaign of its collection; now that the
    run is its campaign's only (pools 0004_tenancy), those scores under other campaigns go."""
    RunScore = apps.get_model("metrics", "RunScore")
    RunScore.objects.filter(run__campaign__isnull=False, campaign__isnull=False).exclude(
        campaign_id=F("run__campaign_id")
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("metrics", "0001_initial"),
        ("pools", "0004_tenancy"),
    ]

    operations = [migrations.RunPython(drop_foreign_campaign_scores, migrations.RunPython.noop)]
