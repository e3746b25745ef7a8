"""Collections get versions: every existing collection becomes version 1, current (the defaults); a name is
unique among current versions (docs/decisions.md, "Collection versions")."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pools', '0004_tenancy'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='collection',
            options={'ordering': ['name', 'version']},
        ),
        migrations.AddField(
            model_name='collection',
            name='is_current',
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.AddField(
            model_name='collection',
            name='previous',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='pools.collection'),
        ),
        migrations.AddField(
            model_name='collection',
            name='version',
            field=models.PositiveIntegerField(db_default=1, default=1),
        ),
        migrations.AlterField(
            model_name='collection',
            name='name',
            field=models.SlugField(max_length=100),
        ),
        migrations.AddConstraint(
            model_name='collection',
            constraint=models.UniqueConstraint(condition=models.Q(('is_current', True)), fields=('name',), name='unique_current_collection_name', violation_error_message='Collection with this Name already exists.'),
        ),
        migrations.AddConstraint(
            model_name='collection',
            constraint=models.UniqueConstraint(fields=('name', 'version'), name='unique_collection_name_version'),
        ),
    ]
