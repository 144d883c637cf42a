"""Which code acts for a ``jmslike.aio`` session's MessageListener or CompletionListener.

JMS refuses some calls from a listener or callback because they would wait for it (JMS 2.0 §6.1.5, §7.3.8), and
lets a listener's ``commit()`` run the callbacks queued behind that listener (they would wait for it too). In
asyncio the listener is not one task: a listener's commit runs on in a task of its own, and an application wraps
calls in ``asyncio.wait_for``, another task. So a :class:`Scope` lives in a context variable, which the tasks
started from there inherit, and ends when the listener or callback returns: a task left running afterwards is
on its own -- unless it was started by a callback that a listener's commit ran, and that listener still runs:
then it acts for the listener (the callback's scope names the listener's as its ``parent``).

- The *owner* (the task running the listener or callback) is refused what would wait for itself.
- Another task in an active scope -- started from it, and either awaited by it (``asyncio.wait_for``) or left
  running beside it -- waits for the scope to end before such a call, as any other task would wait for the
  listener; if the scope does not end within the receipt timeout, the listener or callback is waiting for that
  very call, and it is refused (:func:`wait_out`), instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from typing import Any

from jmslike.exceptions import IllegalStateException


@dataclasses.dataclass(eq=False)
class Scope:
    """One run of a session's listener on a delivery, or of one completion callback (``callback``)."""

    session: object
    callback: bool
    owner: asyncio.Task[Any] | None
    parent: Scope | None = None  # the listener's, for a callback its commit runs
    active: bool = True
    _waiters: list[asyncio.Future[None]] = dataclasses.field(default_factory=list)

    @property
    def kind(self) -> str:
        return "CompletionListener" if self.callback else "MessageListener"

    def owned_here(self) -> bool:
        """Whether the caller is the task running the listener or callback itself."""
        return self.owner is asyncio.current_task()

    def end(self) -> None:
        self.active = False
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def ended(self, timeout_s: float) -> bool:
        """Wait for the end; False when ``timeout_s`` passed first."""
        if not self.active:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout_s):
                await waiter
        except TimeoutError:
            return False
        finally:
            self._waiters.remove(waiter)
        return True


_acting: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("jmslike_aio_acting", default=None)


def enter(session: object, *, callback: bool) -> tuple[Scope, contextvars.Token[Scope | None]]:
    """The caller (the session's dispatch task, or a listener's commit) starts running a listener or callback."""
    scope = Scope(session, callback, asyncio.current_task(), parent=of(session))
    return scope, _acting.set(scope)


def leave(scope: Scope, token: contextvars.Token[Scope | None]) -> None:
    scope.end()
    _acting.reset(token)


def of(session: object) -> Scope | None:
    """The active scope of ``session`` the caller acts in, if any: its own, or once that ended, the one it ran
    in (a callback's listener) while that is still active."""
    scope = _acting.get()
    while scope is not None and not scope.active:
        scope = scope.parent
    return scope if scope is not None and scope.session is session else None


def detached_context() -> contextvars.Context:
    """The caller's context without its scope: for tasks jmslike starts that act for no listener (a session's
    dispatch task, an ExceptionListener call), keeping the application's own context variables."""
    context = contextvars.copy_context()
    context.run(_acting.set, None)
    return context


async def wait_out(session: object, action: str, timeout_s: float, *, listeners: bool = True) -> None:
    """Before ``action``, which waits for the session's listeners or callbacks: from a task another one started
    (not its owner, which the caller refuses itself), wait for that listener or callback to return, at most
    ``timeout_s``; IllegalStateException after that, since it is waiting for this call. ``listeners=False``: only
    a callback's scope is waited out (a commit acts for the listener that started it)."""
    scope = of(session)
    if scope is None or scope.owned_here() or not (scope.callback or listeners):
        return
    if not await scope.ended(timeout_s):
        raise IllegalStateException(
            f"{action} was called from a task that a {scope.kind} of this session started, and that {scope.kind} "
            f"has not returned within {timeout_s:.1f}s (receipt_timeout_ms): it is waiting for this call, which "
            f"waits for it; call it once the {scope.kind} has returned"
        )
