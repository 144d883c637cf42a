"""JMS 1.1 message selectors (JMS 1.1 §3.8.1): our own parser, evaluator and renderer.

This module owns the selector language. Two reasons for having our own implementation:

- **Validation at create time.** ``Session.createConsumer(dest, selector)`` parses the selector here first,
  so an invalid selector raises :class:`~jmslike.exceptions.InvalidSelectorException` with a precise message
  on every broker, instead of a broker-specific ERROR frame (or nothing at all) later.
- **Client-side evaluation.** Brokers without selector support (RabbitMQ) get every message; the consumer
  runs :meth:`Selector.matches` on each one. It is compiled once into nested closures, so a match costs a
  few function calls and never compiles a regex.

Adapters for brokers that evaluate selectors themselves send :meth:`Selector.render` instead of the user's
text: normalised, parenthesised so that every broker groups it the same way (ActiveMQ and Artemis bind
``NOT`` as tightly as unary minus, so ``NOT a = 1`` goes out as ``NOT (a = 1)``), with header names
mapped to the broker's own (``rename``).

``parse`` takes a non-empty selector. "No selector" (``None`` or ``""`` in the JMS API) is the caller's
business: check for it before calling ``parse``, which rejects empty and whitespace-only text.

Semantics, where the spec leaves a choice:

- SQL three-valued logic; a missing identifier is NULL; anything compared with NULL is UNKNOWN; only TRUE
  matches.
- Comparing values of different types (a string with a number, a boolean with a number) is FALSE, for
  ``<>`` as well as ``=``, as JMS 1.1 §3.8.1.1 says (ActiveMQ makes ``<>`` TRUE there). Integers and floats
  compare numerically. Strings and booleans only support ``=`` and ``<>``.
- Arithmetic on a non-number, and division by zero, is UNKNOWN. ``int / int`` truncates toward zero, as
  in Java. Integers are not limited to 64 bits.
- An identifier used as a condition (``a AND b``) is TRUE or FALSE if its value is a boolean, UNKNOWN if
  absent, FALSE otherwise (as ActiveMQ does).
- ``LIKE`` on a non-string value is FALSE (so ``NOT LIKE`` is TRUE); ``IN`` on a non-string value is
  UNKNOWN, for ``NOT IN`` too (both as ActiveMQ does). In a ``LIKE`` pattern the escape character escapes
  ``%``, ``_`` and itself; anywhere else it stands for itself (as ActiveMQ does).
- ``a NOT BETWEEN x AND y`` is ``a < x OR a > y`` (JMS 1.1); ``NOT LIKE`` and ``NOT IN`` negate.
- Evaluation never raises because of the values it gets (exceptions raised by ``lookup`` itself propagate).
  Values of types other than str, bool, int and float compare FALSE and count as non-numbers.

Stricter than some brokers, so that what we accept works everywhere: ``IN`` lists hold string literals
only; ``LIKE`` and ``IN`` need an identifier on their left; comparisons do not chain (``a = b = c`` needs
parentheses); ``x = NULL`` is refused (use ``IS NULL``); statically obvious type errors (``'a' > 1``,
``1 AND a``, a selector that is a number) are refused.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, TypeGuard, assert_never

from jmslike.exceptions import InvalidSelectorException

__all__ = ["MAX_NESTING", "MAX_SELECTOR_BYTES", "Selector", "parse", "quote_string"]

_log = logging.getLogger(__name__)

MAX_SELECTOR_BYTES: Final = 64 * 1024
"""Longest selector accepted, in UTF-8 bytes."""

MAX_NESTING: Final = 100
"""Deepest nesting accepted: open parentheses plus prefix operators (NOT, unary + and -) around any
point, where a parenthesis right after a prefix operator shares its level (``NOT (...)`` is one level)."""

Lookup = Callable[[str], object | None]
"""Gives an identifier's value (str, bool, int or float), or None if the message does not have it."""


# --------------------------------------------------------------------------------------------------
# The syntax tree. Frozen dataclasses; AND, OR and runs of + - or * / are n-ary, so long chains stay
# flat (a 64 KiB selector of "a=1 OR a=2 OR ..." must not become a tree thousands of levels deep).
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Constant:
    value: str | bool | int | float | None  # None is the NULL literal


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str


@dataclass(frozen=True, slots=True)
class Sign:
    operator: str  # "+" or "-"
    operand: Expression


@dataclass(frozen=True, slots=True)
class Arithmetic:
    """``operands[0] operators[0] operands[1] ...``, left to right, all one precedence level."""

    operands: tuple[Expression, ...]
    operators: tuple[str, ...]  # "+", "-" or "*", "/"; one fewer than operands


@dataclass(frozen=True, slots=True)
class Comparison:
    operator: str  # "=", "<>", "<", "<=", ">", ">="
    left: Expression
    right: Expression


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expression


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Expression, ...]


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Expression, ...]


@dataclass(frozen=True, slots=True)
class Between:
    operand: Expression
    low: Expression
    high: Expression
    negated: bool


@dataclass(frozen=True, slots=True)
class Like:
    operand: Identifier
    pattern: str
    escape: str | None
    negated: bool


@dataclass(frozen=True, slots=True)
class In:
    operand: Identifier
    values: tuple[str, ...]
    negated: bool


@dataclass(frozen=True, slots=True)
class IsNull:
    operand: Expression
    negated: bool  # IS NOT NULL


Expression = (
    Constant | Identifier | Sign | Arithmetic | Comparison | Not | And | Or | Between | Like | In | IsNull
)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


class Selector:
    """A parsed, valid message selector. Immutable; safe to share between threads. Build it with
    :func:`parse`."""

    __slots__ = ("_evaluate", "_expression", "compares_typed", "computes", "identifiers", "text")

    def __init__(self, text: str, expression: Expression) -> None:
        self.text: str = text
        """The selector as the application wrote it."""
        self._expression = expression
        self.identifiers: frozenset[str] = _identifiers(expression)
        """Every identifier the selector uses: header fields (``JMSPriority``...) and property names."""
        self.computes: bool = _computes(expression)
        """Whether it does arithmetic on message values (``price * qty > 100``): brokers that see STOMP's
        string properties may not be able to (ActiveMQ Classic; see ``Adapter.selector_placement``)."""
        self.compares_typed: bool = _compares_typed(expression)
        """Whether it compares a property as a number or a boolean (``weight > 2``, ``n BETWEEN 1 AND 5``,
        ``flag = TRUE``): a broker that keeps STOMP's properties as strings and does not convert them never
        matches such a test (Artemis; see ``Adapter.selector_placement``)."""
        self._evaluate = _compile(expression)

    def matches(self, lookup: Lookup) -> bool:
        """True if the selector is TRUE for a message; FALSE and UNKNOWN do not match.

        ``lookup(identifier)`` returns the value or None if absent. Headers are looked up the same way:
        JMSDeliveryMode as 'PERSISTENT' or 'NON_PERSISTENT', JMSPriority and JMSTimestamp as int,
        JMSMessageID, JMSCorrelationID and JMSType as str.
        """
        try:
            return self._evaluate(lookup) is True
        except RecursionError:  # cannot happen within MAX_NESTING unless the caller's stack is nearly full
            _log.warning("selector %r could not be evaluated: call stack too deep", self.text)
            return False

    @property
    def expression(self) -> Expression:
        """The syntax tree (immutable), for adapters that must rewrite a selector for their broker."""
        return self._expression

    def render(self, rename: Callable[[str], str] = lambda name: name) -> str:
        """This selector as normalised JMS selector text, each identifier passed through ``rename``
        (adapters map header names to the broker's own, e.g. JMSPriority -> AMQPriority).

        Parentheses are written where the grammar needs them and around every non-trivial NOT operand,
        so brokers with ActiveMQ's grammar read it the same way. ``parse(render())`` gives an equivalent
        selector and never fails for nesting: the text never nests deeper than :attr:`text`. Raises
        ValueError if ``rename`` returns something that is not a valid identifier.
        """
        return _render(self._expression, rename)

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"


def parse(text: str) -> Selector:
    """Parse and check a JMS message selector; raise InvalidSelectorException if it is not valid.

    The message names the problem and its 1-based character position. ``None``/``""`` meaning "no
    selector" must be handled by the caller: empty and whitespace-only text is rejected here.
    """
    if not isinstance(text, str):
        raise InvalidSelectorException(f"a selector must be a str, not {type(text).__name__}")
    if len(text) > MAX_SELECTOR_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_SELECTOR_BYTES:
        raise InvalidSelectorException(
            f"selector is {len(text.encode('utf-8', 'surrogatepass'))} bytes long (UTF-8); "
            f"the limit is {MAX_SELECTOR_BYTES} bytes"
        )
    if not text.strip(_WHITESPACE_CHARS):
        raise InvalidSelectorException(
            "selector is empty; to receive every message pass no selector (None) instead"
        )
    try:
        expression = _Parser(text).parse()
        return Selector(text, expression)
    except RecursionError:
        raise InvalidSelectorException(
            f"selector nests too deeply for the call stack (limit {MAX_NESTING} levels)"
        ) from None


def quote_string(value: str) -> str:
    """``value`` as a JMS string literal (quotes doubled), e.g. for ``"color = " + quote_string(user)``.

    Whatever ``value`` holds, the result is one literal: it cannot end early and inject selector text.
    """
    return "'" + value.replace("'", "''") + "'"


# --------------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------------

_WHITESPACE_CHARS: Final = " \t\n\r\f"  # Java's whitespace, as JMS says
_DIGITS: Final = "0123456789"  # not str.isdigit(), which takes any Unicode digit
_KEYWORDS: Final = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE", "TRUE", "FALSE", "NULL"}
)
_OPERATORS: Final = ("<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "(", ")", ",")  # longest first
_COMPARISON_OPERATORS: Final = frozenset({"=", "<>", "<", "<=", ">", ">="})

# Java numeric literals, tried in this order: hex, float (needs a '.' or an exponent), integer with a
# float suffix (7F, 7D), integer (decimal, or octal when it starts with 0) with an optional long suffix.
_NUMBER: Final = re.compile(
    r"""
      0[xX](?P<hex>[0-9a-fA-F]+)[lL]?
    | (?P<float>(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)[fFdD]?
    | (?P<suffixed_float>[0-9]+)[fFdD]
    | (?P<int>[0-9]+)[lL]?
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "identifier", "keyword", "string", "number", "operator" or "end"
    value: str | int | float  # the name, the upper-case keyword, the decoded string, the number, the symbol
    position: int  # 0-based index into the selector text
    source: str  # the token as written, for error messages


def _is_identifier_start(char: str) -> bool:
    return char.isalpha() or char in "_$"


def _is_identifier_part(char: str) -> bool:
    return char.isalnum() or char in "_$"


def _keyword(word: str) -> str | None:
    """The keyword ``word`` spells in any case, else None. ASCII only: Python upper-cases more than Java."""
    upper = word.upper() if word.isascii() else word
    return upper if upper in _KEYWORDS else None


def _is_valid_identifier(name: str) -> bool:
    return (
        bool(name)
        and _is_identifier_start(name[0])
        and all(_is_identifier_part(char) for char in name[1:])
        and _keyword(name) is None
    )


def _error(text: str, position: int, problem: str) -> InvalidSelectorException:
    """``problem at position N in selector '...'`` (position 1-based; long selectors shown in part)."""
    if len(text) <= 200:
        where = f"in selector {text!r}"
    else:
        start = max(0, position - 40)
        where = f"near {text[start : position + 40]!r} in a selector of {len(text)} characters"
    return InvalidSelectorException(f"{problem} at position {position + 1} {where}")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE_CHARS:
            i += 1
        if i == n:
            tokens.append(_Token("end", "", n, ""))
            return tokens
        char = text[i]
        if char == "'":
            token = _read_string(text, i)
        elif char in _DIGITS or (char == "." and i + 1 < n and text[i + 1] in _DIGITS):
            token = _read_number(text, i)
        elif _is_identifier_start(char):
            end = i + 1
            while end < n and _is_identifier_part(text[end]):
                end += 1
            word = text[i:end]
            keyword = _keyword(word)
            token = _Token("keyword", keyword, i, word) if keyword else _Token("identifier", word, i, word)
        else:
            symbol = next((op for op in _OPERATORS if text.startswith(op, i)), None)
            if symbol is None:
                hint = "; string literals use single quotes" if char == '"' else ""
                raise _error(text, i, f"unexpected character {char!r}{hint}")
            token = _Token("operator", symbol, i, symbol)
        tokens.append(token)
        i = token.position + len(token.source)


def _read_string(text: str, start: int) -> _Token:
    parts: list[str] = []
    i = start + 1
    while True:
        quote = text.find("'", i)
        if quote < 0:
            raise _error(text, start, "unterminated string literal")
        parts.append(text[i:quote])
        if text.startswith("''", quote):  # a doubled quote stands for one quote
            parts.append("'")
            i = quote + 2
            continue
        return _Token("string", "".join(parts), start, text[start : quote + 1])


def _read_number(text: str, start: int) -> _Token:
    match = _NUMBER.match(text, start)
    assert match is not None  # the caller saw a digit, or a '.' and a digit
    end = match.end()
    source = text[start:end]
    if end < len(text) and (_is_identifier_part(text[end]) or text[end] == "."):
        bad_end = end
        while bad_end < len(text) and (_is_identifier_part(text[bad_end]) or text[bad_end] == "."):
            bad_end += 1
        raise _error(text, start, f"malformed number {text[start:bad_end]!r}")
    value: int | float
    if match["hex"] is not None:
        value = int(match["hex"], 16)
    elif match["float"] is not None or match["suffixed_float"] is not None:
        value = float(match["float"] or match["suffixed_float"])
        if value == float("inf"):
            raise _error(text, start, f"number {source!r} is out of range")
    else:
        digits = match["int"]
        if len(digits) > 1 and digits.startswith("0"):
            if any(digit in "89" for digit in digits):
                raise _error(text, start, f"malformed octal number {source!r}")
            value = int(digits, 8)
        else:
            value = int(digits)
    return _Token("number", value, start, source)


# --------------------------------------------------------------------------------------------------
# Parser: recursive descent over the precedence levels, lowest first:
#   OR < AND < NOT < comparison (= <> < <= > >= BETWEEN LIKE IN IS) < + - < * / < unary + - < primary
# It also checks what can be checked before seeing a message: operand types, see _static_type.
# --------------------------------------------------------------------------------------------------

_DESCRIPTIONS: Final = {
    "null": "NULL",
    "boolean": "a boolean",
    "string": "a string",
    "number": "a number",
    "any": "an identifier",
}
_CONDITION: Final = frozenset({"boolean", "any", "null"})  # what AND, OR, NOT and the whole selector take
_NUMERIC: Final = frozenset({"number", "any", "null"})  # what arithmetic takes
_ORDERABLE: Final = frozenset({"number", "any"})  # what < <= > >= BETWEEN take
_EQUATABLE: Final = frozenset({"boolean", "number", "string", "any"})  # what = and <> take
_CONSTANT_KEYWORDS: Final[dict[str, bool | None]] = {"TRUE": True, "FALSE": False, "NULL": None}


def _static_type(node: Expression) -> str:
    """What a node yields, as far as we know before seeing a message ("any" for identifiers)."""
    if isinstance(node, Constant):
        value = node.value
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "boolean"
        return "string" if isinstance(value, str) else "number"
    if isinstance(node, Identifier):
        return "any"
    if isinstance(node, Sign | Arithmetic):
        return "number"
    return "boolean"


class _Parser:
    def __init__(self, text: str) -> None:
        self._text = text
        self._tokens = _tokenize(text)
        self._index = 0
        self._depth = 0
        self._after_prefix = -1  # index of the token right after the last NOT, + or - prefix

    def parse(self) -> Expression:
        expression = self._condition()
        token = self._peek()
        if token.kind != "end":
            raise self._unexpected(token, "expected an operator or the end of the selector")
        kind = _static_type(expression)
        if kind not in _CONDITION:
            raise _error(
                self._text, 0, f"a selector must be a condition, but this one is {_DESCRIPTIONS[kind]}"
            )
        return expression

    # --- token helpers ---

    def _peek(self, ahead: int = 0) -> _Token:
        return self._tokens[min(self._index + ahead, len(self._tokens) - 1)]

    def _next(self) -> _Token:
        token = self._tokens[self._index]
        if token.kind != "end":
            self._index += 1
        return token

    def _at(self, kind: str, *values: str, ahead: int = 0) -> bool:
        token = self._peek(ahead)
        return token.kind == kind and token.value in values

    def _expect(self, kind: str, value: str, what: str) -> _Token:
        if not self._at(kind, value):
            raise self._unexpected(self._peek(), f"expected {what}")
        return self._next()

    def _expect_string(self, what: str) -> str:
        token = self._peek()
        if token.kind != "string":
            raise self._unexpected(token, f"expected {what}")
        self._next()
        assert isinstance(token.value, str)
        return token.value

    def _unexpected(self, token: _Token, expected: str) -> InvalidSelectorException:
        if token.kind == "end":
            return _error(self._text, token.position, f"unexpected end of selector ({expected})")
        what = f"string {token.source}" if token.kind == "string" else repr(token.source)
        return _error(self._text, token.position, f"unexpected {what} ({expected})")

    def _enter(self, token: _Token) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise _error(self._text, token.position, f"selector nests deeper than {MAX_NESTING} levels")

    def _require(self, node: Expression, allowed: frozenset[str], operator: _Token, rule: str) -> None:
        kind = _static_type(node)
        if kind not in allowed:
            raise _error(
                self._text,
                operator.position,
                f"{_DESCRIPTIONS[kind]} cannot be an operand of {operator.source!r}: {rule}",
            )

    # --- the grammar ---
    # Each '(' costs five Python frames (_condition, _negation, _sum, _product, _operand): AND/OR and
    # NOT/sign prefixes are loops, not one method per level, so MAX_NESTING stays far from the
    # interpreter's recursion limit.

    def _condition(self) -> Expression:
        """``x OR y OR ...``, where x and y are ``p AND q AND ...`` of negations."""
        disjuncts: list[Expression] = []
        or_tokens: list[_Token] = []
        while True:
            conjuncts = [self._negation()]
            and_tokens: list[_Token] = []
            while self._at("keyword", "AND"):
                and_tokens.append(self._next())
                conjuncts.append(self._negation())
            disjuncts.append(self._joined(And, conjuncts, and_tokens))
            if not self._at("keyword", "OR"):
                return self._joined(Or, disjuncts, or_tokens)
            or_tokens.append(self._next())

    def _joined(
        self, kind: type[And] | type[Or], operands: list[Expression], operators: list[_Token]
    ) -> Expression:
        """``operands`` joined by AND (or OR) ``operators``, each operand checked to be a condition."""
        if not operators:
            return operands[0]
        for index, operand in enumerate(operands):
            operator = operators[max(index - 1, 0)]
            self._require(operand, _CONDITION, operator, f"{operator.value} needs conditions")
        return kind(tuple(operands))

    def _negation(self) -> Expression:
        """``[NOT]... comparison``, where a comparison is a sum, maybe compared with something."""
        nots: list[_Token] = []
        while self._at("keyword", "NOT"):
            nots.append(self._next())
            self._enter(nots[-1])
            self._after_prefix = self._index
        left = self._sum()
        token = self._peek()
        negated = self._at("keyword", "NOT") and self._at("keyword", "BETWEEN", "LIKE", "IN", ahead=1)
        if negated:
            self._next()
            token = self._peek()
        node: Expression
        if token.kind == "operator" and token.value in _COMPARISON_OPERATORS and not negated:
            self._next()
            node = self._checked_comparison(token, left, self._sum())
        elif self._at("keyword", "BETWEEN"):
            self._next()
            low = self._sum()
            self._expect("keyword", "AND", "AND between the BETWEEN bounds")
            high = self._sum()
            for operand in (left, low, high):
                self._require(operand, _ORDERABLE, token, "only numbers can be ordered")
            node = Between(left, low, high, negated)
        else:
            node = self._predicate(left, negated)
        if node is not left:
            self._refuse_chained_comparison()
        for operator in reversed(nots):
            self._require(node, _CONDITION, operator, "NOT needs a condition")
            node = Not(node)
            self._depth -= 1
        return node

    def _checked_comparison(self, operator: _Token, left: Expression, right: Expression) -> Comparison:
        symbol = str(operator.value)
        if symbol in ("=", "<>"):
            for operand in (left, right):
                self._require(operand, _EQUATABLE, operator, "use IS NULL or IS NOT NULL")
            left_kind, right_kind = _static_type(left), _static_type(right)
            if "any" not in (left_kind, right_kind) and left_kind != right_kind:
                raise _error(
                    self._text,
                    operator.position,
                    f"{_DESCRIPTIONS[left_kind]} cannot be compared with {_DESCRIPTIONS[right_kind]}",
                )
        else:
            for operand in (left, right):
                self._require(operand, _ORDERABLE, operator, "only numbers can be ordered")
        return Comparison(symbol, left, right)

    def _predicate(self, left: Expression, negated: bool) -> Expression:
        """``left [NOT] LIKE ...``, ``left [NOT] IN (...)``, ``left IS [NOT] NULL``, or just ``left``."""
        token = self._peek()
        if self._at("keyword", "IS"):
            self._next()
            is_not = self._at("keyword", "NOT")
            if is_not:
                self._next()
            self._expect("keyword", "NULL", "NULL after IS" + (" NOT" if is_not else ""))
            return IsNull(left, is_not)
        if not self._at("keyword", "LIKE", "IN"):
            return left
        self._next()
        if not isinstance(left, Identifier):
            raise _error(self._text, token.position, f"{token.value} needs an identifier on its left")
        if token.value == "IN":
            self._expect("operator", "(", "'(' after IN")
            values = [self._expect_string("a string literal in the IN list")]
            while self._at("operator", ","):
                self._next()
                values.append(self._expect_string("a string literal in the IN list"))
            self._expect("operator", ")", "',' or ')' in the IN list")
            return In(left, tuple(values), negated)
        pattern = self._expect_string("a pattern string after LIKE")
        escape = None
        if self._at("keyword", "ESCAPE"):
            escape_token = self._next()
            escape = self._expect_string("a one-character string after ESCAPE")
            if len(escape) != 1:
                raise _error(
                    self._text,
                    escape_token.position,
                    f"ESCAPE needs exactly one character, not {len(escape)} ({quote_string(escape)})",
                )
        return Like(left, pattern, escape, negated)

    def _refuse_chained_comparison(self) -> None:
        token = self._peek()
        if (
            (token.kind == "operator" and token.value in _COMPARISON_OPERATORS)
            or self._at("keyword", "BETWEEN", "LIKE", "IN", "IS")
            or (self._at("keyword", "NOT") and self._at("keyword", "BETWEEN", "LIKE", "IN", ahead=1))
        ):
            raise self._unexpected(token, "comparisons do not chain; add parentheses")

    def _sum(self) -> Expression:
        """``a + b - c ...`` of products."""
        operands = [self._product()]
        operators: list[_Token] = []
        while self._at("operator", "+", "-"):
            operators.append(self._next())
            operands.append(self._product())
        return self._arithmetic(operands, operators)

    def _product(self) -> Expression:
        """``a * b / c ...`` of operands."""
        operands = [self._operand()]
        operators: list[_Token] = []
        while self._at("operator", "*", "/"):
            operators.append(self._next())
            operands.append(self._operand())
        return self._arithmetic(operands, operators)

    def _arithmetic(self, operands: list[Expression], operators: list[_Token]) -> Expression:
        if not operators:
            return operands[0]
        for index, operand in enumerate(operands):
            self._require(operand, _NUMERIC, operators[max(index - 1, 0)], "arithmetic needs numbers")
        return Arithmetic(tuple(operands), tuple(str(operator.value) for operator in operators))

    def _operand(self) -> Expression:
        """``[+|-]...`` then a literal, an identifier or a parenthesised condition."""
        signs: list[_Token] = []
        while self._at("operator", "+", "-"):
            signs.append(self._next())
            self._enter(signs[-1])
            self._after_prefix = self._index
        token = self._peek()
        node: Expression
        if token.kind == "operator" and token.value == "(":
            # "NOT (...)" and "-(...)" are one nesting level, not two
            own_level = self._index != self._after_prefix
            self._next()
            if own_level:
                self._enter(token)
            node = self._condition()
            self._expect("operator", ")", "')'")
            if own_level:
                self._depth -= 1
        elif token.kind in ("string", "number"):
            self._next()
            node = Constant(token.value)
        elif token.kind == "identifier":
            self._next()
            node = Identifier(str(token.value))
        elif token.kind == "keyword" and token.value in _CONSTANT_KEYWORDS:
            self._next()
            node = Constant(_CONSTANT_KEYWORDS[str(token.value)])
        else:
            following = self._peek(1)
            used_as_value = token.kind == "keyword" and (  # "in = 1", not a dangling "a = 1 AND AND b"
                token.value not in ("AND", "OR", "NOT") or following.value in _COMPARISON_OPERATORS
            )
            hint = "; keywords cannot be identifiers" if used_as_value else ""
            raise self._unexpected(token, f"expected an operand{hint}")
        for sign in reversed(signs):
            self._require(node, _NUMERIC, sign, "arithmetic needs numbers")
            node = Sign(str(sign.value), node)
            self._depth -= 1
        return node


# --------------------------------------------------------------------------------------------------
# Evaluation: the tree is compiled once into nested closures, each taking the lookup and returning a
# value: None (NULL / UNKNOWN), bool, int, float or str.
# --------------------------------------------------------------------------------------------------

_Evaluator = Callable[[Lookup], object]


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: object) -> str | None:
    """The JMS type family of a non-None value: 'boolean', 'number', 'string', or None (not a JMS type)."""
    if isinstance(value, bool):
        return "boolean"
    if _is_number(value):
        return "number"
    return "string" if isinstance(value, str) else None


def _truth(value: object) -> bool | None:
    """A value used as a condition: TRUE/FALSE for booleans, UNKNOWN for NULL, FALSE for anything else."""
    if value is None:
        return None
    return value is True


def _equal(left: object, right: object) -> bool | None:
    if left is None or right is None:
        return None
    kind = _kind(left)
    return kind is not None and kind == _kind(right) and left == right


def _not_equal(left: object, right: object) -> bool | None:
    if left is None or right is None:
        return None
    kind = _kind(left)
    return kind is not None and kind == _kind(right) and left != right


def _ordering(test: Callable[[int | float, int | float], bool]) -> Callable[[object, object], bool | None]:
    def compare(left: object, right: object) -> bool | None:
        if left is None or right is None:
            return None
        return _is_number(left) and _is_number(right) and test(left, right)

    return compare


_less = _ordering(lambda a, b: a < b)
_less_equal = _ordering(lambda a, b: a <= b)
_greater = _ordering(lambda a, b: a > b)
_greater_equal = _ordering(lambda a, b: a >= b)
_COMPARE: Final = {
    "=": _equal,
    "<>": _not_equal,
    "<": _less,
    "<=": _less_equal,
    ">": _greater,
    ">=": _greater_equal,
}


def _arithmetic_operator(
    compute: Callable[[int | float, int | float], int | float | None],
) -> Callable[[object, object], int | float | None]:
    def apply(left: object, right: object) -> int | float | None:
        if not (_is_number(left) and _is_number(right)):
            return None
        try:
            return compute(left, right)
        except ArithmeticError:  # OverflowError: a huge int meeting a float
            return None

    return apply


def _divide(left: int | float, right: int | float) -> int | float | None:
    if right == 0:
        return None
    if isinstance(left, int) and isinstance(right, int):  # Java integer division truncates toward zero
        quotient = abs(left) // abs(right)
        return quotient if (left < 0) == (right < 0) else -quotient
    return left / right


_ARITHMETIC: Final = {
    "+": _arithmetic_operator(lambda a, b: a + b),
    "-": _arithmetic_operator(lambda a, b: a - b),
    "*": _arithmetic_operator(lambda a, b: a * b),
    "/": _arithmetic_operator(_divide),
}


def _and(left: bool | None, right: bool | None) -> bool | None:
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def _or(left: bool | None, right: bool | None) -> bool | None:
    if left is True or right is True:
        return True
    return None if left is None or right is None else False


def _negate(value: bool | None) -> bool | None:
    return None if value is None else not value


class _LikePattern:
    """A compiled LIKE pattern. '%' splits it into segments; '_' in a segment matches any one character.

    The first segment must match at the start, the last at the end, the middle ones at their leftmost
    place in between. That is linear-ish whatever the pattern, where one regex with '.*' per '%' can
    backtrack for a very long time on a long value.
    """

    __slots__ = ("_first", "_last", "_last_length", "_middle", "_whole")

    def __init__(self, pattern: str, escape: str | None) -> None:
        segments: list[list[str]] = [[]]  # regex pieces, each matching exactly one character
        i = 0
        while i < len(pattern):
            char = pattern[i]
            if char == escape and i + 1 < len(pattern) and pattern[i + 1] in ("%", "_", escape):
                segments[-1].append(re.escape(pattern[i + 1]))
                i += 2
                continue
            if char == "%":
                segments.append([])
            elif char == "_":
                segments[-1].append(".")
            else:
                segments[-1].append(re.escape(char))
            i += 1
        compiled = [re.compile("".join(pieces), re.DOTALL) for pieces in segments]
        self._whole = compiled[0] if len(compiled) == 1 else None
        self._first = compiled[0]
        self._middle = tuple(compiled[1:-1])
        self._last = compiled[-1]
        self._last_length = len(segments[-1])

    def matches(self, value: str) -> bool:
        if self._whole is not None:
            return self._whole.fullmatch(value) is not None
        found = self._first.match(value)
        if found is None:
            return False
        position = found.end()
        for segment in self._middle:
            found = segment.search(value, position)
            if found is None:
                return False
            position = found.end()
        start = len(value) - self._last_length
        return start >= position and self._last.fullmatch(value, start) is not None


def _compile(node: Expression) -> _Evaluator:
    match node:
        case Constant(value):
            return lambda lookup: value
        case Identifier(name):
            return lambda lookup: lookup(name)
        case Sign(operator, operand):
            return _sign(operator, _compile(operand))
        case Arithmetic(operands, operators):
            first = _compile(operands[0])
            rest = tuple(zip([_ARITHMETIC[op] for op in operators], map(_compile, operands[1:]), strict=True))

            def arithmetic(lookup: Lookup) -> object:
                result = first(lookup)
                for apply, evaluate in rest:
                    result = apply(result, evaluate(lookup))
                return result

            return arithmetic
        case Comparison(operator, left, right):
            compare, evaluate_left, evaluate_right = _COMPARE[operator], _compile(left), _compile(right)
            return lambda lookup: compare(evaluate_left(lookup), evaluate_right(lookup))
        case Not(operand):
            evaluate = _compile(operand)
            return lambda lookup: _negate(_truth(evaluate(lookup)))
        case And(operands):
            return _all_of(tuple(map(_compile, operands)))
        case Or(operands):
            return _any_of(tuple(map(_compile, operands)))
        case Between(operand, low, high, negated):
            return _between(_compile(operand), _compile(low), _compile(high), negated)
        case Like(Identifier(name), pattern, escape, negated):
            return _like(name, _LikePattern(pattern, escape), negated)
        case In(Identifier(name), values, negated):
            return _in(name, frozenset(values), negated)
        case IsNull(operand, negated):
            evaluate = _compile(operand)
            return lambda lookup: (evaluate(lookup) is None) != negated
        case _:
            assert_never(node)


def _all_of(evaluators: tuple[_Evaluator, ...]) -> _Evaluator:
    def evaluate(lookup: Lookup) -> bool | None:
        result: bool | None = True
        for evaluator in evaluators:
            value = _truth(evaluator(lookup))
            if value is False:
                return False
            if value is None:
                result = None
        return result

    return evaluate


def _any_of(evaluators: tuple[_Evaluator, ...]) -> _Evaluator:
    def evaluate(lookup: Lookup) -> bool | None:
        result: bool | None = False
        for evaluator in evaluators:
            value = _truth(evaluator(lookup))
            if value is True:
                return True
            if value is None:
                result = None
        return result

    return evaluate


def _sign(operator: str, operand: _Evaluator) -> _Evaluator:
    def evaluate(lookup: Lookup) -> int | float | None:
        value = operand(lookup)
        if not _is_number(value):
            return None
        return -value if operator == "-" else value

    return evaluate


def _between(operand: _Evaluator, low: _Evaluator, high: _Evaluator, negated: bool) -> _Evaluator:
    def between(lookup: Lookup) -> bool | None:
        value = operand(lookup)
        return _and(_greater_equal(value, low(lookup)), _less_equal(value, high(lookup)))

    def not_between(lookup: Lookup) -> bool | None:  # JMS 1.1: "age NOT BETWEEN 15 AND 19" is
        value = operand(lookup)  # "age < 15 OR age > 19"
        return _or(_less(value, low(lookup)), _greater(value, high(lookup)))

    return not_between if negated else between


def _like(name: str, pattern: _LikePattern, negated: bool) -> _Evaluator:
    def evaluate(lookup: Lookup) -> bool | None:
        value = lookup(name)
        if value is None:
            return None
        if not isinstance(value, str):
            return negated
        return pattern.matches(value) != negated

    return evaluate


def _in(name: str, values: frozenset[str], negated: bool) -> _Evaluator:
    def evaluate(lookup: Lookup) -> bool | None:
        value = lookup(name)
        if not isinstance(value, str):
            return None
        return (value in values) != negated

    return evaluate


def _nodes(root: Expression) -> Iterator[Expression]:
    """Every node of the tree (iteratively: a deep selector must not exhaust the call stack)."""
    pending: list[Expression] = [root]
    while pending:
        node = pending.pop()
        yield node
        match node:
            case Sign(_, operand) | Not(operand) | IsNull(operand, _) | Like(operand) | In(operand):
                pending.append(operand)
            case Arithmetic(operands) | And(operands) | Or(operands):
                pending.extend(operands)
            case Comparison(_, left, right):
                pending += (left, right)
            case Between(operand, low, high):
                pending += (operand, low, high)


def _identifiers(root: Expression) -> frozenset[str]:
    return frozenset(node.name for node in _nodes(root) if isinstance(node, Identifier))


def _computes(root: Expression) -> bool:
    """Arithmetic on a value that is not a literal: ``price * qty``, ``-price``."""
    return any(
        isinstance(node, Arithmetic) or (isinstance(node, Sign) and not isinstance(node.operand, Constant))
        for node in _nodes(root)
    )


def _is_property(node: Expression) -> bool:
    """A message property (JMS header fields have types every broker knows; JMSX properties do not)."""
    return isinstance(node, Identifier) and (not node.name.startswith("JMS") or node.name.startswith("JMSX"))


def _compares_typed(root: Expression) -> bool:
    for node in _nodes(root):
        match node:
            case Between(operand) if _is_property(operand):
                return True
            case Comparison(operator, left, right) if _is_property(left) or _is_property(right):
                if operator not in ("=", "<>"):
                    return True  # ordering is numeric in JMS
                other = right if _is_property(left) else left
                if not isinstance(other, Identifier) and not (
                    isinstance(other, Constant) and isinstance(other.value, str | None)
                ):
                    return True
    return False


# --------------------------------------------------------------------------------------------------
# Rendering: parentheses only where the tree needs them, plus around any NOT or sign operand that is not
# an atom. ActiveMQ and Artemis bind NOT as tightly as unary minus ("NOT a = 1" is "(NOT a) = 1" there),
# so "NOT (a = 1)" reads the same on every broker. Each parenthesis we write was needed in the text the
# tree came from (or shares a level with NOT or a sign), so a rendered selector never nests deeper than
# the selector it came from.
# --------------------------------------------------------------------------------------------------


def _level(node: Expression) -> int:
    """How tightly a node binds: OR 1, AND 2, NOT 3, comparisons 4, + - 5, * / 6, signs 7, atoms 8."""
    match node:
        case Or():
            return 1
        case And():
            return 2
        case Not():
            return 3
        case Arithmetic(_, operators):
            return 5 if operators[0] in ("+", "-") else 6
        case Sign():
            return 7
        case Constant() | Identifier():
            return 8
    return 4


def _render(node: Expression, rename: Callable[[str], str], lowest_bare_level: int = 0) -> str:
    """``node`` as selector text, in parentheses if it binds less tightly than ``lowest_bare_level``.

    It calls itself directly and uses loops, not comprehensions: each tree level costs one stack frame.
    """
    parts: list[str] = []
    match node:
        case Constant(value):
            if value is None:
                return "NULL"
            if isinstance(value, bool):
                return "TRUE" if value else "FALSE"
            if isinstance(value, str):
                return quote_string(value)
            return repr(value) if isinstance(value, float) else str(value)
        case Identifier(name):
            renamed = rename(name)
            if not isinstance(renamed, str) or not _is_valid_identifier(renamed):
                raise ValueError(
                    f"rename turned {name!r} into {renamed!r}, which is not a selector identifier"
                )
            return renamed
        case Sign(operator, operand):
            if isinstance(operand, Sign):  # "- -a": "--" starts a comment in ActiveMQ's grammar
                text = f"{operator} {_render(operand, rename)}"
            else:
                text = operator + _render(operand, rename, 8)
        case Arithmetic(operands, operators):
            lowest_bare = _level(node) + 1
            parts.append(_render(operands[0], rename, lowest_bare))
            for operator, operand in zip(operators, operands[1:], strict=True):
                parts += (operator, _render(operand, rename, lowest_bare))
            text = " ".join(parts)
        case Comparison(operator, left, right):
            text = f"{_render(left, rename, 5)} {operator} {_render(right, rename, 5)}"
        case Not(operand):
            text = "NOT " + _render(operand, rename, 3 if isinstance(operand, Not) else 8)
        case And(operands):
            for operand in operands:
                parts.append(_render(operand, rename, 3))
            text = " AND ".join(parts)
        case Or(operands):
            for operand in operands:
                parts.append(_render(operand, rename, 2))
            text = " OR ".join(parts)
        case Between(operand, low, high, negated):
            keyword = "NOT BETWEEN" if negated else "BETWEEN"
            bounds = f"{_render(low, rename, 5)} AND {_render(high, rename, 5)}"
            text = f"{_render(operand, rename, 5)} {keyword} {bounds}"
        case Like(operand, pattern, escape, negated):
            keyword = "NOT LIKE" if negated else "LIKE"
            suffix = "" if escape is None else f" ESCAPE {quote_string(escape)}"
            text = f"{_render(operand, rename)} {keyword} {quote_string(pattern)}{suffix}"
        case In(operand, values, negated):
            keyword = "NOT IN" if negated else "IN"
            text = f"{_render(operand, rename)} {keyword} ({', '.join(map(quote_string, values))})"
        case IsNull(operand, negated):
            text = f"{_render(operand, rename, 5)} IS {'NOT NULL' if negated else 'NULL'}"
        case _:
            assert_never(node)
    return text if _level(node) >= lowest_bare_level else f"({text})"
