"""Tests of the JMS message selector engine (jmslike.selector): grammar, semantics, errors, bounds,
rendering and quoting."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jmslike.exceptions import InvalidSelectorException, JMSException
from jmslike.selector import MAX_NESTING, MAX_SELECTOR_BYTES, Selector, parse, quote_string


def lookup(**values: object) -> Callable[[str], object | None]:
    return values.get


def matches(selector: str, **values: object) -> bool:
    return parse(selector).matches(values.get)


def truth(selector: str, **values: object) -> bool | None:
    """The three-valued result of a condition: True, False, or None for UNKNOWN.

    Only TRUE matches, so a condition is TRUE if it matches, FALSE if its negation matches, else UNKNOWN.
    """
    if parse(selector).matches(values.get):
        return True
    if parse(f"NOT ({selector})").matches(values.get):
        return False
    return None


def with_extra_frames(frames: int, call: Callable[[], Any]) -> Any:
    """Run ``call`` with ``frames`` more Python frames on the stack, like a caller deep in a framework."""
    return call() if frames == 0 else with_extra_frames(frames - 1, call)


# --- the public object ---


def test_parse_returns_a_selector_that_keeps_its_text_and_identifiers() -> None:
    text = "JMSPriority > 4 AND color = 'red' OR NOT (size BETWEEN lo AND hi)"
    selector = parse(text)
    assert isinstance(selector, Selector)
    assert selector.text == text
    assert selector.identifiers == frozenset({"JMSPriority", "color", "size", "lo", "hi"})
    assert isinstance(selector.identifiers, frozenset)
    assert repr(selector) == f"Selector({text!r})"


def test_identifiers_cover_every_construct() -> None:
    text = (
        "-a + b * c > d AND e LIKE 'x' AND f IN ('y') AND g IS NULL AND NOT h "
        "AND i NOT BETWEEN j AND k AND (l = TRUE) = m"
    )
    assert parse(text).identifiers == frozenset("abcdefghijklm")


def test_identifiers_exclude_literals_and_keywords() -> None:
    assert parse("TRUE AND 'x' = 'x' AND 1 = 1.0 AND NULL IS NULL").identifiers == frozenset()


def test_invalid_selector_exception_is_a_jms_exception() -> None:
    with pytest.raises(JMSException):
        parse("a =")


# --- literals ---


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("57", 57),
        ("-957", -957),
        ("+62", 62),
        ("0", 0),
        ("57L", 57),
        ("57l", 57),
        ("0x1F", 31),
        ("0X1f", 31),
        ("0xffL", 255),
        ("017", 15),
        ("00", 0),
        ("0L", 0),
        ("7E3", 7000.0),
        ("7e3", 7000),
        ("7E+3", 7000.0),
        ("7E-3", 0.007),
        ("-57.9E2", -5790.0),
        ("7.", 7.0),
        (".5", 0.5),
        ("7.0", 7.0),
        ("7.e1", 70.0),
        ("1.5F", 1.5),
        ("1.5d", 1.5),
        ("2D", 2.0),
        ("2f", 2.0),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("'it''s'", "it's"),
        ("''", ""),
        ("''''", "'"),
        ("'a\nb'", "a\nb"),
        ("'ünïcødé ☃'", "ünïcødé ☃"),
        ("'-- not a comment'", "-- not a comment"),
        ("TRUE", True),
        ("true", True),
        ("True", True),
        ("FALSE", False),
        ("fAlSe", False),
    ],
)
def test_literal_forms(literal: str, value: object) -> None:
    assert matches(f"x = {literal}", x=value)
    assert matches(f"{literal} = x", x=value)


@pytest.mark.parametrize(
    ("literal", "other"), [("57", 58), ("0x1F", 30), ("017", 17), ("7E3", 7001), ("'a'", "A")]
)
def test_literal_does_not_equal_other_values(literal: str, other: object) -> None:
    assert not matches(f"x = {literal}", x=other)


def test_integer_and_float_literals_compare_numerically() -> None:
    assert matches("7E3 = 7000 AND 7. = 7 AND .5 < 1 AND 0x10 = 16.0")


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("x = 0x1F", "x = 31"),
        ("x = 017", "x = 15"),
        ("x = 57L", "x = 57"),
        ("x = 7E3", "x = 7000.0"),
        ("x = 1.5F", "x = 1.5"),
        ("x = .5", "x = 0.5"),
        ("x = 'it''s'", "x = 'it''s'"),
        ("x = true", "x = TRUE"),
        ("x = -957", "x = -957"),
    ],
)
def test_literals_render_normalised(text: str, rendered: str) -> None:
    assert parse(text).render() == rendered


@pytest.mark.parametrize("value", [0.1, 1e-7, 1e300, 5e-324, 123456.789, 2.0**60, 1 / 3])
def test_float_literals_round_trip_exactly(value: float) -> None:
    selector = parse(f"x = {value!r}")
    assert selector.matches(lookup(x=value))
    assert parse(selector.render()).matches(lookup(x=value))


# --- precedence and grouping ---


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        # a OR b AND c is a OR (b AND c)
        ("a OR b AND c", {"a": True, "b": False, "c": False}, True),
        ("(a OR b) AND c", {"a": True, "b": False, "c": False}, False),
        # a AND b OR c is (a AND b) OR c
        ("a AND b OR c", {"a": False, "b": False, "c": True}, True),
        ("a AND (b OR c)", {"a": False, "b": False, "c": True}, False),
        # NOT binds tighter than AND and OR
        ("NOT a AND b", {"a": True, "b": False}, False),
        ("NOT (a AND b)", {"a": True, "b": False}, True),
        ("NOT a OR b", {"a": True, "b": True}, True),
        ("NOT (a OR b)", {"a": True, "b": True}, False),
        # NOT binds looser than comparison: NOT a = 1 is NOT (a = 1), not (NOT a) = 1
        ("NOT a = 1", {"a": 2}, True),
        ("NOT a = 1", {"a": 1}, False),
        ("NOT a BETWEEN 1 AND 2", {"a": 5}, True),
        ("NOT a LIKE 'x%'", {"a": "y"}, True),
        ("NOT a IN ('x')", {"a": "y"}, True),
        ("NOT a IS NULL", {"a": 1}, True),
        ("NOT NOT a", {"a": True}, True),
        ("NOT NOT NOT a", {"a": True}, False),
        # arithmetic
        ("x = 1 + 2 * 3", {"x": 7}, True),
        ("x = (1 + 2) * 3", {"x": 9}, True),
        ("x = 2 * 3 + 1", {"x": 7}, True),
        ("x = 10 - 3 - 2", {"x": 5}, True),
        ("x = 10 - (3 - 2)", {"x": 9}, True),
        ("x = 100 / 10 / 5", {"x": 2}, True),
        ("x = 100 / (10 / 5)", {"x": 50}, True),
        ("x = 10 - 4 + 3", {"x": 9}, True),
        ("x = 12 / 2 * 3", {"x": 18}, True),
        ("x = -2 * 3", {"x": -6}, True),
        ("x = - -2", {"x": 2}, True),
        ("x = -(2 + 3)", {"x": -5}, True),
        ("x = 2 - -3", {"x": 5}, True),
        ("x = +-+2", {"x": -2}, True),
        ("-x = 2", {"x": -2}, True),
        ("x + 1 > y * 2", {"x": 4, "y": 2}, True),
        # BETWEEN's AND is not the logical AND
        ("a BETWEEN 1 AND 2 AND b", {"a": 1, "b": False}, False),
        ("a BETWEEN 1 AND 2 AND b", {"a": 1, "b": True}, True),
        ("a BETWEEN 1 + 1 AND 2 * 3", {"a": 6}, True),
        ("a BETWEEN 1 + 1 AND 2 * 3", {"a": 1}, False),
        ("a BETWEEN 1 AND 2 OR b BETWEEN 3 AND 4", {"a": 0, "b": 3}, True),
        # comparisons bind tighter than AND/OR
        ("a = 1 OR b = 2 AND c = 3", {"a": 1, "b": 0, "c": 0}, True),
        ("(a = 1 OR b = 2) AND c = 3", {"a": 1, "b": 0, "c": 0}, False),
        ("a IS NULL OR b IS NOT NULL", {"b": 1}, True),
        ("(a = 1) = (b = 2)", {"a": 0, "b": 0}, True),
        ("(a = 1) <> (b = 2)", {"a": 1, "b": 0}, True),
        ("((((a = 1))))", {"a": 1}, True),
    ],
)
def test_precedence(text: str, values: dict[str, object], expected: bool) -> None:
    assert parse(text).matches(values.get) is expected


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("a OR b AND c", "a OR b AND c"),
        ("a OR (b AND c)", "a OR b AND c"),
        ("(a OR b) AND c", "(a OR b) AND c"),
        ("a AND b OR c", "a AND b OR c"),
        ("NOT a = 1", "NOT (a = 1)"),
        ("NOT (a = 1)", "NOT (a = 1)"),
        ("NOT a", "NOT a"),
        ("NOT NOT a", "NOT NOT a"),
        ("NOT (a AND b)", "NOT (a AND b)"),
        ("x = 1 + 2 * 3", "x = 1 + 2 * 3"),
        ("x = (1 + 2) * 3", "x = (1 + 2) * 3"),
        ("x = 10 - (3 - 2)", "x = 10 - (3 - 2)"),
        ("x = (10 - 3) - 2", "x = (10 - 3) - 2"),
        ("x = - -2", "x = - -2"),
        ("x=--2", "x = - -2"),
        ("x = -(2 + 3)", "x = -(2 + 3)"),
        ("(a = 1) = TRUE", "(a = 1) = TRUE"),
        ("a BETWEEN 1+1 AND 2*3", "a BETWEEN 1 + 1 AND 2 * 3"),
        ("a not between 1 and 2", "a NOT BETWEEN 1 AND 2"),
        ("a like 'x%' escape '!'", "a LIKE 'x%' ESCAPE '!'"),
        ("a not like 'x'", "a NOT LIKE 'x'"),
        ("a in ('x','y''z')", "a IN ('x', 'y''z')"),
        ("a not in ('x')", "a NOT IN ('x')"),
        ("a is null", "a IS NULL"),
        ("a is not null", "a IS NOT NULL"),
        ("(a + 1) IS NULL", "a + 1 IS NULL"),
        ("(a = 1) IS NULL", "(a = 1) IS NULL"),
        ("((((a))))", "a"),
        ("  a\t=\n1\r\f", "a = 1"),
    ],
)
def test_render_uses_parentheses_where_needed(text: str, rendered: str) -> None:
    assert parse(text).render() == rendered
    assert parse(rendered).render() == rendered


# --- comparison operators ---


@pytest.mark.parametrize(
    ("operator", "left", "right", "expected"),
    [
        ("=", 1, 1, True),
        ("=", 1, 2, False),
        ("=", 1, 1.0, True),
        ("=", 0.5, 0.5, True),
        ("<>", 1, 2, True),
        ("<>", 1, 1, False),
        ("<>", 2.0, 2, False),
        ("<", 1, 2, True),
        ("<", 2, 2, False),
        ("<", 1.5, 2, True),
        ("<=", 2, 2, True),
        ("<=", 3, 2, False),
        (">", 3, 2, True),
        (">", 2, 2, False),
        (">", 2, 1.999, True),
        (">=", 2, 2, True),
        (">=", 1, 2, False),
        (">=", -1, -1.0, True),
        ("=", "a", "a", True),
        ("=", "a", "A", False),
        ("=", "", "", True),
        ("<>", "a", "b", True),
        ("<>", "a", "a", False),
        ("=", True, True, True),
        ("=", True, False, False),
        ("<>", True, False, True),
        ("<>", False, False, False),
    ],
)
def test_comparison_operators(operator: str, left: object, right: object, expected: bool) -> None:
    assert truth(f"x {operator} y", x=left, y=right) is expected


@pytest.mark.parametrize("operator", ["<", "<=", ">", ">="])
@pytest.mark.parametrize(("left", "right"), [("a", "b"), ("b", "a"), (True, False), (False, True)])
def test_strings_and_booleans_cannot_be_ordered(operator: str, left: object, right: object) -> None:
    assert truth(f"x {operator} y", x=left, y=right) is False


def test_big_integers_compare_exactly() -> None:
    assert matches("x > 9223372036854775807", x=2**63)
    assert matches("x = 123456789012345678901234567890", x=123456789012345678901234567890)


# --- type mismatches: FALSE, never an exception ---


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("x = 'a'", {"x": 1}, False),
        ("x = 1", {"x": "1"}, False),
        ("x <> 1", {"x": "1"}, False),  # JMS 1.1: comparing unlike types is false, for <> too
        ("x <> 'a'", {"x": 1}, False),
        ("x = 1", {"x": True}, False),  # Python's True == 1 must not leak in
        ("x = 0", {"x": False}, False),
        ("x = TRUE", {"x": 1}, False),
        ("x = FALSE", {"x": 0}, False),
        ("x = y", {"x": True, "y": 1}, False),
        ("x = y", {"x": "1", "y": 1}, False),
        ("x > 1", {"x": "5"}, False),
        ("x < 1", {"x": True}, False),
        ("x >= y", {"x": 1, "y": "0"}, False),
        ("x BETWEEN 1 AND 10", {"x": "5"}, False),
        ("x NOT BETWEEN 1 AND 10", {"x": "5"}, False),  # x < 1 OR x > 10: both false
        ("x BETWEEN 1 AND 10", {"x": True}, False),
        ("x LIKE '5'", {"x": 5}, False),
        ("x NOT LIKE '5'", {"x": 5}, True),
        ("x = 1", {"x": b"1"}, False),
        ("x = 'a'", {"x": ["a"]}, False),
        ("x = y", {"x": object(), "y": object()}, False),
        ("x > 1", {"x": [2]}, False),
    ],
)
def test_type_mismatch(text: str, values: dict[str, object], expected: bool) -> None:
    assert truth(text, **values) is expected


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("x + 1 = 2", {"x": "1"}),
        ("x * 2 > 0", {"x": True}),
        ("-x < 0", {"x": "1"}),
        ("+x > 0", {"x": "1"}),
        ("x / 1 = 1", {"x": [1]}),
        ("x IN ('1')", {"x": 1}),
        ("x NOT IN ('1')", {"x": 1}),
    ],
)
def test_operations_on_non_numbers_or_non_strings_are_unknown(text: str, values: dict[str, object]) -> None:
    assert truth(text, **values) is None


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("flag", {"flag": True}, True),
        ("flag", {"flag": False}, False),
        ("flag", {}, None),
        ("flag", {"flag": "true"}, False),  # a non-boolean used as a condition is FALSE (as ActiveMQ)
        ("flag", {"flag": 1}, False),
        ("NOT flag", {"flag": "true"}, True),
        ("flag = TRUE", {"flag": True}, True),
        ("flag = FALSE", {"flag": False}, True),
        ("flag AND x = 1", {"flag": True, "x": 1}, True),
        ("(flag)", {"flag": True}, True),
    ],
)
def test_identifiers_as_conditions(text: str, values: dict[str, object], expected: bool | None) -> None:
    assert truth(text, **values) is expected


# --- arithmetic ---


@pytest.mark.parametrize(
    ("expression", "values", "expected"),
    [
        ("a + b", {"a": 2, "b": 3}, 5),
        ("a - b", {"a": 2, "b": 3}, -1),
        ("a * b", {"a": 2, "b": 3}, 6),
        ("a / b", {"a": 7, "b": 2}, 3),  # integer division truncates, as in Java
        ("a / b", {"a": -7, "b": 2}, -3),
        ("a / b", {"a": 7, "b": -2}, -3),
        ("a / b", {"a": -7, "b": -2}, 3),
        ("a / b", {"a": 7.0, "b": 2}, 3.5),
        ("a / b", {"a": 7, "b": 2.0}, 3.5),
        ("a + b", {"a": 0.5, "b": 1}, 1.5),
        ("-a", {"a": 4}, -4),
        ("+a", {"a": 4}, 4),
        ("a * 2 + b / 2", {"a": 1.5, "b": 3}, 4),
    ],
)
def test_arithmetic(expression: str, values: dict[str, object], expected: float) -> None:
    assert matches(f"{expression} = {expected!r}", **values)
    assert not matches(f"{expression} = {expected + 1!r}", **values)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("a / b = 0", {"a": 1, "b": 0}),
        ("a / b > 0", {"a": 1.0, "b": 0.0}),
        ("a / b < 0", {"a": -1, "b": -0.0}),
        ("a / 0 = 1", {"a": 1}),
        ("1 / 0 = 1", {}),
        ("a * 1.5 > 0", {"a": 10**400}),  # int too large to convert to float
        ("a / 2.0 > 0", {"a": 10**400}),
        ("a + 1 = 1", {}),
        ("a + NULL = 1", {"a": 1}),
        ("-a = 1", {}),
    ],
)
def test_arithmetic_failures_are_unknown(text: str, values: dict[str, object]) -> None:
    assert truth(text, **values) is None


def test_float_overflow_and_nan_do_not_raise() -> None:
    assert matches("a * a > 1", a=1e300)  # inf
    assert truth("a = a", a=float("nan")) is False
    assert truth("a - a = 0", a=float("inf")) is False  # nan


# --- NULL and three-valued logic ---

T, F, U = True, False, None
AND_TABLE = {
    (T, T): T, (T, F): F, (T, U): U,
    (F, T): F, (F, F): F, (F, U): F,
    (U, T): U, (U, F): F, (U, U): U,
}  # fmt: skip
OR_TABLE = {
    (T, T): T, (T, F): T, (T, U): T,
    (F, T): T, (F, F): F, (F, U): U,
    (U, T): T, (U, F): U, (U, U): U,
}  # fmt: skip
NOT_TABLE = {T: F, F: T, U: U}


@pytest.mark.parametrize(("a", "b"), list(AND_TABLE))
def test_and_truth_table(a: bool | None, b: bool | None) -> None:
    assert truth("a AND b", a=a, b=b) is AND_TABLE[a, b]
    # the same with UNKNOWN coming from a comparison with a missing property
    values = {name: 1 for name, value in (("x", a), ("y", b)) if value}
    values |= {name: 0 for name, value in (("x", a), ("y", b)) if value is False}
    assert truth("x = 1 AND y = 1", **values) is AND_TABLE[a, b]


@pytest.mark.parametrize(("a", "b"), list(OR_TABLE))
def test_or_truth_table(a: bool | None, b: bool | None) -> None:
    assert truth("a OR b", a=a, b=b) is OR_TABLE[a, b]
    values = {name: 1 for name, value in (("x", a), ("y", b)) if value}
    values |= {name: 0 for name, value in (("x", a), ("y", b)) if value is False}
    assert truth("x = 1 OR y = 1", **values) is OR_TABLE[a, b]


@pytest.mark.parametrize("a", [T, F, U])
def test_not_truth_table(a: bool | None) -> None:
    assert truth("NOT a", a=a) is NOT_TABLE[a]


@pytest.mark.parametrize(
    ("a", "b", "c"), [(a, b, c) for a in (T, F, U) for b in (T, F, U) for c in (T, F, U)]
)
def test_n_ary_and_or_follow_the_tables(a: bool | None, b: bool | None, c: bool | None) -> None:
    assert truth("a AND b AND c", a=a, b=b, c=c) is AND_TABLE[AND_TABLE[a, b], c]
    assert truth("a OR b OR c", a=a, b=b, c=c) is OR_TABLE[OR_TABLE[a, b], c]
    assert truth("a OR b AND c", a=a, b=b, c=c) is OR_TABLE[a, AND_TABLE[b, c]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x = 1", None),
        ("x <> 1", None),
        ("x > 1", None),
        ("x <= 1", None),
        ("1 = x", None),
        ("x = y", None),
        ("NOT x = 1", None),
        ("x BETWEEN 1 AND 2", None),
        ("x NOT BETWEEN 1 AND 2", None),
        ("y BETWEEN x AND 9", None),
        ("y BETWEEN x AND 2", False),  # UNKNOWN AND FALSE
        ("y NOT BETWEEN 1 AND x", None),
        ("x IN ('a', 'b')", None),
        ("x NOT IN ('a', 'b')", None),
        ("x LIKE 'a%'", None),
        ("x NOT LIKE 'a%'", None),
        ("x + 1 > 0", None),
        ("x IS NULL", True),
        ("x IS NOT NULL", False),
        ("(x + 1) IS NULL", True),
        ("y IS NULL", False),
        ("y IS NOT NULL", True),
        ("NULL IS NULL", True),
        ("1 IS NULL", False),
        ("(x = 1) IS NULL", True),
        ("(y = 5) IS NOT NULL", True),
        ("x = 1 OR y = 5", True),
        ("x = 1 AND y = 5", None),
        ("x = 1 AND y = 6", False),
    ],
)
def test_missing_identifier_is_null(text: str, expected: bool | None) -> None:
    assert truth(text, y=5) is expected


def test_constant_selectors() -> None:
    assert matches("TRUE")
    assert not matches("FALSE")
    assert truth("NULL") is None
    assert truth("NOT NULL") is None
    assert truth("NULL AND FALSE") is False
    assert truth("NULL OR TRUE") is True


# --- BETWEEN ---


@pytest.mark.parametrize(
    ("value", "inside"),
    [(0, False), (1, True), (1.0, True), (5, True), (9.99, True), (10, True), (10.01, False), (-3, False)],
)
def test_between_is_inclusive(value: float, inside: bool) -> None:
    assert truth("x BETWEEN 1 AND 10", x=value) is inside
    assert truth("x NOT BETWEEN 1 AND 10", x=value) is (not inside)


def test_between_with_expressions_and_identifiers() -> None:
    assert matches("x BETWEEN lo AND hi", x=5, lo=1, hi=5)
    assert not matches("x BETWEEN lo AND hi", x=6, lo=1, hi=5)
    assert matches("x * 2 BETWEEN lo - 1 AND hi + 1", x=3, lo=7, hi=8)
    assert not matches("x BETWEEN 3 AND 1", x=2)  # reversed bounds: nothing is between
    assert matches("x NOT BETWEEN 3 AND 1", x=2)
    assert matches("x BETWEEN -2 AND -1", x=-1.5)


def test_not_between_with_one_missing_bound_can_still_be_true() -> None:
    # x < lo OR x > hi: with lo missing, x > hi decides
    assert truth("x NOT BETWEEN lo AND hi", x=10, hi=5) is True
    assert truth("x NOT BETWEEN lo AND hi", x=1, hi=5) is None
    assert truth("x BETWEEN lo AND hi", x=10, hi=5) is False


# --- IN ---


@pytest.mark.parametrize(
    ("value", "member"),
    [
        ("UK", True),
        ("US", True),
        ("France", True),
        ("Peru", False),
        ("uk", False),
        ("", False),
        ("UK ", False),
    ],
)
def test_in(value: str, member: bool) -> None:
    assert truth("Country IN (' UK', 'US', 'France', 'UK')", Country=value) is member
    assert truth("Country NOT IN (' UK', 'US', 'France', 'UK')", Country=value) is (not member)


def test_in_with_one_value_quotes_and_many_values() -> None:
    assert matches("x IN ('it''s')", x="it's")
    assert matches("x IN ('')", x="")
    values = ", ".join(quote_string(f"v{i}") for i in range(500))
    assert matches(f"x IN ({values})", x="v499")
    assert not matches(f"x IN ({values})", x="v500")


# --- LIKE ---


@pytest.mark.parametrize(
    ("pattern", "escape", "value", "expected"),
    [
        # the examples of JMS 1.1 §3.8.1.1
        ("12%3", None, "123", True),
        ("12%3", None, "12993", True),
        ("12%3", None, "1234", False),
        ("l_se", None, "lose", True),
        ("l_se", None, "loose", False),
        ("\\_%", "\\", "_foo", True),
        ("\\_%", "\\", "bar", False),
        # wildcards
        ("%", None, "", True),
        ("%", None, "anything", True),
        ("_", None, "", False),
        ("_", None, "a", True),
        ("_", None, "ab", False),
        ("__", None, "ab", True),
        ("a%", None, "a", True),
        ("%a", None, "bba", True),
        ("%a", None, "ab", False),
        ("%a%", None, "bab", True),
        ("a%b%c", None, "abc", True),
        ("a%b%c", None, "aXbYc", True),
        ("a%b%c", None, "acb", False),
        ("a%b%b", None, "abb", True),
        ("a%b%b", None, "ab", False),
        ("a%%b", None, "ab", True),
        ("%_%", None, "", False),
        ("%_%", None, "x", True),
        ("_%_", None, "x", False),
        ("_%_", None, "xy", True),
        ("%ab", None, "abab", True),
        ("ab%ab", None, "ab", False),
        ("ab%ab", None, "abab", True),
        ("a_%_b", None, "axyb", True),
        ("a_%_b", None, "axb", False),
        ("a%", None, "A", False),  # case-sensitive
        ("a%b", None, "a\nb", True),  # % and _ match newlines
        ("a_b", None, "a\nb", True),
        ("☃_%", None, "☃xy", True),
        # regular-expression metacharacters are literal
        ("a.b%", None, "a.bc", True),
        ("a.b%", None, "axbc", False),
        ("[a]*", None, "[a]*", True),
        ("[a]*", None, "a", False),
        ("^a$", None, "^a$", True),
        ("^a$", None, "a", False),
        ("a+b?", None, "a+b?", True),
        ("a+b?", None, "aab", False),
        ("(x|y)", None, "(x|y)", True),
        ("(x|y)", None, "x", False),
        ("{1}", None, "{1}", True),
        ("\\d", None, "\\d", True),  # a backslash is not an escape without ESCAPE
        ("\\d", None, "5", False),
        ("\\%", None, "\\anything", True),
        # ESCAPE
        ("100\\%", "\\", "100%", True),
        ("100\\%", "\\", "1000", False),
        ("100\\%", "\\", "100", False),
        ("a!%b", "!", "a%b", True),
        ("a!%b", "!", "axb", False),
        ("a!_b", "!", "a_b", True),
        ("a!_b", "!", "axb", False),
        ("a!!b", "!", "a!b", True),
        ("a!!%", "!", "a!xyz", True),
        ("a!b", "!", "a!b", True),  # an escape before an ordinary character stands for itself
        ("a!", "!", "a!", True),  # as does a trailing one
        ("%!%", "!", "50%", True),
        ("%!%", "!", "50", False),
        ("x''y", "'", "x'y", True),  # the quote is the escape and escapes itself
        ("x'y", "'", "x'y", True),
        ("%.%", ".", "a.b", False),  # '.' escapes the second '%'
        ("%.%", ".", "a%", True),
        ("_%", "%", "a", True),  # '%' as the escape: a trailing one is still a wildcard (as ActiveMQ)
        ("_%%", "%", "a%", True),
        ("_%%", "%", "ab", False),
    ],
)
def test_like(pattern: str, escape: str | None, value: str, expected: bool) -> None:
    clause = f"x LIKE {quote_string(pattern)}" + ("" if escape is None else f" ESCAPE {quote_string(escape)}")
    assert truth(clause, x=value) is expected
    assert truth(clause.replace(" LIKE ", " NOT LIKE "), x=value) is (not expected)
    assert parse(parse(clause).render()).matches(lookup(x=value)) is expected


def like_reference(pattern: str, escape: str | None, value: str) -> bool:
    """Straightforward regex translation (slow in the worst case, fine for short strings)."""
    regex, i = "", 0
    while i < len(pattern):
        char = pattern[i]
        if char == escape and i + 1 < len(pattern) and pattern[i + 1] in ("%", "_", escape):
            regex += re.escape(pattern[i + 1])
            i += 2
            continue
        regex += ".*" if char == "%" else "." if char == "_" else re.escape(char)
        i += 1
    return re.fullmatch(regex, value, re.DOTALL) is not None


@given(
    pattern=st.text(alphabet="ab%_!.*", max_size=8),
    escape=st.none() | st.just("!") | st.just("%"),
    value=st.text(alphabet="ab%_!.*\n", max_size=10),
)
def test_like_agrees_with_a_regex_reference(pattern: str, escape: str | None, value: str) -> None:
    clause = f"x LIKE {quote_string(pattern)}" + ("" if escape is None else f" ESCAPE {quote_string(escape)}")
    assert parse(clause).matches(lookup(x=value)) is like_reference(pattern, escape, value)


def test_like_is_fast_on_patterns_that_backtrack_in_a_naive_regex() -> None:
    selector = parse("x LIKE '%a%a%a%a%a%a%a%a%a%a%b'")
    started = time.monotonic()
    assert not selector.matches(lookup(x="a" * 20_000))
    assert selector.matches(lookup(x="a" * 20_000 + "b"))
    assert time.monotonic() - started < 2


def test_like_needs_a_string_value() -> None:
    assert truth("x LIKE '1'", x=1) is False
    assert truth("x LIKE 'TRUE'", x=True) is False
    assert truth("x LIKE '%'") is None


# --- case-insensitive keywords, case-sensitive identifiers ---


@pytest.mark.parametrize(
    "text",
    [
        "a = 1 and b = 2 or c = 3",
        "a = 1 AnD b = 2 oR c = 3",
        "not a = 5",
        "Not a = 5",
        "a between 0 and 2",
        "a BeTwEeN 0 AnD 2",
        "a not between 5 and 6",
        "s like 'x%' escape '!'",
        "s LiKe 'x%' EsCaPe '!'",
        "s not like 'y%'",
        "s in ('xy')",
        "s In ('xy')",
        "s not in ('z')",
        "n is null",
        "n Is Null",
        "a is not null",
        "a iS nOt NuLl",
        "true",
        "TrUe AND NOT false",
        "t = true AND f = FALSE",
    ],
)
def test_keywords_are_case_insensitive(text: str) -> None:
    assert matches(text, a=1, b=2, s="xy", t=True, f=False)


def test_identifiers_are_case_sensitive() -> None:
    selector = parse("Color = 'red'")
    assert selector.matches(lookup(Color="red"))
    assert not selector.matches(lookup(color="red"))
    assert selector.identifiers == frozenset({"Color"})


@pytest.mark.parametrize(
    "name",
    [
        "a",
        "_x",
        "$x",
        "x$_1",
        "A1b2",
        "größe",
        "名前",
        "JMSX_foo",
        "JMS_vendor",
        "ORDER",
        "INdex",
        "island",
        "android",
        "notify",
        "nullable",
        "TRUEish",
        "isNull",
        "escaped",
        "betweenness",
        "likes",
        "ORx",
        "ANDy",
    ],
)
def test_identifier_forms(name: str) -> None:
    selector = parse(f"{name} = 1")
    assert selector.identifiers == frozenset({name})
    assert selector.matches({name: 1}.get)
    assert parse(selector.render()).identifiers == frozenset({name})


# --- headers ---


def test_header_identifiers() -> None:
    headers = {
        "JMSDeliveryMode": "PERSISTENT",
        "JMSPriority": 7,
        "JMSTimestamp": 1_700_000_000_000,
        "JMSMessageID": "ID:host-1:1:1:1",
        "JMSCorrelationID": None,
        "JMSType": "order",
    }
    assert parse("JMSDeliveryMode = 'PERSISTENT'").matches(headers.get)
    assert not parse("JMSDeliveryMode = 'NON_PERSISTENT'").matches(headers.get)
    assert parse("JMSPriority > 4 AND JMSPriority BETWEEN 0 AND 9").matches(headers.get)
    assert parse("JMSTimestamp >= 1700000000000").matches(headers.get)
    assert parse("JMSMessageID LIKE 'ID:%'").matches(headers.get)
    assert parse("JMSCorrelationID IS NULL").matches(headers.get)
    assert not parse("JMSCorrelationID = 'x'").matches(headers.get)
    assert parse("JMSType IN ('order', 'invoice')").matches(headers.get)
    assert parse("JMSDeliveryMode = 'PERSISTENT' AND JMSType = 'order'").identifiers == frozenset(
        {"JMSDeliveryMode", "JMSType"}
    )


def test_render_renames_header_identifiers() -> None:
    selector = parse("JMSPriority > 4 AND color = 'JMSPriority' AND NOT (JMSType LIKE 'x%')")
    names = {"JMSPriority": "AMQPriority", "JMSType": "AMQType"}
    rendered = selector.render(lambda name: names.get(name, name))
    assert rendered == "AMQPriority > 4 AND color = 'JMSPriority' AND NOT (AMQType LIKE 'x%')"
    renamed = parse(rendered)
    assert renamed.identifiers == frozenset({"AMQPriority", "AMQType", "color"})
    assert renamed.matches(lookup(AMQPriority=5, color="JMSPriority", AMQType="y"))
    assert selector.render() == selector.render(lambda name: name)


@pytest.mark.parametrize("bad_name", ["", "a b", "1a", "AND", "not", "a-b", "a'", "x = 1 OR y"])
def test_render_refuses_a_rename_that_breaks_the_selector(bad_name: str) -> None:
    with pytest.raises(ValueError, match="not a selector identifier"):
        parse("a = 1").render(lambda name: bad_name)


# --- invalid selectors ---


@pytest.mark.parametrize(
    "text",
    [
        # empty
        "",
        " ",
        "\t\n\r\f",
        # parentheses
        "(",
        ")",
        "()",
        "(a = 1",
        "a = 1)",
        "((a = 1)",
        "(a = 1))",
        "a = (1",
        "a = ()",
        "a (= 1)",
        # dangling and doubled operators
        "a =",
        "= 1",
        "a = 1 AND",
        "AND a = 1",
        "a = 1 OR",
        "OR a",
        "a = 1 AND AND b = 2",
        "a = 1 OR OR b = 2",
        "a = 1 AND OR b = 2",
        "NOT",
        "NOT NOT",
        "a NOT",
        "a = 1 NOT",
        "a NOT = 1",
        "a = 1 b = 2",
        "a b",
        "a = 1 +",
        "a = * 1",
        "a = 1 * / 2",
        "a == 1",
        "a =< 1",
        "a => 1",
        "a != 1",
        "a = 1,",
        "a, b",
        # BETWEEN
        "a BETWEEN 1",
        "a BETWEEN 1 AND",
        "a BETWEEN AND 2",
        "a BETWEEN 1 OR 2",
        "a NOT BETWEEN",
        "a BETWEEN 'x' AND 'y'",
        "a BETWEEN TRUE AND FALSE",
        "a BETWEEN NULL AND 1",
        # IN
        "a IN",
        "a IN ()",
        "a IN ('x'",
        "a IN ('x',)",
        "a IN (,'x')",
        "a IN ('x' 'y')",
        "a IN 'x'",
        "a IN (b)",
        "a IN (1, 2)",
        "a IN (NULL)",
        "a IN (TRUE)",
        "a NOT IN",
        "'x' IN ('x')",
        "a + 1 IN ('x')",
        # LIKE and ESCAPE
        "a LIKE",
        "a LIKE b",
        "a LIKE 1",
        "a LIKE NULL",
        "a NOT LIKE",
        "a LIKE 'x' ESCAPE",
        "a LIKE 'x' ESCAPE ''",
        "a LIKE 'x' ESCAPE 'ab'",
        "a LIKE 'x' ESCAPE 1",
        "a LIKE 'x' ESCAPE e",
        "a LIKE 'x' ESCAPE '!' ESCAPE '!'",
        "a ESCAPE '!'",
        "1 LIKE '1'",
        "'x' LIKE 'x'",
        "a || b LIKE 'x'",
        # IS NULL
        "a IS",
        "a IS NOT",
        "a IS 1",
        "a IS NOT 1",
        "a IS TRUE",
        "a NOT NULL",
        "a IS NULL NULL",
        "IS NULL",
        # strings and characters
        "'unterminated",
        "a = 'x",
        "a = 'it's'",
        'a = "x"',
        "a = 1;",
        "a = #",
        "a = @b",
        "a.b = 1",
        "a[0] = 1",
        "a = `x`",
        "a\u00a0= 1",  # a no-break space is not JMS whitespace
        "a = 1 % 2",
        "a = 1 ^ 2",
        "a = 1 /* comment */",
        # numbers
        "a = 1a",
        "a = 0x",
        "a = 0xG",
        "a = 08",
        "a = 019",
        "a = 1e",
        "a = 1e+",
        "a = 1.2.3",
        "a = 1..2",
        "a = 1LL",
        "a = 1L5",
        "a = 1.5L",
        "a = 1e999",
        "a = 1ee2",
        "a = .",
        "a = .\u0663",  # Unicode digits are not JMS digits
        "a = \u0663",
        "a = 1\u0663",
        # keywords as identifiers
        "and = 1",
        "or = 1",
        "not = 1",
        "between = 1",
        "like = 1",
        "in = 1",
        "is = 1",
        "escape = 1",
        "NULL = 1",
        "a = NULL",
        "a <> NULL",
        "NULL = NULL",
        "a > NULL",
        # not a condition
        "'a'",
        "1",
        "1.5",
        "1 + 2",
        "-a",
        "a + 1",
        "a * b",
        "(1)",
        "('x')",
        # type errors visible before any message
        "a > 'x'",
        "'x' < a",
        "a <= TRUE",
        "FALSE >= a",
        "'x' = 1",
        "1 = 'x'",
        "TRUE = 1",
        "TRUE = 'x'",
        "(a = 1) = 1",
        "(a = 1) > 0",
        "a + 'x' > 1",
        "'x' * 2 > 1",
        "-'x' > 1",
        "-TRUE > 1",
        "(a = 1) + 1 > 0",
        "NOT 1",
        "NOT 'x'",
        "NOT (1 + a)",
        "1 AND a",
        "a AND 'x'",
        "a OR 2",
        "a OR 1 + 2",
        # chained comparisons
        "a = b = c",
        "a < b < c",
        "a = 1 <> TRUE",
        "a = 1 IS NULL",
        "a IS NULL IS NULL",
        "a LIKE 'x' LIKE 'y'",
        "a LIKE 'x' = TRUE",
        "a IN ('x') IN ('y')",
        "a BETWEEN 1 AND 2 BETWEEN 1 AND 2",
        "a = 1 NOT LIKE 'x'",
        "a = 1 NOT IN ('x')",
        "a = 1 NOT BETWEEN 1 AND 2",
    ],
)
def test_invalid_selectors_raise(text: str) -> None:
    with pytest.raises(InvalidSelectorException):
        parse(text)


@pytest.mark.parametrize("value", [None, b"a = 1", 1, ["a = 1"], object()])
def test_non_string_selectors_raise(value: Any) -> None:
    with pytest.raises(InvalidSelectorException, match="must be a str"):
        parse(value)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("a = 1 AND AND b", ["unexpected 'AND'", "position 11", "'a = 1 AND AND b'"]),
        ("(a = 1", ["end of selector", "expected ')'", "position 7"]),
        ("a = 1)", ["unexpected ')'", "position 6"]),
        ("a = 'x", ["unterminated string", "position 5"]),
        ("and = 1", ["'and'", "keywords cannot be identifiers", "position 1"]),
        ("a = 08", ["octal", "'08'", "position 5"]),
        ("a = 1abc", ["malformed number '1abc'", "position 5"]),
        ("a LIKE 'x' ESCAPE 'ab'", ["ESCAPE", "one character", "position 12"]),
        ("a != 1", ["unexpected character '!'", "position 3"]),
        ('a = "x"', ["single quotes", "position 5"]),
        ("a = NULL", ["IS NULL", "position 3"]),
        ("a > 'x'", ["a string", "'>'", "position 3"]),
        ("'x' = 1", ["a string cannot be compared with a number"]),
        ("1 + 2", ["must be a condition", "a number"]),
        ("a = b = c", ["do not chain", "parentheses", "position 7"]),
        ("1 LIKE 'x'", ["LIKE needs an identifier"]),
        ("a IN (1)", ["string literal in the IN list", "position 7"]),
        ("", ["empty", "None"]),
        ("a = 1e999", ["out of range"]),
    ],
)
def test_error_messages_name_the_problem_and_position(text: str, fragments: list[str]) -> None:
    with pytest.raises(InvalidSelectorException) as raised:
        parse(text)
    for fragment in fragments:
        assert fragment in str(raised.value)


def test_error_message_of_a_long_selector_shows_the_neighbourhood() -> None:
    text = "a = 1 OR " * 100 + "b = = 2"
    with pytest.raises(InvalidSelectorException) as raised:
        parse(text)
    message = str(raised.value)
    assert f"position {text.index('= =') + 3}" in message
    assert "b = = 2" in message
    assert len(message) < 300


# --- bounds ---


def test_length_limit_in_utf8_bytes() -> None:
    prefix, suffix = "x = '", "'"
    at_limit = prefix + "a" * (MAX_SELECTOR_BYTES - len(prefix) - len(suffix)) + suffix
    assert len(at_limit.encode()) == MAX_SELECTOR_BYTES
    assert parse(at_limit).matches(lookup(x="a" * (MAX_SELECTOR_BYTES - 6)))
    with pytest.raises(InvalidSelectorException, match="bytes"):
        parse(at_limit[:-1] + "a'")
    with pytest.raises(InvalidSelectorException, match="bytes"):
        parse("x = '" + "é" * 40_000 + "'")  # 40 000 characters, 80 000 bytes
    with pytest.raises(InvalidSelectorException):
        parse("x = 1 OR " * 1_000_000 + "x = 1")


def nested_parentheses(depth: int) -> str:
    return "(" * depth + "a = 1" + ")" * depth


def worst_condition_chain(depth: int) -> str:
    """Each parenthesis opens an OR, an AND and a comparison: the deepest tree per nesting level."""
    text = "a = 1"
    for _ in range(depth):
        text = f"b OR c AND d = ({text})"
    return text


def worst_arithmetic_chain(depth: int) -> str:
    text = "a"
    for _ in range(depth):
        text = f"b + c * -(d * {text})"
    return text + " > 0"


@pytest.mark.parametrize(
    "make",
    [
        nested_parentheses,
        worst_condition_chain,
        worst_arithmetic_chain,
        lambda depth: "NOT " * depth + "a",
        lambda depth: "NOT (" * depth + "a" + ")" * depth,
        lambda depth: "-" * depth + "a > 0",
        lambda depth: "- " * depth + "a > 0",
        lambda depth: "-(" * depth + "a" + ")" * depth + " > 0",
        lambda depth: "(" * (depth - depth // 2) + "NOT " * (depth // 2) + "a" + ")" * (depth - depth // 2),
    ],
)
def test_nesting_limit(make: Callable[[int], str]) -> None:
    values = lookup(a=1, b=False, c=True, d=False)

    def use(selector: Selector) -> None:
        selector.matches(values)
        assert parse(selector.render()).render() == selector.render()  # rendering never nests deeper

    # the deepest accepted selector works even when the caller already uses part of the stack
    with_extra_frames(200, lambda: use(parse(make(MAX_NESTING))))
    with pytest.raises(InvalidSelectorException, match=f"deeper than {MAX_NESTING}"):
        parse(make(MAX_NESTING + 1))
    with pytest.raises(InvalidSelectorException):
        parse(make(10_000))


def test_deep_nesting_never_raises_recursion_error() -> None:
    for text in [
        "(" * 60_000,
        "NOT " * 15_000 + "a",
        "-" * 60_000 + "a > 1",
        "(" * 30_000 + "a" + ")" * 30_000,
    ]:
        with pytest.raises(InvalidSelectorException):
            parse(text)


def test_long_flat_chains_are_fine() -> None:
    ors = " OR ".join(f"a = {i}" for i in range(5000))
    selector = parse(ors)
    assert selector.matches(lookup(a=4999))
    assert not selector.matches(lookup(a=5000))
    assert parse(selector.render()).matches(lookup(a=0))
    ands = " AND ".join(["a = 1"] * 5000)
    assert parse(ands).matches(lookup(a=1))
    sums = "a = " + " + ".join(["1"] * 15_000)
    assert parse(sums).matches(lookup(a=15_000))
    assert parse(parse(sums).render()).matches(lookup(a=15_000))


# --- quote_string ---


@pytest.mark.parametrize(
    ("value", "quoted"),
    [("", "''"), ("a", "'a'"), ("it's", "'it''s'"), ("'", "''''"), ("''", "''''''"), ("a\nb", "'a\nb'")],
)
def test_quote_string(value: str, quoted: str) -> None:
    assert quote_string(value) == quoted


@pytest.mark.parametrize(
    "attack",
    [
        "' OR TRUE OR 'a' = '",
        "x' OR '1' = '1",
        "') OR TRUE OR ('",
        "'; DROP TABLE x; --",
        "\\' OR TRUE OR '",
        "' OR x IS NULL OR '",
    ],
)
def test_quote_string_cannot_inject(attack: str) -> None:
    selector = parse("x = " + quote_string(attack))
    assert selector.identifiers == frozenset({"x"})
    assert not selector.matches(lookup())
    assert not selector.matches(lookup(x="a"))
    assert selector.matches(lookup(x=attack))


@given(value=st.text(), other=st.text())
def test_quote_string_round_trips_any_text(value: str, other: str) -> None:
    selector = parse("x = " + quote_string(value))
    assert selector.identifiers == frozenset({"x"})
    assert selector.matches(lookup(x=value))
    assert selector.matches(lookup(x=other)) is (other == value)
    assert not selector.matches(lookup(x=value + "'"))
    assert parse(selector.render()).matches(lookup(x=value))
    in_list = parse(f"x IN ({quote_string(value)}, {quote_string(other)})")
    assert in_list.matches(lookup(x=value)) and in_list.matches(lookup(x=other))
    like = parse(
        f"x LIKE {quote_string(value.replace('!', '!!').replace('%', '!%').replace('_', '!_'))} ESCAPE '!'"
    )
    assert like.matches(lookup(x=value))


# --- property tests: generated selectors ---

OR, AND, NOT, COMPARISON, SUM, PRODUCT, SIGN, ATOM = range(1, 9)  # how tightly each form binds
Generated = tuple[str, int]  # selector text and its binding level


def wrapped(item: Generated, lowest_bare: int) -> str:
    text, level = item
    return text if level >= lowest_bare else f"({text})"


NUMBER_LITERALS = ["0", "1", "2", "7", "-3", "0x1F", "017", "7E1", "2.5", ".5", "7.", "3L", "1.5F", "1e-3"]
numeric_atoms = st.sampled_from(["a", "b", "n", "JMSPriority", *NUMBER_LITERALS]).map(
    lambda text: (text, ATOM)
)
numeric = st.recursive(
    numeric_atoms,
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["-", "+", "- "]), inner).map(lambda x: (x[0] + wrapped(x[1], SIGN), SIGN)),
        st.tuples(inner, st.sampled_from(["+", "-"]), inner).map(
            lambda x: (f"{wrapped(x[0], SUM)} {x[1]} {wrapped(x[2], PRODUCT)}", SUM)
        ),
        st.tuples(inner, st.sampled_from(["*", "/"]), inner).map(
            lambda x: (f"{wrapped(x[0], PRODUCT)} {x[1]} {wrapped(x[2], SIGN)}", PRODUCT)
        ),
        inner.map(lambda x: (f"({x[0]})", ATOM)),
    ),
    max_leaves=5,
)
short_strings = st.text(alphabet="ab'%_! ", max_size=4)
string_operands = st.one_of(st.sampled_from(["s", "t"]), short_strings.map(quote_string))
keyword_case = st.sampled_from([str.upper, str.lower, str.title])


@st.composite
def condition_atoms(draw: st.DrawFn) -> Generated:
    kind = draw(st.integers(0, 9))
    case = draw(keyword_case)
    if kind == 0:
        left, right = draw(numeric), draw(numeric)
        operator = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        return f"{wrapped(left, SUM)} {operator} {wrapped(right, SUM)}", COMPARISON
    if kind == 1:
        operator = draw(st.sampled_from(["=", "<>"]))
        return f"{draw(string_operands)} {operator} {draw(string_operands)}", COMPARISON
    if kind == 2:
        value, low, high = draw(numeric), draw(numeric), draw(numeric)
        keyword = case(draw(st.sampled_from(["BETWEEN", "NOT BETWEEN"])))
        bounds = f"{wrapped(low, SUM)} {case('AND')} {wrapped(high, SUM)}"
        return f"{wrapped(value, SUM)} {keyword} {bounds}", COMPARISON
    if kind == 3:
        keyword = case(draw(st.sampled_from(["LIKE", "NOT LIKE"])))
        escape = draw(st.sampled_from(["", " ESCAPE '!'", " ESCAPE '%'"]))
        return (
            f"{draw(st.sampled_from(['s', 't']))} {keyword} {quote_string(draw(short_strings))}{escape}",
            COMPARISON,
        )
    if kind == 4:
        keyword = case(draw(st.sampled_from(["IN", "NOT IN"])))
        values = ", ".join(map(quote_string, draw(st.lists(short_strings, min_size=1, max_size=3))))
        return f"{draw(st.sampled_from(['s', 't', 'n']))} {keyword} ({values})", COMPARISON
    if kind == 5:
        operand = draw(
            st.one_of(numeric, st.sampled_from(["s", "flag", "'x'", "TRUE", "NULL"]).map(lambda t: (t, ATOM)))
        )
        keyword = case(draw(st.sampled_from(["IS NULL", "IS NOT NULL"])))
        return f"{wrapped(operand, SUM)} {keyword}", COMPARISON
    if kind == 6:
        return (
            f"flag {draw(st.sampled_from(['=', '<>']))} {case(draw(st.sampled_from(['TRUE', 'FALSE'])))}",
            COMPARISON,
        )
    return draw(st.sampled_from(["flag", "other", case("TRUE"), case("FALSE"), case("NULL")])), ATOM


def is_null_literal(text: str) -> bool:
    return text.strip("() ").upper() == "NULL"


def extend_conditions(inner: st.SearchStrategy[Generated]) -> st.SearchStrategy[Generated]:
    return st.one_of(
        inner.map(lambda x: (f"NOT {wrapped(x, NOT)}", NOT)),
        st.tuples(inner, inner).map(lambda x: (f"{wrapped(x[0], AND)} AND {wrapped(x[1], AND)}", AND)),
        st.tuples(inner, inner).map(lambda x: (f"{wrapped(x[0], OR)} or {wrapped(x[1], OR)}", OR)),
        inner.map(lambda x: (f"({x[0]})", ATOM)),
        st.tuples(inner, st.sampled_from(["=", "<>"]), inner)
        .filter(
            lambda x: not is_null_literal(x[0][0]) and not is_null_literal(x[2][0])
        )  # x = NULL is refused
        .map(lambda x: (f"({x[0][0]}) {x[1]} ({x[2][0]})", COMPARISON)),
    )


conditions = st.recursive(condition_atoms(), extend_conditions, max_leaves=6).map(lambda item: item[0])

property_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.5, -1.5, 31, 70.0, 0.0, 10**30]),
    st.sampled_from(["", "a", "ab", "x", "a%b", "'", "ab'"]),
)
lookups = st.fixed_dictionaries(
    {name: property_values for name in ["a", "b", "n", "s", "t", "flag", "other", "JMSPriority"]}
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=conditions, values=lookups)
def test_render_round_trip_is_equivalent(text: str, values: dict[str, object]) -> None:
    selector = parse(text)
    rendered = selector.render()
    again = parse(rendered)
    assert again.render() == rendered
    assert again.identifiers == selector.identifiers
    assert truth(rendered, **values) is truth(text, **values)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(text=conditions, values=lookups)
def test_render_rename_round_trip(text: str, values: dict[str, object]) -> None:
    selector = parse(text)
    renamed = parse(selector.render(lambda name: "p_" + name))
    assert renamed.identifiers == {"p_" + name for name in selector.identifiers}
    prefixed = {"p_" + name: value for name, value in values.items()}
    assert renamed.matches(prefixed.get) is selector.matches(values.get)


weird_values = st.one_of(
    property_values,
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.binary(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.just(object()),
    st.just(10**400),
)


@given(
    text=conditions, values=st.dictionaries(st.sampled_from(["a", "b", "n", "s", "t", "flag"]), weird_values)
)
def test_matches_never_raises(text: str, values: dict[str, object]) -> None:
    assert parse(text).matches(values.get) in (True, False)


TOKENS = [
    "a", "b", "s", "1", "0", "2.5", "'x'", "'%'", "(", ")", ",", "=", "<>", "<", ">=", "+", "-", "*", "/",
    "AND", "OR", "NOT", "BETWEEN", "LIKE", "IN", "IS", "NULL", "TRUE", "ESCAPE", "'!'",
]  # fmt: skip


@settings(max_examples=500)
@given(tokens=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12), values=lookups)
def test_token_soup_parses_or_raises_invalid_selector(tokens: list[str], values: dict[str, object]) -> None:
    text = " ".join(tokens)
    try:
        selector = parse(text)
    except InvalidSelectorException:
        return
    assert selector.matches(values.get) in (True, False)
    assert truth(selector.render(), **values) is truth(text, **values)


@given(text=st.text(max_size=40))
def test_any_text_parses_or_raises_invalid_selector(text: str) -> None:
    with contextlib.suppress(InvalidSelectorException):
        parse(text)


@given(text=st.text(alphabet="ab1.eExX0\u0663\u00e9'()=<>+-*/ NOTANDLIKE%_!", max_size=25))
def test_selector_like_text_parses_or_raises_invalid_selector(text: str) -> None:
    try:
        selector = parse(text)
    except InvalidSelectorException:
        return
    assert isinstance(selector.render(), str)


@pytest.mark.parametrize(
    ("text", "computes"),
    [
        ("price * qty > 100", True),
        ("-price < 0", True),
        ("price + 1 BETWEEN 2 AND 3", True),
        ("a = 1 AND (b > 2 OR c * 2 = 4)", True),
        ("price > -5", False),
        ("region = 'EU' AND price BETWEEN 1 AND 2", False),
        ("JMSPriority > 4 OR name LIKE 'a%'", False),
    ],
)
def test_computes_marks_arithmetic_on_message_values(text: str, computes: bool) -> None:
    assert parse(text).computes is computes


@pytest.mark.parametrize(
    ("text", "typed"),
    [
        ("weight > 2", True),
        ("n = 2", True),
        ("2 <> n", True),
        ("n = -5", True),
        ("flag = TRUE", True),
        ("n BETWEEN 1 AND 5", True),
        ("NOT (a = 'x' OR n >= 1.5)", True),
        ("JMSXGroupSeq = 1", True),  # a JMSX property travels as a string like any other
        ("color = 'red' AND size <> 'L'", False),
        ("a = b", False),
        ("x IS NULL AND name LIKE 'a%' AND region IN ('EU')", False),
        ("JMSPriority > 4 AND JMSTimestamp BETWEEN 1 AND 2", False),  # header fields: typed on every broker
        ("JMSDeliveryMode = 'PERSISTENT'", False),
    ],
)
def test_compares_typed_marks_number_and_boolean_tests_on_properties(text: str, typed: bool) -> None:
    assert parse(text).compares_typed is typed
