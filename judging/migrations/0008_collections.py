"""Campaign names unique per owner instead of globally (names that are globally unique are unique per owner:
existing rows need nothing)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0007_assignment_challenge_counts'),
        ('pools', '0005_collections'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='campaign',
            name='name',
            field=models.SlugField(max_length=100),
        ),
        migrations.AddConstraint(
            model_name='campaign',
            constraint=models.UniqueConstraint(fields=('owner', 'name'), name='unique_campaign_name_per_owner'),
        ),
        migrations.AddConstraint(
            model_name='campaign',
            constraint=models.UniqueConstraint(condition=models.Q(('owner__isnull', True)), fields=('name',), name='unique_campaign_name_without_owner', violation_error_message='A campaign without owner has this name already.'),
        ),
    ]
