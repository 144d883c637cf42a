"""Fixtures for JMS API tests: factories and connections on the real brokers the plugin launches."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aio_support import EVENT_LOOPS, LoopRunner, loop_runner

from jmslike import Connection, ConnectionFactory
from jmslike.conformance.proxy import FaultProxy
from jmslike.registry import adapter_names


def _skip_without_adapter(kind: str) -> None:
    if kind not in adapter_names():
        pytest.skip(f"no jmslike adapter for {kind} is installed yet; only {', '.join(adapter_names())}")


@pytest.fixture
def url(broker: Any) -> str:
    """The broker's jmslike URL (skips, saying why, when no adapter for that broker exists)."""
    _skip_without_adapter(broker.kind)
    management = getattr(broker, "management_url", None)
    return str(broker.url) + (f"?management_url={management}" if management else "")


@pytest.fixture(params=EVENT_LOOPS)
def run_loop(request: pytest.FixtureRequest) -> LoopRunner:
    """A test taking this runs once on asyncio's event loop and once on uvloop's (aio_support.loop_runner)."""
    return loop_runner(request.param)


@pytest.fixture
def factory(url: str) -> ConnectionFactory:
    return ConnectionFactory(url)


@pytest.fixture
def connect(broker: Any, url: str) -> Iterator[Callable[..., Connection]]:
    """``connect(client_id=None, url_options="", start=True)``: a connection closed after the test."""
    opened: list[Connection] = []

    def make(client_id: str | None = None, url_options: str = "", start: bool = True) -> Connection:
        target = url + (("&" if "?" in url else "?") + url_options if url_options else "")
        connection = ConnectionFactory(target).createConnection(broker.user, broker.password)
        opened.append(connection)
        if client_id is not None:
            connection.setClientID(client_id)
        if start:
            connection.start()
        return connection

    yield make
    for connection in opened:
        connection.close()


@pytest.fixture
def connection(connect: Callable[..., Connection]) -> Connection:
    return connect()


@pytest.fixture
def proxy(broker: Any) -> Iterator[FaultProxy]:
    """A TCP fault proxy in front of the broker (stall, drop, partition), closed after the test."""
    with FaultProxy(broker.host, broker.port) as started:
        yield started


@pytest.fixture
def proxy_url(broker: Any, url: str, proxy: FaultProxy) -> Callable[..., str]:
    """``proxy_url(**url_options)``: the broker's URL with ``proxy`` in place of the broker's address."""

    def make(**options: object) -> str:
        query = url.split("?", 1)[1] if "?" in url else ""
        extra = "&".join(f"{k}={v}" for k, v in options.items())
        return f"{broker.kind}://{proxy.host}:{proxy.port}?" + "&".join(p for p in (query, extra) if p)

    return make


@pytest.fixture
def via_proxy(broker: Any, proxy_url: Callable[..., str]) -> Iterator[Callable[..., Connection]]:
    """``via_proxy(**url_options)``: a started connection through ``proxy``, closed after the test."""
    opened: list[Connection] = []

    def make(**options: object) -> Connection:
        connection = ConnectionFactory(proxy_url(**options)).createConnection(broker.user, broker.password)
        opened.append(connection)
        connection.start()
        return connection

    yield make
    for connection in opened:
        connection.close()
