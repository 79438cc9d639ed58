"""The rendering engine: Liquid through python-liquid, set for templates written by customers, and the `<style>`
rules inlined with css-inline (docs/templates.md, "The language" and "Limits").

Nothing of Python is reachable from a template: it sees only `data`, a JSON object (dicts, lists, strings, numbers,
booleans, null), and python-liquid resolves names by item lookup, never by attribute. There is no loader and no
file system: `include` and `render` are removed, so a template is one text and nothing else.
(https://jg-rp.github.io/liquid/environment/#resource-limits)
"""

from __future__ import annotations

import functools
import gc
import re
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from io import StringIO
from typing import Any, TextIO, cast

import css_inline
from liquid import BlockNode, BoundTemplate, Environment, Mode, RenderContext, StrictUndefined, Undefined
from liquid.ast import Node
from liquid.builtin.content import ContentNode, Literal
from liquid.builtin.expressions import FilteredExpression, Path, StringLiteral
from liquid.builtin.expressions.logical import BooleanExpression, is_truthy
from liquid.builtin.expressions.loop import LoopExpression
from liquid.builtin.output import Output, OutputNode
from liquid.builtin.tags.cycle_tag import CycleNode, CycleTag
from liquid.builtin.tags.for_tag import ForNode, ForTag
from liquid.builtin.tags.if_tag import ConditionalBlockNode, IfNode, IfTag
from liquid.exceptions import (
    LiquidError,
    LiquidInterrupt,
    LiquidSyntaxError,
    LoopIterationLimitError,
    OutputStreamLimitError,
    StopRender,
    UndefinedError,
)
from liquid.expression import Expression
from liquid.output import LimitedStringIO
from liquid.stream import TokenStream
from liquid.stringify import to_liquid_string
from liquid.token import Token
from liquid.utils.chain_map import ReadOnlyChainMap
from markupsafe import Markup
from markupsafe import _escape_inner as escaped

from core.errors import TemplateDataMissing, TemplateNotRendered, TemplateSyntaxInvalid

# A rendered part is at most as long as a send's body may be (docs/rules.md, "Order of checks on a send").
PART_MAX_CHARS = 256 * 1024
SUBJECT_MAX_CHARS = 998
# The HTML once its `<style>` rules are copied into every element they match, which can multiply it. Known only
# once css-inline has parsed it: html5ever's parser copies a formatting element left open (`<b>` across paragraphs)
# into every block after, attributes and all, so no count of the rendered HTML's tags and declarations bounds it
# (tests/email_templates/test_inlined_limit.py), and a send inlines when it is accepted to refuse it there.
INLINED_HTML_MAX_CHARS = 1024 * 1024
# Loop iterations in one render of one part, all loops together (a nest of loops counts each inner iteration).
LOOP_ITERATIONS_MAX = 10_000
# What `assign` and `capture` may hold at once, by sys.getsizeof (python-liquid's measure), per render.
LOCAL_NAMESPACE_MAX_BYTES = 256 * 1024
# Nodes css-inline allocates for the parsed HTML before it needs more (STYLE_INLINER).
STYLE_NODES_PREALLOCATED = 512
# Scopes a render may open inside one another (each loop opens one): python-liquid's default.
CONTEXT_DEPTH_MAX = 30
# Blocks nested inside one another in a part's source, refused when saved: python-liquid's default.
BLOCK_NESTING_MAX = 30


class MissingVariable(StrictUndefined):
    """A name `data` does not hold: output, iterated or indexed it is an error naming it; in a condition it is
    false; the `default` filter gives its default for it (docs/templates.md, "Missing data")."""

    __slots__ = ()

    # The `default` filter returns its default without looking further.
    force_liquid_default = True
    # What conditions and comparisons read, and isinstance's look at the class (python-liquid's own falsy undefined
    # allows the same): everything else is the error.
    allowed_properties = StrictUndefined.allowed_properties | {"__liquid__", "__class__", "__bool__", "__eq__"}

    def __init__(self, name: str, *, token: Token | None, obj: object = None, hint: str | None = None) -> None:
        super().__init__(name, token=token, hint=hint)
        # The error's message is the path that is missing: `user.name`, not only `user`.
        self.msg = _missing_path(name, hint)

    def __liquid__(self) -> object:
        # Conditions read a value through `__liquid__`: None is false, and compares false to anything but nil.
        return None

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return other is None or isinstance(other, Undefined)

    # Still an error as a key (`__eq__` alone would make it unhashable, a TypeError).
    __hash__ = StrictUndefined.__hash__


def _missing_path(name: str, hint: str | None) -> str:
    undefined = " is undefined"
    if hint and hint.endswith(undefined):
        return hint.removesuffix(undefined).strip("'")
    return name


class CountedOutput(LimitedStringIO):
    """python-liquid's output with its limit (LimitedStringIO: the UTF-8 bytes written, refused at the write that
    passes the limit), counted without encoding what is ASCII, whose length is its bytes: most of what a render
    writes. A render writes a few hundred times (every run of text, every output), so the encode was a fifth of the
    Liquid render's time."""

    def write(self, text: str) -> int:
        self.size += len(text) if text.isascii() else len(text.encode())
        if self.size > self.limit:
            raise OutputStreamLimitError("output stream limit reached", token=None)
        return _STRING_IO_WRITE(self, text)


_STRING_IO_WRITE = StringIO.write


class BudgetedRenderContext(RenderContext):
    """python-liquid's limit counts the iterations of one nest of loops; this one counts every loop of the render
    too, so many loops one after another cannot add up to more than LOOP_ITERATIONS_MAX."""

    iterations = 0

    def raise_for_loop_limit(self, length: int = 1) -> None:
        super().raise_for_loop_limit(length)
        self.iterations += length
        if self.iterations > LOOP_ITERATIONS_MAX:
            raise LoopIterationLimitError("loop iteration limit reached", token=None)

    def get_buffer(self, buf: TextIO | None = None) -> StringIO:
        # What `capture` writes: what is left of the limit, as python-liquid's own (its carry), counted the same way.
        carry = buf.size if isinstance(buf, LimitedStringIO) else 0
        return CountedOutput(limit=PART_MAX_CHARS - carry)


class CustomerTemplate(BoundTemplate):
    context_class = BudgetedRenderContext

    def __init__(self, env: Environment, nodes: list[Node], *args: Any, **kwargs: Any) -> None:
        super().__init__(env, nodes, *args, **kwargs)
        # What `_ops_rendered` renders, made once a parse: the template's own nodes and each LoopBody's.
        static_context = RenderContext(self)
        bound = _bound_names(nodes, static_context) | set(self.make_partial_namespace(False, {}))
        self.ops = _ops(nodes, bound)
        for node in _tree(nodes, static_context):
            if type(node) is PlainNameForNode and type(node.block) is LoopBody:
                node.block.ops = _ops(node.block.nodes, bound, loop_variable=node.expression.identifier)

    def render_with_context(
        self,
        context: RenderContext,
        buffer: TextIO,
        *args: Any,
        partial: bool = False,
        block_scope: bool = False,
        **kwargs: Any,
    ) -> None:
        """As python-liquid's, its nodes rendered by `_ops_rendered` when the template is rendered as itself, into its
        own output, in python-liquid's strict mode (the only one a customer's template renders in), where the first
        error ends the render: python-liquid's own loop catches each node's errors to go on past them in its other
        modes."""
        if args or kwargs or partial or type(buffer) is not CountedOutput or self.env.mode != Mode.STRICT:
            super().render_with_context(context, buffer, *args, partial=partial, block_scope=block_scope, **kwargs)
            return
        # python-liquid's `context.extend` with the template's namespace, without its context manager: the depth it
        # checks is the render's own scopes at the root, never past CONTEXT_DEPTH_MAX, and no other template is set.
        context.scope.push(self.make_partial_namespace(partial, {}))
        try:
            _ops_rendered(self.ops, context, buffer, root=True)
        finally:
            context.scope.pop()

    # Off the framework's road: docs/departures.md, "counted-output".
    def _get_buffer(self) -> StringIO:
        return CountedOutput(limit=PART_MAX_CHARS)

    def make_globals(self, render_args: Mapping[str, object]) -> Mapping[str, object]:
        # A customer's template has no globals and no front matter (parsed by `from_string` without them), so the
        # render's arguments are its globals as they are: a dict each name of `data` is found in, not a chain of it
        # and two empty mappings.
        if self.matter or self.globals:
            return super().make_globals(render_args)
        return render_args


class EscapingOutputNode(OutputNode):
    """An output (`{{ ... }}`) as python-liquid writes it, two steps shorter; each output of a render pays them.

    - A name without filters (`{{ user.name }}`, most outputs) is looked up item by item (`_looked_up`), without
      building its path for `RenderContext.get`; a lookup that does not find it goes python-liquid's whole way,
      which gives its undefined or its error.
    - A string is escaped straight to a string: python-liquid's `to_liquid_string` escapes through markupsafe's
      `escape`, which wraps the same escaped text in a `Markup` (a Python-level constructor per output) that the
      output then only writes; a number is its `str`, which has nothing to escape. Anything else (a boolean, a
      list, a `Markup` the `safe` filter made) goes python-liquid's way.
    """

    __slots__ = ("names",)

    def __init__(self, token: Token, expression: Expression) -> None:
        super().__init__(token, expression)
        self.names = _plain_names(expression)

    def render_to_output(self, context: RenderContext, buffer: TextIO) -> int:
        return buffer.write(self.text(context))

    def text(self, context: RenderContext) -> str:
        """What the output writes."""
        value = _ABSENT if self.names is None else _looked_up(context.scope, self.names)
        if value is _ABSENT:
            value = self.expression.evaluate(context)
        return _text_of(value, autoescape=context.autoescape)

    # No tag is disabled in a customer's render (only `include` and `render` disable tags, and they do not exist
    # here), so each node renders without python-liquid's `Node.render` asking.
    render = render_to_output


def _text_of(value: object, *, autoescape: bool) -> str:
    """``value`` as an output writes it, a `str` itself: python-liquid's `to_liquid_string` gives a `Markup` for a
    `Markup` (what `capture` binds in `html`), whose `+` escapes the text it is added to (`_ops_rendered`)."""
    if type(value) is str:
        return escaped(value) if autoescape else value
    if type(value) is int or type(value) is float:
        # Its `str`, as python-liquid's: digits, a sign, a point, an exponent, `inf` or `nan`, nothing to escape.
        return str(value)
    return str(to_liquid_string(value, autoescape))


# What a lookup gives for a name it does not find.
_ABSENT = object()


def _looked_up(scope: Mapping[str, object], names: Sequence[str]) -> object:
    """The item of ``names`` in ``scope``, name by name, as python-liquid's `RenderContext.get` finds it when every
    name is a string and each lookup finds its item: its `get_item` is that item for a string, as it tries it first
    (`size`, `first` and `last` too); _ABSENT where `get` would not find it (a KeyError, TypeError or IndexError)."""
    value = _in_scope(scope, names[0])
    return value if value is _ABSENT else _items(value, names[1:])


def _items(value: Any, names: Sequence[str]) -> object:
    """The item of ``names`` in ``value``, name by name (`_looked_up`), or _ABSENT."""
    try:
        for name in names:
            value = value[name]
    except (KeyError, TypeError, IndexError):
        return _ABSENT
    return value


def _in_scope(scope: Mapping[str, object], name: str) -> object:
    """``scope[name]`` as python-liquid's `ReadOnlyChainMap` finds it (the first of its mappings that holds the name),
    or _ABSENT, with its dicts asked by `get`: a name found in a later mapping (the send's `data`, behind the
    template's namespace and its locals) is not a KeyError raised and caught at each mapping before it."""
    if type(scope) is not ReadOnlyChainMap:
        try:
            return scope[name]
        except (KeyError, TypeError, IndexError):
            return _ABSENT
    for mapping in scope._maps:
        value = mapping.get(name, _ABSENT) if type(mapping) is dict else _in_scope(mapping, name)
        if value is not _ABSENT:
            return value
    return _ABSENT


def _plain_names(expression: Expression) -> tuple[str, ...] | None:
    """The segments of an output that is a name and nothing else (no filter, no index by a variable), else None."""
    if type(expression) is not FilteredExpression or expression.filters:
        return None
    return _names(expression.left)


def _names(expression: Expression) -> tuple[str, ...] | None:
    """The segments of a name (`user.name`: no index by a variable, no literal), else None."""
    if type(expression) is not Path:
        return None
    names = tuple(segment for segment in expression.path if type(segment) is str)
    return names if len(names) == len(expression.path) else None


class EscapingOutput(Output):
    node_class = EscapingOutputNode


class TextNode(ContentNode):
    """The template's text between its tags, written as python-liquid's, without its `Node.render` asking whether
    a tag is disabled (none is, as for EscapingOutputNode), and counted into a CountedOutput as its `write` counts
    it, with the UTF-8 bytes of the text counted once when parsed: a render writes a run of text a hundred times
    or more (docs/departures.md, "counted-output")."""

    __slots__ = ("size",)

    def __init__(self, token: Token, text: str) -> None:
        super().__init__(token, text)
        self.size = len(text.encode())

    def render(self, context: RenderContext, buffer: TextIO) -> int:
        if type(buffer) is not CountedOutput:
            return buffer.write(self.text)
        buffer.size += self.size
        if buffer.size > buffer.limit:
            raise OutputStreamLimitError("output stream limit reached", token=None)
        return _STRING_IO_WRITE(buffer, self.text)


class Text(Literal):
    node_class = TextNode


class LiteralCycleNode(CycleNode):
    """A `cycle` through strings written in the template (`{% cycle 'row', 'row alt' %}`, no group), as python-liquid
    cycles them, with what each render of it would evaluate made once when parsed: its values (each string, a
    `Markup` where the part escapes), the key its place is kept under (`str` of that list, python-liquid's, so
    another cycle through the same strings takes turns with it) and the text each writes. A loop renders it once an
    iteration; python-liquid's own way evaluates them each time. Any other cycle renders as python-liquid's."""

    __slots__ = ("key", "texts")

    def literal(self, *, autoescape: bool) -> None:
        literals = [arg for arg in self.args if type(arg) is StringLiteral]
        self.key: str | None = None
        if self.group is None and len(literals) == len(self.args):
            values = [Markup(arg.value) if autoescape else arg.value for arg in literals]
            self.key = str(values)
            self.texts = [to_liquid_string(value, autoescape) for value in values]

    def render_to_output(self, context: RenderContext, buffer: TextIO) -> int:
        if self.key is None:
            return super().render_to_output(context, buffer)
        return buffer.write(self.texts[context.cycle(self.key, len(self.texts))])

    # No tag is disabled in a customer's render: see EscapingOutputNode.
    render = render_to_output


class LiteralCycle(CycleTag):
    node_class = LiteralCycleNode

    def parse(self, stream: TokenStream) -> CycleNode:
        node = cast(LiteralCycleNode, super().parse(stream))
        node.literal(autoescape=self.env.autoescape)
        return node


class NameCondition(BooleanExpression):
    """An `if` whose condition is a name and nothing else (`{% if item.gift %}`), true as python-liquid's: the
    name looked up as an output's (`_looked_up`), python-liquid's `evaluate` taking over for a name it does not find,
    which gives its undefined (false, MissingVariable)."""

    __slots__ = ("names",)

    def __init__(self, condition: BooleanExpression, names: tuple[str, ...]) -> None:
        super().__init__(condition.token, condition.expression)
        self.names = names

    def evaluate(self, context: RenderContext) -> bool:
        value = _looked_up(context.scope, self.names)
        return super().evaluate(context) if value is _ABSENT else _truthy(value)


# What a name of `data` may be, which no `__liquid__` of python-liquid's protocol turns into another value and no
# Undefined is.
_DATA_TYPES = frozenset({str, int, float, bool, type(None), list, dict})


def _truthy(value: object) -> bool:
    """As python-liquid's `is_truthy`, which asks any value for `__liquid__` and whether it is Undefined (an ABC's
    isinstance) first: a value of `data`'s types is true unless it is false or nil."""
    if type(value) in _DATA_TYPES:
        return value is not False and value is not None
    return is_truthy(value)


class NameIfNode(IfNode):
    """An `if` as python-liquid's, its condition a NameCondition where it is a name; a loop renders it once an
    iteration, and python-liquid's own way builds the name's path for `RenderContext.get` each time."""

    __slots__ = ()

    def __init__(
        self,
        token: Token,
        condition: Expression,
        consequence: BlockNode,
        alternatives: list[ConditionalBlockNode],
        default: BlockNode | None,
    ) -> None:
        super().__init__(token, _name_condition(condition), consequence, alternatives, default)

    # No tag is disabled in a customer's render: see EscapingOutputNode.
    render = IfNode.render_to_output

    def branch(self, context: RenderContext, value: object) -> BlockNode | None:
        """The block an `if` without `elsif` renders when its condition's name is ``value`` (_ABSENT: not found, as
        NameCondition's), or None."""
        truthy = self.condition.evaluate(context) if value is _ABSENT else _truthy(value)
        return self.consequence if truthy else self.default


class NameIf(IfTag):
    node_class = NameIfNode


def _name_condition(condition: Expression) -> Expression:
    """The condition as a NameCondition when it is a name and nothing else, else as it is."""
    if type(condition) is not BooleanExpression:
        return condition
    names = _names(condition.expression)
    return condition if names is None else NameCondition(condition, names)


class LoopBody(BlockNode):
    """A loop's body, rendered as python-liquid's block, through the ops its CustomerTemplate made of its nodes
    (`_ops_rendered`), else its nodes one after the other, without a generator summing what each wrote nor
    `Node.render` asking whether a tag is disabled (none is, as for EscapingOutputNode): a loop renders its body
    each iteration."""

    __slots__ = ("ops",)

    def __init__(self, token: Token, nodes: list[Node]) -> None:
        super().__init__(token, nodes)
        # Set by the CustomerTemplate the loop is parsed into.
        self.ops: tuple[Op, ...] | None = None

    def render(self, context: RenderContext, buffer: TextIO) -> int:
        if self.blank and context.env.suppress_blank_control_flow_blocks:
            return self.render_to_output(context, buffer)
        if self.ops is not None and type(buffer) is CountedOutput:
            return _ops_rendered(self.ops, context, buffer, root=False)
        written = 0
        for node in self.nodes:
            written += node.render(context, buffer)
        return written


# What `_ops_rendered` does with a node of a block, the op `_ops` made of it when the template was parsed: writes its
# run of text, its output of a name (EscapingOutputNode's without filters) of `data`, of an item of the loop's
# variable (`item.name`), of the loop's variable and what follows, or of any other name, its literal cycle's next
# text, renders the block its `if` on a name (without `elsif`) picks; any other node renders itself.
# The outputs of a name first, the most frequent first: `_ops_rendered` asks in this order.
LOOP_ITEM, DATA_NAME, LOOP_NAME, NAME, TEXT, CYCLE, BRANCH, LOOP_BRANCH, NODE = range(9)
WRITING = frozenset({LOOP_ITEM, DATA_NAME, LOOP_NAME, NAME, CYCLE})
# (what to do, what with, and more, the text written before (the run of text that comes before an op that writes
# text), its UTF-8 bytes, the nodes it was made of: the run of text's first when it has one)
Op = tuple[int, Any, Any, str, int, tuple[Node, ...]]


def _ops(nodes: Sequence[Node], bound: set[str], *, loop_variable: str | None = None) -> tuple[Op, ...]:
    """The ops of a block's nodes; ``bound``: the names the template binds anywhere (`_bound_names`);
    ``loop_variable``: the variable of the loop whose body they are. A run of text followed by a node that writes
    text is that node's op's text before, written with its text in one write: the same text unless the run ends
    with a carriage return, which python-liquid's output (a StringIO translating newlines) turns into a newline
    apart from a line feed that begins the next write, as it does when the two are written together."""
    ops: list[Op] = []
    before: TextNode | None = None
    for node in nodes:
        op = _op(node, bound, loop_variable)
        if before is not None and op[0] in WRITING and not before.text.endswith("\r"):
            ops.append((op[0], op[1], op[2], before.text, before.size, (before, node)))
            before = None
            continue
        if before is not None:
            ops.append(_op(before, bound, loop_variable))
        before = node if type(node) is TextNode else None
        if before is None:
            ops.append(op)
    if before is not None:
        ops.append(_op(before, bound, loop_variable))
    return tuple(ops)


def _op(node: Node, bound: set[str], loop_variable: str | None) -> Op:
    """The op of ``node``, with no text before."""
    if type(node) is TextNode:
        return (TEXT, None, None, node.text, node.size, (node,))
    if type(node) is EscapingOutputNode and node.names is not None:
        names = node.names
        if len(names) == 1 and names[0] not in bound:
            return (DATA_NAME, names[0], None, "", 0, (node,))
        if names[0] == loop_variable:
            if len(names) == 2:
                return (LOOP_ITEM, names[0], names[1], "", 0, (node,))
            return (LOOP_NAME, names[0], names[1:], "", 0, (node,))
        return (NAME, names, None, "", 0, (node,))
    if type(node) is LiteralCycleNode and node.key is not None:
        # Each a `str` itself, for the text before it: see _text_of.
        return (CYCLE, node.key, [str(text) for text in node.texts], "", 0, (node,))
    if type(node) is NameIfNode and type(node.condition) is NameCondition and not node.alternatives:
        names = node.condition.names
        return (LOOP_BRANCH if names[0] == loop_variable else BRANCH, node.branch, names, "", 0, (node,))
    return (NODE, None, None, "", 0, (node,))


def _tree(nodes: Sequence[Node], static_context: RenderContext) -> Iterator[Node]:
    """Every node of ``nodes`` and of their blocks, as python-liquid's static analysis visits them."""
    for node in nodes:
        yield node
        yield from _tree(list(node.children(static_context, include_partials=False)), static_context)


def _bound_names(nodes: Sequence[Node], static_context: RenderContext) -> set[str]:
    """The names a template's nodes bind anywhere in it (python-liquid's `template_scope` and `block_scope`: `assign`,
    `capture`, a loop's variable and `forloop`, ...). A name outside it, in a render of the template, is in no scope
    before the render's globals, `data` as it is (CustomerTemplate.make_globals): the template's namespace holds only
    `partial` (python-liquid's `make_partial_namespace`), the locals only what `assign` and `capture` bind, a loop's
    namespace only its variable and `forloop`, and nothing else extends a customer's render."""
    names: set[str] = set()
    for node in _tree(nodes, static_context):
        names.update(str(name) for name in node.template_scope())
        names.update(str(name) for name in node.block_scope())
    return names


# A render's globals when they are not `data` as it is: each DATA_NAME found the way of any other name.
_NO_DATA: dict[str, object] = {}


def _ops_rendered(ops: Sequence[Op], context: RenderContext, buffer: CountedOutput, *, root: bool) -> int:
    """A block's nodes rendered, one after the other, as each renders itself, through the ops made of them: a node
    that writes text (a run of text, an output of a name, a literal cycle) written here, without a call of its own,
    its bytes counted and refused past the limit as CountedOutput's `write` does, an output of a name of `data`
    (DATA_NAME) found in it without asking each scope before it (`_bound_names` says none holds it), and the block an
    `if` on a name picks rendered from here. A render writes a few hundred times. ``root``: the template's own
    nodes, whose errors python-liquid's `render_with_context` gives the node's token when they have none, and where
    an interrupt (`break` outside a loop) is a syntax error."""
    data = context.globals if type(context.globals) is dict else _NO_DATA
    autoescape = context.autoescape
    size, limit = buffer.size, buffer.limit
    written = 0
    try:
        for op, argument, extra, before, before_size, nodes in ops:
            # The text before is counted first, as python-liquid writes it before what follows is looked up, and
            # refused with its own node's token at the root.
            size += before_size
            if size > limit:
                raise OutputStreamLimitError("output stream limit reached", token=nodes[0].token if root else None)
            if op <= NAME:
                if op == LOOP_ITEM:
                    # The loop's namespace, in front of every scope in its body, always holds its variable.
                    item = context.scope._maps[0][argument]
                    value = item.get(extra, _ABSENT) if type(item) is dict else _items(item, (extra,))
                elif op == DATA_NAME:
                    value = data.get(argument, _ABSENT)
                elif op == LOOP_NAME:
                    value = _items(context.scope._maps[0][argument], extra)
                else:
                    value = _looked_up(context.scope, argument)
                if type(value) is str:  # most outputs: _text_of's first case, without its call
                    text = escaped(value) if autoescape else value
                elif type(value) is int:  # _text_of's second, for an int, without its call
                    text = str(value)
                elif value is not _ABSENT:
                    text = _text_of(value, autoescape=autoescape)
                else:  # not found: the output's own way, python-liquid's for what it does not find
                    text = cast(EscapingOutputNode, nodes[-1]).text(context)
            elif op == TEXT:
                written += _STRING_IO_WRITE(buffer, before)
                continue
            elif op == CYCLE:
                text = extra[context.cycle(argument, len(extra))]
            else:
                if op == NODE:
                    block = nodes[0]
                else:  # argument: NameIfNode.branch; extra: the condition's names
                    scope = context.scope
                    if op == LOOP_BRANCH:
                        value = _items(scope._maps[0][extra[0]], extra[1:])
                    else:
                        value = _looked_up(scope, extra)
                    block = argument(context, value)
                if block is not None:
                    buffer.size = size
                    written += block.render(context, buffer)
                    size = buffer.size
                continue
            size += len(text) if text.isascii() else len(text.encode())
            if size > limit:
                raise OutputStreamLimitError("output stream limit reached", token=None)
            written += _STRING_IO_WRITE(buffer, before + text)
    except LiquidInterrupt as interrupt:
        if not root:
            raise
        raise LiquidSyntaxError(f"unexpected '{interrupt}'", token=nodes[-1].token) from None
    except StopRender:
        if not root:
            raise
        return written
    except LiquidError as error:
        if root and not error.token:
            error.token = nodes[-1].token
        raise
    buffer.size = size
    return written


class PlainNameForNode(ForNode):
    """A `for` as python-liquid's, the name of its variable a plain `str`. python-liquid keeps the `Identifier` it
    parsed, a `str` whose `__eq__` and `__hash__` are Python methods, and makes it the key of the loop's namespace:
    every lookup of the variable in the loop (`{{ item.name }}`) called its `__eq__`."""

    __slots__ = ()

    def __init__(
        self, token: Token, expression: LoopExpression, block: BlockNode, default: BlockNode | None = None
    ) -> None:
        expression.identifier = str(expression.identifier)
        super().__init__(token, expression, LoopBody(block.token, block.nodes), default)

    # No tag is disabled in a customer's render: see EscapingOutputNode.
    render = ForNode.render_to_output


class PlainNameFor(ForTag):
    node_class = PlainNameForNode


class CustomerEnvironment(Environment):
    """python-liquid with its resource limits on and no way out of the one text it renders."""

    block_nesting_limit = BLOCK_NESTING_MAX
    context_depth_limit = CONTEXT_DEPTH_MAX
    loop_iteration_limit = LOOP_ITERATIONS_MAX
    local_namespace_limit = LOCAL_NAMESPACE_MAX_BYTES
    output_stream_limit = PART_MAX_CHARS
    template_class = CustomerTemplate

    def setup_tags_and_filters(self, *, extra: bool = False) -> None:
        super().setup_tags_and_filters(extra=extra)
        # Each would read another template through a loader: a template is one text.
        for tag in ("include", "render"):
            del self.tags[tag]
        self.add_tag(EscapingOutput)
        self.add_tag(Text)
        self.add_tag(LiteralCycle)
        self.add_tag(NameIf)
        self.add_tag(PlainNameFor)


# `html` escapes what it outputs; `subject` and `text` are plain text, output as given.
HTML_ENVIRONMENT = CustomerEnvironment(autoescape=True, undefined=MissingVariable)
TEXT_ENVIRONMENT = CustomerEnvironment(autoescape=False, undefined=MissingVariable)
# No stylesheet is ever fetched or read (https://github.com/Stranger6667/css-inline#configuration): a template
# cannot make NotifyHub reach a URL or a file. At-rules (`@media`) cannot be inlined and stay in a `<style>`.
# The parsed document's nodes are allocated 512 at first, where css-inline's default of 32 grows its vector four
# times and more for an email of a few hundred tags (`preallocate_node_capacity`,
# https://docs.rs/css-inline/latest/css_inline/struct.InlineOptions.html); the figure is in docs/templates.md.
STYLE_INLINER = css_inline.CSSInliner(
    load_remote_stylesheets=False, keep_at_rules=True, preallocate_node_capacity=STYLE_NODES_PREALLOCATED
)
# `<style` in any case, found without lowering the whole HTML: no character but ASCII's lowers to any of its
# letters, so ASCII's cases find what `"<style" in html.lower()` would.
STYLE_TAG = re.compile("<style", re.IGNORECASE | re.ASCII)


@dataclass(frozen=True)
class Parts:
    """A template's sources, as a version keeps them."""

    subject: str
    html: str
    text: str | None


@dataclass(frozen=True)
class Rendered:
    subject: str
    html: str
    # None when the template has no `text`: the send makes it from `html` (docs/rules.md, "Rich email").
    text: str | None


@dataclass(frozen=True)
class Compiled:
    subject: BoundTemplate
    html: BoundTemplate
    text: BoundTemplate | None


def compiled(parts: Parts) -> Compiled:
    """The parts parsed; a part that does not parse is TemplateSyntaxInvalid naming it and its line."""
    return _compiled_cached(parts.subject, parts.html, parts.text)


# A version never changes, so its parse is kept for the next send of it (a few, each at most three parts of
# PART_MAX_CHARS).
@functools.lru_cache(maxsize=32)
def _compiled_cached(subject: str, html: str, text: str | None) -> Compiled:
    return Compiled(
        subject=_parsed("subject", subject, TEXT_ENVIRONMENT),
        html=_parsed("html", html, HTML_ENVIRONMENT),
        text=None if text is None else _parsed("text", text, TEXT_ENVIRONMENT),
    )


# What a parse refers to but does not own: shared by every template, never counted as its memory.
SHARED_TYPES = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, Environment)


def parsed_bytes(template: Compiled) -> int:
    """The memory a parse holds, by sys.getsizeof of each object reachable from its parts once, the environment,
    classes and functions they share left out. Not the source's length: a page of static HTML parses to a few
    hundred bytes, a page of `{% if %}` tags to 50 bytes a character (docs/templates.md, "Operators")."""
    parts = [part for part in (template.subject, template.html, template.text) if part is not None]
    seen: set[int] = set()
    total = 0
    while parts:
        obj = parts.pop()
        if id(obj) in seen or isinstance(obj, SHARED_TYPES):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        parts.extend(gc.get_referents(obj))
    return total


def _parsed(part: str, source: str, environment: Environment) -> BoundTemplate:
    try:
        return environment.from_string(source)
    except LiquidError as error:
        raise TemplateSyntaxInvalid(part=part, line=_line_of(error, source), reason=str(error.message)) from None


def _line_of(error: LiquidError, source: str) -> int:
    """The line (from 1) of the source where python-liquid found the error; its last line when the error is that
    the source ended too soon (a block left open)."""
    token = error.token
    if token is None or token.start_index < 0 or token.source != source:
        return source.count("\n") + 1
    return source.count("\n", 0, token.start_index) + 1


def variables_read(template: Compiled) -> list[str]:
    """The names of `data` the parts read, in the order they first appear (python-liquid's static analysis: the
    template's global variables, without what it assigns itself)."""
    names: dict[str, None] = {}
    for part in (template.subject, template.html, template.text):
        if part is not None:
            names.update(dict.fromkeys(part.global_variables(include_partials=False)))
    return list(names)


def render(template: Compiled, data: Mapping[str, Any], *, alias: str) -> Rendered:
    """The parts rendered with ``data`` and the HTML's styles inlined; raises TemplateDataMissing or
    TemplateNotRendered."""
    subject = _rendered("subject", template.subject, data, alias=alias)
    html = _rendered("html", template.html, data, alias=alias)
    text = None if template.text is None else _rendered("text", template.text, data, alias=alias)
    _check_subject(subject, alias=alias)
    if not html.strip():
        raise TemplateNotRendered(alias=alias, reason="html is empty")
    return Rendered(subject=subject, html=_styles_inlined(html, alias=alias), text=text)


def _rendered(part: str, template: BoundTemplate, data: Mapping[str, Any], *, alias: str) -> str:
    try:
        # The mapping itself, which python-liquid's `render` copies once: `**data` unpacked it into keywords first.
        return template.render(data)
    except UndefinedError as error:
        raise TemplateDataMissing(name=str(error.message), alias=alias) from None
    except LiquidError as error:
        raise TemplateNotRendered(alias=alias, reason=f"{part}: {error.message}") from None
    # The template is the customer's code: whatever else its filters raise (a number too long to print, a
    # recursion too deep) is its failure to render, never the service's.
    except (ArithmeticError, LookupError, RecursionError, TypeError, ValueError) as error:
        raise TemplateNotRendered(alias=alias, reason=f"{part}: {error}") from None


def _check_subject(subject: str, *, alias: str) -> None:
    for broken, reason in (
        (not subject.strip(), "subject is empty"),
        ("\n" in subject or "\r" in subject, "subject must be a single line"),
        (len(subject) > SUBJECT_MAX_CHARS, f"subject must be at most {SUBJECT_MAX_CHARS} characters"),
    ):
        if broken:
            raise TemplateNotRendered(alias=alias, reason=reason)


def _styles_inlined(html: str, *, alias: str) -> str:
    """``html`` with its `<style>` rules copied into the elements they match; as it is without a `<style>`."""
    if STYLE_TAG.search(html) is None:
        return html
    inlined = STYLE_INLINER.inline(html)
    if len(inlined) > INLINED_HTML_MAX_CHARS:
        reason = f"html is longer than {INLINED_HTML_MAX_CHARS} characters once its styles are inlined"
        raise TemplateNotRendered(alias=alias, reason=reason)
    return inlined
