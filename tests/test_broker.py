"""The Celery app's broker set-up: settings taken from Django, one Redis client per channel."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings

from notifyhub.celery import app as celery_app


def test_celery_reads_the_django_celery_settings() -> None:
    conf = celery_app.conf

    assert conf.broker_url == settings.CELERY_BROKER_URL
    assert (conf.task_acks_late, conf.task_reject_on_worker_lost, conf.worker_prefetch_multiplier) == (True, True, 1)
    assert conf.broker_transport_options == settings.CELERY_BROKER_TRANSPORT_OPTIONS
    assert conf.task_publish_retry_policy == settings.CELERY_TASK_PUBLISH_RETRY_POLICY
    assert "sweep-jobs" in conf.beat_schedule


@pytest.mark.redis
def test_a_redis_channel_sends_every_command_through_one_client() -> None:
    assert celery_app.conf.broker_transport == "core.broker:Transport"
    with celery_app.connection_for_write() as connection:
        channel = connection.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
            assert isinstance(first, redis.Redis)
            first.lpush("notifyhub-test:broker", "x")
            assert second.rpop("notifyhub-test:broker") == b"x"
        # A caller's own client (kombu passes one inside pipelines) is used as given.
        given = redis.Redis.from_url(settings.REDIS_URL)
        with channel.conn_or_acquire(given) as used:
            assert used is given
