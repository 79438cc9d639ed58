"""The benchmarks stay runnable (bench/README.md): they run seldom, by hand, so a change that breaks one's imports,
its options or what it feeds the app is caught here rather than at the next measurement."""

from __future__ import annotations

import base64
import json
import random
import time

import pytest

from bench import templates, unsubscribe
from bench.delivery import PAYLOAD
from bench.message_delivery import endpoint_signed
from bench.receiver import Dump, Recorder, arrival_key
from bench.run import BENCHES, build_parser
from email_templates import engine
from notifications.delivery.webhook import build_headers
from notifications.delivery.wire import json_bytes


@pytest.mark.parametrize("name", [*BENCHES, "all"])
def test_every_bench_imports_and_parses_its_defaults(name: str) -> None:
    args = build_parser().parse_args([name])

    assert args.command == name
    assert "bench" in args.database_url


def test_the_templates_bench_template_is_the_issues_and_renders_its_data() -> None:
    """A 10 KB template reading 20 names of `data`, with a loop of 20 rows and a `<style>` block (docs/templates.md):
    if the engine came to refuse it, the bench would measure an error."""
    parts = engine.Parts(subject=templates.SUBJECT, html=templates.HTML, text=None)
    compiled = engine.compiled(parts)
    data = templates.sample_data(random.Random(0))

    rendered = engine.render(compiled, data, alias=templates.ALIAS)

    assert 9_000 <= len(templates.SUBJECT) + len(templates.HTML) <= 11_000
    assert sorted(engine.variables_read(compiled)) == sorted(data)
    assert len(data) == 20
    assert len(data["items"]) == templates.ROWS == 20
    assert all(item["sku"] in rendered.html for item in data["items"])
    assert "&lt;" in rendered.html  # the items' names are escaped
    assert 'style="' in rendered.html  # the rules inlined
    assert "@media" in rendered.html  # the at-rule kept
    assert rendered.subject == f"Your receipt for order {data['order_number']}, {data['customer_name']}"


def test_the_unsubscribe_bench_posts_every_link_first_in_turn_and_repeats_only_links_posted_a_lag_before() -> None:
    """A repeat must find its link unsubscribed already (the second answer's path), and the rows' check expects one
    entry for each link posted."""
    order = unsubscribe.post_order(2_000, 0.2, 100, random.Random(0))

    first_posts = {link: number for number, link in reversed(list(enumerate(order)))}
    repeats = [number for number, link in enumerate(order) if first_posts[link] != number]
    assert [order[number] for number in sorted(first_posts.values())] == list(range(len(first_posts)))
    assert all(number - first_posts[order[number]] >= 100 for number in repeats)
    assert 0.15 * 1_900 <= len(repeats) <= 0.25 * 1_900


def test_the_message_delivery_bench_records_a_messages_deliveries_by_path_and_checks_each_endpoints_secret() -> None:
    """A message's deliveries share its id: recorded by id alone they would count as one arrival and duplicates. A
    delivery signed with another endpoint's secret, or whose signed id was changed, must not pass."""
    first, second = "/hooks/bench/0/0", "/hooks/bench/0/1"
    secrets = {path: "whsec_" + base64.b64encode(bytes([n]) * 24).decode() for n, path in enumerate((first, second))}
    body = json_bytes(PAYLOAD)
    headers = build_headers(
        webhook_id="msg_1", attempt=1, custom={}, body=body, secrets=[secrets[first]], now=int(time.time())
    )
    raw = {name.lower().encode(): value.encode() for name, value in headers.items()}
    by_path, by_id = Recorder(by_path=True), Recorder()
    for recorder in (by_path, by_id):
        recorder.record(first, raw, body)
        recorder.record(second, raw, body)  # signed with the first endpoint's secret

    dump = Dump(**json.loads(json.dumps(by_path.control("/_bench/dump"))))

    assert sorted(dump.arrivals) == [arrival_key("msg_1", first), arrival_key("msg_1", second)]
    assert list(by_id.arrivals) == ["msg_1"]
    assert [endpoint_signed(sample, secrets) for sample in dump.samples] == [True, False]
    assert not endpoint_signed({**dump.samples[0], "webhook-id": "msg_2"}, secrets)
