"""templates: an email send with a stored template against a plain email send under gunicorn, loaded with wrk; then
the template's render alone, in one process.

The issue's targets: a templated send of a 10 KB template (20 variables, a loop of 20 rows, a `<style>` block) is
accepted at 80% or more of a plain send's requests a second, and the render alone has p99 < 5 ms. The accept bench's
server and load (``accept.accept_run``, accept.lua), rounds alternating: a run of templated sends, then a run of plain
sends whose subject and body are what the templated send renders, each on a fresh gunicorn and API keys of its own.
Then, gunicorn stopped, ``email_templates.engine`` in the bench's process: the template parsed once (as its cache keeps
a version's parse) and rendered with varied data, and parses of sources it has not seen. bench/README.md says how to
read the report.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any, TypeVar

from bench import accept
from bench.accept import ACCEPT_COLUMNS, EMAIL_PATH, AcceptRun, Load
from bench.common import (
    VAR_DIR,
    BenchError,
    judge_rounds,
    log,
    option,
    own_services,
    percentile,
    table,
    verdict,
    wait_for_quiet,
)

HELP = "a templated email send against a plain one under gunicorn, and the render alone"
# run.py: the database this bench recreates unless told another, apart from the other benches' notifyhub_bench.
DATABASE = "notifyhub_bench_templates"
# The targets.
MIN_SHARE_OF_PLAIN = 0.80
MAX_RENDER_P99_MS = 5.0
# Not accept's api-keys.txt: this bench may run beside the accept bench, on its own database.
KEYS_FILE = VAR_DIR / "api-keys-templates.txt"
# One send's fields but its idempotency key, as accept.lua reads them.
TEMPLATED_FILE = VAR_DIR / "send-templated.json"
PLAIN_FILE = VAR_DIR / "send-plain.json"
TARGETS = ("templated", "plain")
ALIAS = "receipt"
RECIPIENT = "reader@bench.example"
ROWS = 20  # the template's loop: one row an item
# A run's requests a key may make (its own rate a minute and quota): enough that a run takes only as many keys as wrk
# has connections, so each account sends its template hundreds of times, as a sender of receipts does, and the
# processes' resolved templates serve it (docs/departures.md, "resolved-template-cache"). Free accounts' keys, a key
# a run at the plan's rate, would give every account a few sends each: nearly every one a parse.
REQUESTS_PER_KEY = 5000
WARMUP_RENDERS = 50
RENDER_COLUMNS = "in one process<52|count>7|p50 ms>9.3f|p99 ms>9.3f|max ms>9.3f"
T = TypeVar("T")

# A receipt as a shop would write it: 20 names of `data` (19 values and the `items` list), a loop over the items, a
# `<style>` block with one `@media` rule (kept in a `<style>` once the rest is inlined), and the static text around.
SUBJECT = "Your receipt for order {{ order_number }}, {{ customer_name }}"
STYLE = """<style>
  body { margin: 0; padding: 0; background-color: #f4f5f7; font-family: Helvetica, Arial, sans-serif; color: #1f2933; }
  .wrapper { width: 100%; background-color: #f4f5f7; padding: 24px 0; }
  .container { max-width: 600px; margin: 0 auto; background-color: #ffffff; border-radius: 6px; }
  .header { padding: 24px 32px; border-bottom: 1px solid #e4e7eb; }
  .header h1 { margin: 0; font-size: 22px; line-height: 28px; color: #102a43; }
  .content { padding: 24px 32px; font-size: 15px; line-height: 22px; }
  .content p { margin: 0 0 16px 0; }
  table.items { width: 100%; border-collapse: collapse; margin: 16px 0; }
  table.items th { text-align: left; font-size: 12px; text-transform: uppercase; color: #627d98; padding: 8px 4px; }
  table.items td { padding: 8px 4px; border-top: 1px solid #e4e7eb; vertical-align: top; }
  table.items tr.alt td { background-color: #f8f9fb; }
  td.sku { font-family: Menlo, Consolas, monospace; font-size: 12px; color: #627d98; }
  td.quantity, td.price, th.quantity, th.price { text-align: right; white-space: nowrap; }
  .note { font-size: 12px; color: #829ab1; }
  table.totals { width: 100%; margin: 8px 0 24px 0; }
  table.totals td { padding: 4px; text-align: right; }
  table.totals tr.total td { font-weight: bold; font-size: 17px; border-top: 2px solid #102a43; }
  .address { background-color: #f8f9fb; padding: 12px 16px; border-radius: 4px; margin: 0 0 16px 0; }
  .button { display: inline-block; padding: 12px 20px; background-color: #2f80ed; color: #ffffff; border-radius: 4px;
    text-decoration: none; font-weight: bold; }
  .footer { padding: 16px 32px 24px 32px; font-size: 12px; line-height: 18px; color: #829ab1; }
  .footer a { color: #627d98; }
  .nav { padding: 12px 32px; background-color: #102a43; }
  .nav a { color: #d9e2ec; font-size: 13px; text-decoration: none; margin-right: 16px; }
  table.steps { width: 100%; border-collapse: separate; border-spacing: 8px; margin: 8px 0 16px 0; }
  table.steps td { width: 33%; background-color: #f0f4f8; border-radius: 4px; padding: 12px; font-size: 13px;
    line-height: 19px; vertical-align: top; }
  table.steps td strong { display: block; color: #102a43; margin-bottom: 4px; }
  table.products { width: 100%; border-collapse: collapse; margin: 8px 0 16px 0; }
  table.products td { width: 33%; padding: 8px; text-align: center; font-size: 13px; vertical-align: top; }
  table.products img { display: block; width: 100%; max-width: 160px; height: auto; margin: 0 auto 8px auto;
    border-radius: 4px; }
  .social a { display: inline-block; margin-right: 12px; color: #627d98; font-weight: bold; }
  @media only screen and (max-width: 620px) {
    .container { width: 100% !important; border-radius: 0 !important; }
    .content, .header, .footer { padding-left: 16px !important; padding-right: 16px !important; }
  }
</style>"""
BODY = """<div class="wrapper"><div class="container">
  <div class="nav"><a href="https://shop.example/new">New in</a><a href="https://shop.example/women">Women</a>
    <a href="https://shop.example/men">Men</a><a href="https://shop.example/home">Home</a>
    <a href="https://shop.example/gifts">Gifts</a><a href="https://shop.example/sale">Sale</a></div>
  <div class="header"><h1>Thank you for your order, {{ customer_name }}</h1>
    <p class="note">Order {{ order_number }}, placed on {{ order_date }}</p></div>
  <div class="content">
    <p>Hello {{ customer_name }}, we have received your order and are getting it ready. This email is your receipt:
      keep it for your records. You will get another email with the parcel's tracking link as soon as it leaves our
      warehouse, usually within one working day.</p>
    <table class="items">
      <thead><tr><th>Item</th><th>Reference</th><th class="quantity">Qty</th><th class="price">Price</th></tr></thead>
      <tbody>
      {% for item in items %}<tr class="{% cycle 'row', 'row alt' %}">
        <td class="name">{{ item.name }}{% if item.gift %}<br><span class="note">Gift wrapped</span>{% endif %}</td>
        <td class="sku">{{ item.sku }}</td><td class="quantity">{{ item.quantity }}</td>
        <td class="price">{{ currency }} {{ item.price }}</td></tr>
      {% endfor %}</tbody>
    </table>
    <table class="totals">
      <tr><td>Subtotal</td><td>{{ currency }} {{ subtotal }}</td></tr>
      <tr><td>Shipping</td><td>{{ currency }} {{ shipping }}</td></tr>
      <tr><td>Tax</td><td>{{ currency }} {{ tax }}</td></tr>
      <tr class="total"><td>Total</td><td>{{ currency }} {{ total }}</td></tr>
    </table>
    <p>Paid with {{ payment_method }} ending in {{ card_last4 }}. The charge will appear on your statement under our
      company name within two to three working days; if it does not, please get in touch and we will look into it.</p>
    <p><strong>Delivery address</strong></p>
    <div class="address">{{ ship_name }}<br>{{ ship_street }}<br>{{ ship_postcode }} {{ ship_city }}<br>
      {{ ship_country | upcase }}</div>
    <p>Expected delivery: <strong>{{ delivery_estimate }}</strong>. Deliveries are made on working days between 8 am
      and 6 pm; when nobody is home, the carrier leaves a card and tries again the next working day.</p>
    <p><a class="button" href="{{ tracking_url }}">Follow your order</a></p>
    <p><strong>What happens next</strong></p>
    <table class="steps"><tr>
      <td><strong>1. We pack it</strong>Our warehouse team picks each item, checks it and packs your order in
        recycled cardboard, usually on the day it was placed when it came in before 2 pm.</td>
      <td><strong>2. It ships</strong>The carrier collects it the same evening. We email you the tracking link,
        which shows where the parcel is and lets you choose another day or a neighbour.</td>
      <td><strong>3. It arrives</strong>The carrier delivers on the expected day. Something missing or damaged?
        Tell us within 14 days and we send a replacement or refund it, whichever you prefer.</td>
    </tr></table>
    <p><strong>You may also like</strong></p>
    <table class="products"><tr>
      <td><a href="https://shop.example/p/linen-trousers"><img src="https://cdn.shop.example/p/linen-trousers.jpg"
        alt="Linen trousers" width="160"></a>Linen trousers<br><span class="note">In five colours</span></td>
      <td><a href="https://shop.example/p/canvas-bag"><img src="https://cdn.shop.example/p/canvas-bag.jpg"
        alt="Canvas bag" width="160"></a>Canvas bag<br><span class="note">Made to last</span></td>
      <td><a href="https://shop.example/p/desk-lamp"><img src="https://cdn.shop.example/p/desk-lamp.jpg"
        alt="Desk lamp" width="160"></a>Desk lamp<br><span class="note">Back in stock</span></td>
    </tr></table>
    <p class="note">Members get free returns on every order, early access to the sale and a birthday voucher. Joining
      is free: tick the box on your account page, and the benefits apply to this order too.</p>
    <p>Something is not right? Reply to this email or write to <a href="mailto:{{ support_email }}">{{ support_email
      }}</a> with your order number, and a person from our team will answer within one working day. You can also
      change the delivery address, cancel an item that has not shipped yet or download an invoice from
      <a href="{{ account_url }}">your account</a>.</p>
    <p class="note">Returns: you may return any item within 30 days of delivery, unused and in its original packaging,
      for a full refund to the card you paid with. Start a return from your account; the label is free for orders
      delivered in the country they were placed in. Refunds are made within 14 days of the return reaching us.</p>
    <p class="note">Items marked as gifts are wrapped and sent without a price on the packing slip. A gift receipt,
      without prices, is available from your account for each of them.</p>
  </div>
  <div class="footer">
    <p>You are receiving this email because you placed an order with us. It is a service message about your order,
      sent whatever your marketing preferences; we will never ask for your password or your card's full number by
      email.</p>
    <p>Prices include the taxes listed above where they apply. Orders are subject to our terms of sale, which you
      accepted when ordering; a copy is in <a href="{{ account_url }}">your account</a> with this receipt.</p>
    <p>Questions about this email: <a href="mailto:{{ support_email }}">{{ support_email }}</a>.</p>
    <p class="social"><a href="https://shop.example/journal">Journal</a><a href="https://shop.example/stores">Our
      stores</a><a href="https://shop.example/care">Care guides</a><a href="https://shop.example/gift-cards">Gift
      cards</a><a href="https://shop.example/help">Help centre</a></p>
    <p>Shop Example Ltd, 1 Example Yard, London EC1A 1AA, United Kingdom. Registered in England and Wales, company
      number 01234567, VAT number GB 123 4567 89. Our privacy notice, on our website, says what we keep about your
      orders, why, and for how long; you may ask for a copy of it or for it to be corrected at any time.</p>
    <p>Gift cards and vouchers used on this order are shown in your account with what remains on them. A voucher
      cannot be exchanged for cash; a gift card is valid for five years from the day it was bought.</p>
    <p>This receipt was sent to the address on your account. If you did not place this order, write to us at once at
      the address above: we will stop it before it ships and refund the charge in full.</p>
  </div>
</div></div>"""
HTML = f'<!doctype html>\n<html><head><meta charset="utf-8">\n{STYLE}\n</head>\n<body>\n{BODY}\n</body></html>\n'
NAMES = ("Ada Lovelace", "Grace Hopper", "Katherine Johnson", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov")
PRODUCTS = ("Linen shirt", "Wool scarf", "Leather wallet", "Ceramic mug", "Notebook, dotted", "Fountain pen", "Tote")


def sample_data(rng: random.Random) -> dict[str, Any]:
    """A receipt's `data`, its values drawn from ``rng``: every name the template reads."""
    items = [
        {
            "name": f"{rng.choice(PRODUCTS)} <{rng.choice(('S', 'M', 'L'))}> & co",  # escaped in `html`
            "sku": f"SKU-{rng.randrange(10**8):08d}",
            "quantity": rng.randint(1, 4),
            "price": f"{rng.uniform(3, 250):.2f}",
            "gift": rng.random() < 0.2,
        }
        for _ in range(ROWS)
    ]
    return {
        "customer_name": rng.choice(NAMES),
        "order_number": f"NH-{rng.randrange(10**7):07d}",
        "order_date": f"2026-11-{rng.randint(1, 28):02d}",
        "currency": rng.choice(("EUR", "USD", "GBP")),
        "subtotal": f"{rng.uniform(100, 2000):.2f}",
        "shipping": f"{rng.uniform(0, 20):.2f}",
        "tax": f"{rng.uniform(10, 300):.2f}",
        "total": f"{rng.uniform(110, 2300):.2f}",
        "payment_method": rng.choice(("Visa", "Mastercard", "American Express")),
        "card_last4": f"{rng.randrange(10**4):04d}",
        "ship_name": rng.choice(NAMES),
        "ship_street": f"{rng.randint(1, 200)} {rng.choice(('High Street', 'Rue de la Paix', 'Main Street'))}",
        "ship_city": rng.choice(("London", "Paris", "Lisbon", "Berlin")),
        "ship_postcode": f"{rng.randrange(10**5):05d}",
        "ship_country": rng.choice(("United Kingdom", "France", "Portugal", "Germany")),
        "delivery_estimate": f"2026-12-{rng.randint(1, 28):02d}",
        "tracking_url": f"https://shop.example/track/{rng.randrange(10**9)}",
        "support_email": "help@shop.example",
        "account_url": "https://shop.example/account",
        "items": items,
    }


@dataclass(frozen=True)
class Sizes:
    """The template's source, the names it reads, and the request bodies and stored body of the two sends."""

    source_chars: int
    variables: list[str]
    templated_request: int
    plain_request: int
    rendered_html: int


def seed_templates() -> None:
    """The receipt, saved through the service a create calls, in every seeded account (the keys of both targets):
    each templated send renders its account's own version."""
    from accounts.models import Account
    from email_templates.services import template_create

    for account in Account.objects.all():
        template_create(account=account, alias=ALIAS, name="Receipt", subject=SUBJECT, html=HTML)


def write_sends() -> Sizes:
    """The two sends' fields, for accept.lua: the template's alias with one `data`, and a plain email of the subject
    and HTML that send renders (the same message stored, so the runs differ by the render and the request's size)."""
    from email_templates import engine

    data = sample_data(random.Random(0))
    parts = engine.Parts(subject=SUBJECT, html=HTML, text=None)
    rendered = engine.render(engine.compiled(parts), data, alias=ALIAS)
    templated = json.dumps({"to": RECIPIENT, "template": ALIAS, "data": data})
    plain = json.dumps({"to": RECIPIENT, "subject": rendered.subject, "body": rendered.html})
    TEMPLATED_FILE.write_text(templated)
    PLAIN_FILE.write_text(plain)
    variables = engine.variables_read(engine.compiled(parts))
    return Sizes(len(SUBJECT) + len(HTML), variables, len(templated), len(plain), len(rendered.html))


def accept_rounds(args: argparse.Namespace) -> list[tuple[AcceptRun, AcceptRun]]:
    """Templated then plain sends under wrk, ``--rounds`` times, each run on a fresh gunicorn and keys of its own."""
    # What accept.py's functions read beyond our options: this code's app, no line per request.
    accept_args = argparse.Namespace(**vars(args), against="", request_log="off")
    loads = {
        "templated": Load(path=EMAIL_PATH, keys_file=KEYS_FILE, fields_file=TEMPLATED_FILE),
        "plain": Load(path=EMAIL_PATH, keys_file=KEYS_FILE, fields_file=PLAIN_FILE),
    }
    runs = len(TARGETS) * args.rounds
    keys_per_run = accept.seed_email_keys(
        accept_args, runs, keys_file=KEYS_FILE, prefix="templates", requests_per_key=REQUESTS_PER_KEY
    )
    log(f"templates: saving the template in {keys_per_run * runs} accounts")
    seed_templates()
    rounds = []
    for number in range(args.rounds):
        templated, plain = [
            accept.accept_run(
                accept_args, target, first_key=(number * len(TARGETS) + index) * keys_per_run, load=loads[target]
            )
            for index, target in enumerate(TARGETS)
        ]
        rounds.append((templated, plain))
    return rounds


@dataclass(frozen=True)
class Timings:
    label: str
    seconds: list[float]

    def row(self) -> tuple[Any, ...]:
        milliseconds = [value * 1000 for value in self.seconds]
        return self.label, len(milliseconds), *(percentile(milliseconds, share) for share in (0.50, 0.99, 1.0))


def timed_each(label: str, call: Callable[[T], object], inputs: Sequence[T]) -> Timings:
    """The wall time of ``call`` on each of ``inputs``, one after another."""
    seconds = []
    for given in inputs:
        started = time.perf_counter()
        call(given)
        seconds.append(time.perf_counter() - started)
    return Timings(label, seconds)


def render_timings(args: argparse.Namespace) -> list[Timings]:
    """In this process: ``--renders`` renders with data of their own each, the template parsed once (a send finds a
    version's parse in the engine's cache), whole (`engine.render`: every part, the checks, the styles inlined), then
    the HTML's Liquid alone and its inlining alone; and ``--parses`` parses of sources never seen (the template with
    an HTML comment of its own appended), what a send pays when the cache does not hold its version."""
    from email_templates import engine

    rng = random.Random(1)
    datas = [sample_data(rng) for _ in range(args.renders)]
    template = engine.compiled(engine.Parts(subject=SUBJECT, html=HTML, text=None))
    for data in datas[:WARMUP_RENDERS]:
        engine.render(template, data, alias=ALIAS)
    wait_for_quiet(args.quiet_wait)
    whole = timed_each(
        "render: subject and html, styles inlined", functools.partial(engine.render, template, alias=ALIAS), datas
    )
    liquid = timed_each("  of which Liquid, html", lambda data: template.html.render(**data), datas)
    htmls = [template.html.render(**data) for data in datas]
    inline = timed_each("  of which css-inline, html", engine.STYLE_INLINER.inline, htmls)
    sources = [
        engine.Parts(subject=SUBJECT, html=f"{HTML}<!-- {number} -->", text=None) for number in range(args.parses)
    ]
    parse = timed_each("parse, uncached (subject and html)", engine.compiled, sources)
    return [whole, liquid, inline, parse]


def report(sizes: Sizes, rounds: list[tuple[AcceptRun, AcceptRun]], renders: list[Timings]) -> None:
    print()
    print(
        f"template: {sizes.source_chars:,} characters of source, {len(sizes.variables)} names of data read, "
        f"a loop of {ROWS} rows, a <style> block; requests: templated {sizes.templated_request:,} bytes, "
        f"plain {sizes.plain_request:,} (its body the {sizes.rendered_html:,} characters of HTML the template "
        "renders, styles inlined)"
    )
    if rounds:
        report_accept(rounds)
    if renders:
        report_render(renders)


def report_accept(rounds: list[tuple[AcceptRun, AcceptRun]]) -> None:
    templated_runs, plain_runs = [templated for templated, _ in rounds], [plain for _, plain in rounds]
    rows = [accept.accept_row(str(number), [run]) for number, pair in enumerate(rounds, start=1) for run in pair]
    rows += (
        [accept.accept_row("median", templated_runs), accept.accept_row("median", plain_runs)]
        if len(rounds) > 1
        else []
    )
    print()
    table(ACCEPT_COLUMNS, rows)
    print()
    judge_rounds(
        "templated/plain req/s", [(templated.rps, plain.rps) for templated, plain in rounds], MIN_SHARE_OF_PLAIN
    )
    accept.errors_verdict(templated_runs + plain_runs)
    templated_cpu, plain_cpu = (median(run.cpu_ms for run in runs) for runs in (templated_runs, plain_runs))
    print(
        f"  gunicorn CPU per request: templated {templated_cpu / max(plain_cpu, 1e-9):.2f}x the plain's, "
        f"{templated_cpu - plain_cpu:+.2f} ms (not a target; explains the ratio)"
    )
    accept.run_notes(templated_runs + plain_runs)
    if max(run.rps for run in templated_runs + plain_runs) > accept.MAX_RPS:
        print(f"  note: a run went above {accept.MAX_RPS} req/s; some keys may have met the rate limit")


def report_render(renders: list[Timings]) -> None:
    print()
    table(RENDER_COLUMNS, [timings.row() for timings in renders])
    print()
    p99 = percentile([value * 1000 for value in renders[0].seconds], 0.99)
    verdict("render p99, one process", f"{p99:.2f} ms", f"< {MAX_RENDER_P99_MS:.0f} ms", p99 < MAX_RENDER_P99_MS)


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "duration", 20, "measured seconds per run", env="templates")
    option(parser, "warmup", 3, "warm-up seconds per run", env="templates")
    option(
        parser,
        "rounds",
        3,
        "templated sends then plain ones, this many times; the verdict takes the median",
        env="templates",
    )
    option(parser, "connections", 16, "wrk connections", env="templates")
    option(parser, "wrk-threads", 2, "wrk threads (wrk shares the CPUs with the server)", env="templates")
    option(parser, "port", 8781, "gunicorn's port", env="templates")
    option(parser, "renders", 2000, "renders timed in one process, each with data of its own", env="templates")
    option(parser, "parses", 100, "uncached parses timed in one process", env="templates")
    option(parser, "parts", "both", "accept, render or both", env="templates", choices=["both", "accept", "render"])


def run(args: argparse.Namespace) -> None:
    parts = ("accept", "render") if args.parts == "both" else (args.parts,)
    if "accept" in parts and shutil.which("wrk") is None:
        raise BenchError("wrk is not installed; on Debian/Ubuntu: apt-get install wrk")
    log(
        f"templates: {' and '.join(parts)}; wrk -t{args.wrk_threads} -c{args.connections}, {args.duration} s a run, "
        f"templated then plain sends, rounds: {args.rounds}; {args.renders} renders in one process"
    )
    with own_services(args):
        sizes = write_sends()
        rounds = accept_rounds(args) if "accept" in parts else []
        renders = render_timings(args) if "render" in parts else []
    report(sizes, rounds, renders)
