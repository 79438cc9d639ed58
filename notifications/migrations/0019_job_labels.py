"""An email's tags and metadata beside its payload, for its events to read without the payload
(docs/event-endpoints.md, "Events"); 0020 fills those of the emails stored before."""

import core.model_fields
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0018_attachment'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='labels',
            field=core.model_fields.JSONTextField(blank=True, null=True),
        ),
    ]
