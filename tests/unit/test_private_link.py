"""jmslike.aio.private_link.PrivateLink's life cycle, without a broker (stand-in connections record calls)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from jmslike.aio.private_link import PrivateLink
from jmslike.exceptions import ConnectionLostException, IllegalStateException


class StandIn:
    def __init__(self) -> None:
        self.started = False
        self.closed = False
        self.failure: ConnectionLostException | None = None

    def start(self) -> None:
        self.started = True

    def close(self) -> None:
        self.closed = True


class Opener:
    def __init__(self) -> None:
        self.opened: list[StandIn] = []

    def __call__(self) -> Any:
        connection = StandIn()
        self.opened.append(connection)
        return connection


def test_opened_on_first_use_started_and_kept() -> None:
    opener = Opener()
    link = PrivateLink(opener)
    assert not link.opened and opener.opened == []
    first = link.run(lambda c: c)
    second = link.run(lambda c: c)
    assert first is second and opener.opened == [first] and cast(StandIn, first).started


def test_a_lost_connection_is_replaced_at_the_next_use() -> None:
    opener = Opener()
    link = PrivateLink(opener)
    first = cast(StandIn, link.run(lambda c: c))
    first.failure = ConnectionLostException("gone")
    second = link.run(lambda c: c)
    assert second is not first and first.closed and len(opener.opened) == 2


def test_work_that_loses_the_connection_drops_it_and_raises() -> None:
    opener = Opener()
    link = PrivateLink(opener)

    def lose(connection: Any) -> None:
        raise ConnectionLostException("lost during the work")

    with pytest.raises(ConnectionLostException):
        link.run(lose)
    assert opener.opened[0].closed and not link.opened


def test_other_errors_keep_the_connection() -> None:
    opener = Opener()
    link = PrivateLink(opener)

    def refuse(connection: Any) -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError):
        link.run(refuse)
    assert link.opened and not opener.opened[0].closed


def test_close_closes_it_and_refuses_later_use() -> None:
    opener = Opener()
    link = PrivateLink(opener)
    link.run(lambda c: c)
    link.close()
    assert opener.opened[0].closed and not link.opened
    with pytest.raises(IllegalStateException):
        link.run(lambda c: c)
    assert len(opener.opened) == 1, "nothing opened after close"
