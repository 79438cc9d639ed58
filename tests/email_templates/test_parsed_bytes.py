"""A parse is weighed by what it holds in memory, not by its source's length (docs/templates.md, "Operators")."""

from __future__ import annotations

import tracemalloc

from email_templates import engine

STATIC = "<p>" + "Hello there. " * 400 + "</p>"
# As long as STATIC, all tags: an object each and their expressions.
TAGGED = "".join(f"{{% if v{n} %}}x{{% endif %}}" for n in range(len(STATIC)))[: len(STATIC)].rpartition("{% if")[0]


def parsed(html: str) -> tuple[engine.Compiled, int]:
    """The parse of ``html`` (not from the engine's cache) and the memory it took, as tracemalloc counts it."""
    tracemalloc.start()
    try:
        compiled = engine.Compiled(
            subject=engine.HTML_ENVIRONMENT.from_string("Hi"), html=engine.HTML_ENVIRONMENT.from_string(html), text=None
        )
        taken, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return compiled, taken


def test_a_tagged_source_weighs_what_its_parse_took() -> None:
    compiled, taken = parsed(TAGGED)

    assert 0.8 * taken <= engine.parsed_bytes(compiled) <= 1.25 * taken


def test_static_html_weighs_about_its_text() -> None:
    compiled, _ = parsed(STATIC)

    assert len(STATIC) <= engine.parsed_bytes(compiled) < 2 * len(STATIC)


def test_tags_weigh_far_more_than_text_of_the_same_length() -> None:
    assert len(TAGGED) > 0.95 * len(STATIC)
    assert engine.parsed_bytes(parsed(TAGGED)[0]) > 10 * engine.parsed_bytes(parsed(STATIC)[0])
