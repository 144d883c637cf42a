"""The failover rule: which broker of a ``host1,host2`` list a connection uses.

One rule for every opener (the connection's STOMP wire, Artemis's management client): try each host once,
in order, and take the first that answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from jmslike.exceptions import ConnectionLostException, JMSException

WireT = TypeVar("WireT")


def open_first(
    hosts: Iterable[tuple[str, int]], open_host: Callable[[tuple[str, int]], WireT], what: str
) -> WireT:
    """Try each host of a failover list once, in order; the first that connects wins. A host that cannot be
    reached or does not answer in time is skipped; any other error (a refusal: credentials, client ID) is
    that broker's answer and is raised at once. With one host its error is raised as it is; with several,
    a ConnectionLostException says ``what`` went wrong and every host's reason."""
    errors: list[JMSException] = []
    for host in hosts:
        try:
            return open_host(host)
        except (ConnectionLostException, TimeoutError) as exc:
            errors.append(_skipped(exc))
    raise _none_reached(errors, what)


async def open_first_async(
    hosts: Iterable[tuple[str, int]], open_host: Callable[[tuple[str, int]], Awaitable[WireT]], what: str
) -> WireT:
    """:func:`open_first` for an asyncio opener: the same rule."""
    errors: list[JMSException] = []
    for host in hosts:
        try:
            return await open_host(host)
        except (ConnectionLostException, TimeoutError) as exc:
            errors.append(_skipped(exc))
    raise _none_reached(errors, what)


def _skipped(exc: Exception) -> JMSException:
    return exc if isinstance(exc, JMSException) else JMSException(str(exc))


def _none_reached(errors: list[JMSException], what: str) -> JMSException:
    if len(errors) == 1:
        return errors[0]
    error = ConnectionLostException(f"{what}: " + ("; ".join(str(e) for e in errors) or "no host"))
    error.__cause__ = errors[-1] if errors else None
    return error
