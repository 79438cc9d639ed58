"""An email job's tags in a table of their own, for the jobs list's ``tag`` filter (docs/rules.md, "Listing jobs").

No job stored before this has tags: the send took none.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0012_account_rate_limit'),
        ('notifications', '0016_job_quota_taken'),
    ]

    operations = [
        migrations.CreateModel(
            name='JobTag',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tag', models.CharField(max_length=64)),
                ('test', models.BooleanField()),
                ('created_at', models.DateTimeField()),
                ('account', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.account')),
                ('job', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='job_tags', to='notifications.job')),
            ],
            options={
                'indexes': [models.Index(fields=['account', 'test', 'tag', '-created_at'], name='job_tag_account_recent')],
                'constraints': [models.UniqueConstraint(fields=('job', 'tag'), name='one_row_per_job_tag')],
            },
        ),
    ]
