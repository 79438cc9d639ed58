"""The engine writes outputs its own way (docs/departures.md, "counted-output"): every template below renders to the
same text, or stops with the same error, as through python-liquid's own output node and LimitedStringIO with the
same limits and undefined."""

from __future__ import annotations

from typing import Any

import pytest
from liquid import BoundTemplate, Environment, RenderContext
from liquid.exceptions import LiquidError

from email_templates import engine

LIMIT = engine.PART_MAX_CHARS
DATA: dict[str, Any] = {
    "name": "Ada <Lovelace> & 'co' \"x\"",
    "accented": "Élodie, café",
    "count": 3,
    "price": 2.5,
    "numbers": {"negative": -12, "big": 1e20, "tiny": -1e-7, "infinite": float("inf"), "zero": -0.0, "no": False},
    "gift": True,
    "nothing": None,
    "tags": ["a<b", "c&d"],
    "user": {"name": "Grace", "size": "XL", "first": "primary", "address": {"city": "Zürich"}},
    "items": [{"name": "Mug <M>", "size": 2}, {"name": "Pen & ink"}],
    "matrix": [[1, 2], [3, 4]],
    "key": "name",
    "ascii_quarter": "x" * (LIMIT // 4),
    "accented_quarter": "é" * (LIMIT // 8),
    "partial": "a name python-liquid's template namespace holds before data",
    "line": "\nbegins with a line feed",
}
TEMPLATES = [
    "{{ name }} {{ accented }} {{ count }} {{ price }} {{ gift }} {{ nothing }} {{ tags }}",
    "{% for n in numbers %}{{ n[1] }},{% endfor %} {{ numbers.big }} {{ numbers.no }} {{ count | plus: 0.5 }}",
    "{{ user.name }} {{ user.size }} {{ user.first }} {{ user.address.city }} {{ user.address }}",
    "{{ tags.size }} {{ tags.first }} {{ tags.last }} {{ items.size }} {{ items.first.name }} {{ user.name.size }}",
    "{{ items[0].name }} {{ items[1]['name'] }} {{ matrix[1][0] }} {{ user[key] }} {{ tags[-1] }}",
    "{% for item in items %}{{ forloop.index }}:{{ item.name }}{% cycle 'a', 'b' %};{% endfor %}",
    "{{ name | safe }} {{ name | upcase }} {{ 'lit<>' }} {{ '<b>' | safe }} {{ count | plus: 1 }}",
    "{% assign local = name %}{{ local }}{% capture c %}<{{ name }}>{% endcapture %}{{ c }}",
    "{{ user.missing | default: 'none' }} {% if user.missing %}yes{% else %}no{% endif %}",
    "{{ tags.missing }}",
    "{{ user.name.first }}",
    "{{ missing }}",
    "{{ user.address.city.street }}",
    "{{ count.size }} {{ price.first }}",
    "{% for q in (1..4) %}{{ ascii_quarter }}{% endfor %}",
    "{% for q in (1..5) %}{{ ascii_quarter }}{% endfor %}",
    "{% for q in (1..4) %}{{ accented_quarter }}{% endfor %}",
    "{% for q in (1..4) %}{{ accented_quarter }}{% endfor %}é",
    "{% capture c %}{% for q in (1..5) %}{{ ascii_quarter }}{% endfor %}{% endcapture %}x",
    "{% for q in (1..4) %}{{ ascii_quarter }}{% endfor %}x{{ name }}",
    # Every other tag, whose nodes engine._bound_names visits when the template is parsed.
    "{% assign a = 1 %}{% case a %}{% when 1 %}<{{ name }}>{% else %}e{% endcase %}{% ifchanged %}{{ a }}"
    "{% endifchanged %}{% liquid\n assign b = 2\n echo b\n%}{% raw %}{{ x }}{% endraw %}{% unless a %}u{% endunless %}"
    "{% # a comment %}{{ b }}{% echo name %}{% decrement d %}{{ d }}{% tablerow t in tags %}<{{ t }}>{% endtablerow %}",
    "{% for q in (1..4) %}{{ ascii_quarter }}{% endfor %}{% cycle 'x' %}",
    "{{ ascii_quarter }}{{ ascii_quarter }}{% capture c %}{{ ascii_quarter }}{{ ascii_quarter }}é{% endcapture %}",
    "{% for t in tags %}{% cycle 'a', 'b' %}{% cycle 'a', 'b' %}{% cycle 'x<', \"y&\" %}{% cycle 'a' %}{% endfor %}",
    "{% for t in tags %}{% cycle g: 'a', 'b' %}{% cycle 'a', name %}{% cycle 1, 2 %}{% cycle 'a', 'b', 'c' %}"
    "{% endfor %}",
    "{% cycle 'a', 'b' %}{% for t in items %}{% cycle 'a', 'b' %}{% cycle g: 'a', 'b' %}{% endfor %}"
    "{% cycle 'a', 'b' %}",
    "{% if gift %}g{% endif %}{% if nothing %}n{% else %}-{% endif %}{% if numbers.no %}no{% endif %}"
    "{% if numbers.zero %}z{% endif %}{% if name %}{{ name }}{% endif %}{% if missing %}m{% elsif gift %}e{% endif %}",
    "{% if user.size %}{{ user.size }}{% endif %}{% if tags.size %}{{ tags.size }}{% endif %}"
    "{% if tags.last %}l{% endif %}{% if items.first.name %}f{% endif %}{% if user.name.size %}s{% endif %}"
    "{% if count.size %}c{% endif %}",
    "{% if user.missing.deep %}d{% endif %}{% if user.name.first %}n{% endif %}{% if matrix[1] %}i{% endif %}"
    "{% assign local = nothing %}{% if local %}l{% endif %}{% for item in items %}{% if item.size %}{{ item.size }}"
    "{% endif %}{% if forloop.first %}1{% endif %}{% endfor %}{% unless gift %}u{% endunless %}",
    "{% for item in items %}{% for item in tags %}{{ item }}{% endfor %}{{ item.name }}{{ forloop.index }}{% endfor %}"
    "{% for item in items reversed limit: 1 %}{{ item.name }}{% else %}none{% endfor %}{{ item }}",
    "{% if gift %} \n {% endif %}{% for t in tags %} {% endfor %}é {% capture c %} é{% endcapture %}{{ c }}",
    # A name of data the template binds somewhere (engine._bound_names), before and after it does, and where it does.
    "{{ name }}{% assign name = 'local' %}{{ name }}{{ key }}{% capture key %}<{{ key }}>{% endcapture %}{{ key }}",
    "{{ count }}{% for count in tags %}{{ count }}{{ name }}{% endfor %}{{ count }}{% for name in tags %}{% endfor %}",
    "{% tablerow name in tags %}{{ name }}{{ count }}{% endtablerow %}{{ name }}{{ partial }}",
    "{{ count }}{% increment count %}{{ count }}{% decrement fresh %}{{ fresh }}{{ forloop }}",
    "{% for item in items %}{{ item }}{{ item.name }}{{ item.size }}{% for tag in tags %}{{ item.name }}{{ tag }}"
    "{% endfor %}{{ forloop.last }}{{ item.missing }}{% endfor %}",
    "{% for tag in tags %}{{ tag.size }}{{ tag.first }}{{ tag[0] }}{{ tag.nothing.deeper }}{% endfor %}",
    "{% for n in numbers %}{{ n }}{% endfor %}{% for q in (1..2) %}{{ q }}{{ q.size }}{% endfor %}",
    "a{% break %}b",
    "a{% if gift %}{% continue %}{% endif %}b",
    "{{ name }}\r{{ accented }}\r\n{{ count }}\r",
    # Text before what a Markup writes (a cycle's value, what `capture` binds in `html`) is not escaped with it.
    "{% for t in tags %}<tr class=\"{% cycle 'a', 'b<' %}\">{{ t }}</tr>{% endfor %}<i>{% cycle 'c' %}",
    "{% capture c %}<b>{{ name }}</b>{% endcapture %}<p>{{ c }}</p>{% for t in tags %}<td>{{ c }}{% endfor %}",
    # Text before text (a comment between) and before a carriage return's line feed.
    "<a>{% comment %}x{% endcomment %}<b>{{ name }}\r{{ '\n' }}{{ name }}<c>\r{{ line }}\n{% for t in tags %}\r"
    "{{ line }}{% endfor %}",
]


class StockTemplate(BoundTemplate):
    # python-liquid's own context: its buffers for `capture` are LimitedStringIO (no case here nears the engine's
    # count of every loop together).
    context_class = RenderContext


class StockEnvironment(Environment):
    """python-liquid's own output node and output stream, with the engine's limits and undefined."""

    block_nesting_limit = engine.BLOCK_NESTING_MAX
    context_depth_limit = engine.CONTEXT_DEPTH_MAX
    loop_iteration_limit = engine.LOOP_ITERATIONS_MAX
    local_namespace_limit = engine.LOCAL_NAMESPACE_MAX_BYTES
    output_stream_limit = LIMIT
    template_class = StockTemplate


def outcome(template: BoundTemplate) -> str:
    try:
        return template.render(**DATA)
    except (LiquidError, TypeError) as error:
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize("autoescape", [True, False], ids=["html", "text"])
@pytest.mark.parametrize("source", TEMPLATES)
def test_renders_as_python_liquid_does(source: str, autoescape: bool) -> None:
    ours = engine.CustomerEnvironment(autoescape=autoescape, undefined=engine.MissingVariable).from_string(source)
    stock = StockEnvironment(autoescape=autoescape, undefined=engine.MissingVariable).from_string(source)

    assert outcome(ours) == outcome(stock)


@pytest.mark.parametrize(
    ("source", "limited"),
    [
        ("{% for q in (1..4) %}{{ ascii_quarter }}{% endfor %}", False),
        ("{% for q in (1..4) %}{{ ascii_quarter }}{% endfor %}x", True),
        ("{% for q in (1..4) %}{{ accented_quarter }}{% endfor %}", False),
        ("{% for q in (1..4) %}{{ accented_quarter }}{% endfor %}é", True),
    ],
)
def test_the_output_limit_counts_utf8_bytes_to_the_last(source: str, limited: bool) -> None:
    rendered = outcome(engine.HTML_ENVIRONMENT.from_string(source))

    assert rendered.startswith("OutputStreamLimitError") is limited
