"""The benchmarks stay runnable (bench/README.md): they run seldom, by hand, so a change that breaks one's imports,
its options or what it feeds the app is caught here rather than at the next measurement."""

from __future__ import annotations

import random

import pytest

from bench import templates, unsubscribe
from bench.run import BENCHES, build_parser
from email_templates import engine


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
