"""The inlined HTML's limit (docs/templates.md, "Limits"): exactly INLINED_HTML_MAX_CHARS is rendered, one character
more is refused, whatever made it long: the rules copied into the elements they match, or the HTML parser's own
copies of formatting elements left open, which no count of the rendered HTML's tags and declarations bounds."""

from __future__ import annotations

import pytest

from core.errors import TemplateNotRendered
from email_templates import engine

LIMIT = engine.INLINED_HTML_MAX_CHARS
TOO_LONG = f"html is longer than {LIMIT} characters once its styles are inlined"


def rendered_html(html: str, data: dict[str, object]) -> str:
    compiled = engine.compiled(engine.Parts(subject="Hi", html=html, text=None))
    return engine.render(compiled, data, alias="limit").html


def test_inlined_html_of_the_limit_is_rendered_and_a_character_more_is_refused() -> None:
    # Every paragraph takes the rule's one long declaration; the last one's text fills what is left to the limit.
    style = "<style>p { font-family: " + "a" * 200 + " }</style>"
    html = style + "{% for row in rows %}<p>x</p>{% endfor %}<p>{{ pad }}</p>"
    paragraph = len(rendered_html(html, {"rows": [1], "pad": ""})) - len(rendered_html(html, {"rows": [], "pad": ""}))
    rows = list(range(LIMIT // paragraph - 1))
    pad = "x" * (LIMIT - len(rendered_html(html, {"rows": rows, "pad": ""})))

    assert len(rendered_html(html, {"rows": rows, "pad": pad})) == LIMIT
    with pytest.raises(TemplateNotRendered) as refused:
        rendered_html(html, {"rows": rows, "pad": pad + "x"})
    assert refused.value.message == f"Template limit could not be rendered: {TOO_LONG}"


def test_the_parsers_copies_of_open_formatting_elements_count_toward_the_limit() -> None:
    # A paragraph closed over an open <b> and <i> leaves them in the parser's list of active formatting elements:
    # every paragraph after is given copies of both, attributes and all
    # (https://html.spec.whatwg.org/multipage/parsing.html#reconstruct-the-active-formatting-elements). The rule is
    # 16 characters and 40 KB of paragraphs passes the limit.
    style, paragraphs = "<style>p { color: red }</style>", "{% for row in (1..5000) %}<p>y</p>{% endfor %}"
    closed = '<p><b class="{{ b }}"><i class="{{ b }}">x</i></b></p>'
    left_open = '<p><b class="{{ b }}"><i class="{{ b }}">x</p>'

    assert len(rendered_html(style + closed + paragraphs, {"b": "z" * 100})) < LIMIT // 4
    with pytest.raises(TemplateNotRendered) as refused:
        rendered_html(style + left_open + paragraphs, {"b": "z" * 100})
    assert refused.value.message == f"Template limit could not be rendered: {TOO_LONG}"
