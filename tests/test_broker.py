"""The Celery app's broker set-up: settings taken from Django, one Redis client per channel, the file broker."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis
from django.conf import settings
from kombu import Connection

from core.broker import FileTransport
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
    assert celery_app.conf.broker_transport == "core.broker:RedisTransport"
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


def test_the_file_broker_hands_each_of_10000_bursty_messages_to_exactly_one_reader(tmp_path: Path) -> None:
    """Four writers publish in bursts while three readers drain: no half-written read, no loss, no duplicate.

    Each connection binds the queue as it starts, so this also races the exchange table's
    creation against the first publishes (a table read empty or not yet written dropped messages).
    """
    options = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path), "control_folder": str(tmp_path)}
    writers, per_writer = 4, 2500
    received: list[int] = []
    errors: list[BaseException] = []
    done_writing = threading.Event()

    def connection() -> Connection:
        return Connection("filesystem://", transport=FileTransport, transport_options=options)

    def write(first: int) -> None:
        with connection() as conn, conn.SimpleQueue("burst") as queue:
            for number in range(first, first + per_writer):
                queue.put({"n": number, "padding": "x" * (number % 2000)})

    # Generous: on a loaded machine the readers slow down, and running out of time is reported
    # as such below, apart from a message that went missing.
    deadline = time.monotonic() + 300

    def read() -> None:
        try:
            with connection() as conn, conn.SimpleQueue("burst") as queue:
                while time.monotonic() < deadline:
                    try:
                        message = queue.get(timeout=0.05)
                    except queue.Empty:
                        if done_writing.is_set() and not any(name.endswith(".msg") for name in os.listdir(tmp_path)):
                            return
                        continue
                    received.append(message.payload["n"])
                    message.ack()
        except BaseException as error:
            errors.append(error)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(write, range(0, writers * per_writer, per_writer)))
    finally:
        done_writing.set()
    for reader in readers:
        reader.join(timeout=max(0.0, deadline - time.monotonic()) + 10)

    left_unread = [name for name in os.listdir(tmp_path) if name.endswith(".msg")]
    assert left_unread == [], f"the readers ran out of time with {len(left_unread)} messages unread"
    assert errors == []
    assert len(received) == writers * per_writer
    assert sorted(received) == list(range(writers * per_writer))
