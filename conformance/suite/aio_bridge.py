"""The suite's scenarios through ``jmslike.aio``: a blocking bridge over the asyncio API (``--api aio``).

The scenarios are written once, against the threaded API's blocking calls. With ``--api aio``,
:meth:`Context.connect` hands them a :class:`Bridged` ``jmslike.aio`` connection instead: every call is
forwarded to the asyncio object on one event loop (a daemon thread of this module), awaited there when it
returns an awaitable, and the ``jmslike.aio`` objects it returns are bridged in turn. So the JMS rules under
test -- delivery, acknowledgement, transactions, subscriptions, errors -- are ``jmslike.aio``'s; the bridge
adds no rule of its own:

- Messages are the same objects in both APIs and are not wrapped; a received message's ``acknowledge()``
  (an awaitable in ``jmslike.aio``) is made blocking through the public provider hook.
- A listener the scenario gives runs in a worker thread while the session's dispatch task awaits it, so the
  session still delivers one message at a time; the bridged calls the listener makes run in that dispatch
  task, as a ``jmslike.aio`` listener's own awaits would (so closing its own session is refused, as JMS says,
  rather than waiting for itself).
- What ``jmslike.aio`` lacks (an attribute it does not have, a feature it refuses with
  :class:`~jmslike.exceptions.NotYetInAioException`) makes the scenario ``unsupported`` with that reason, so
  the report says what the asyncio API cannot yet do instead of failing it.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar, cast

from jmslike import aio
from jmslike.exceptions import NotYetInAioException
from jmslike.messages import Message

T = TypeVar("T")

#: The jmslike.aio classes whose objects come back bridged.
_BRIDGED = (
    aio.ConnectionFactory,
    aio.Connection,
    aio.Session,
    aio.MessageConsumer,
    aio.MessageProducer,
    aio.QueueBrowser,
    aio.JMSContext,
    aio.JMSProducer,
    aio.JMSConsumer,
)


class _Loop:
    """One event loop in a daemon thread for every bridged object of the process (a restart scenario's
    connections live from its setup phase to its verify phase): asyncio's, or uvloop's for ``--api aio-uvloop``."""

    def __init__(self, api: str) -> None:
        self.loop = _new_event_loop(api)
        self.thread = threading.Thread(target=self.loop.run_forever, name="conformance-aio-loop", daemon=True)
        self.thread.start()

    def run(self, awaitable: Awaitable[T]) -> T:
        if threading.current_thread() is self.thread:
            raise RuntimeError("a bridged call on the bridge's own loop would wait for itself")
        calls: asyncio.Queue[_Call] | None = getattr(_listener_thread, "calls", None)
        if calls is not None:  # a listener's worker thread: run it in the listener's own task (_in_worker)
            done: Future[Any] = Future()
            self.loop.call_soon_threadsafe(calls.put_nowait, (awaitable, done))
            return cast(T, done.result())
        future: Future[T] = asyncio.run_coroutine_threadsafe(_awaited(awaitable), self.loop)
        return future.result()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _new_event_loop(api: str) -> asyncio.AbstractEventLoop:
    """uvloop's loop for ``aio-uvloop`` (imported only then: it is an optional install), else asyncio's."""
    if api == "aio-uvloop":
        try:
            import uvloop
        except ImportError:
            raise RuntimeError("--api aio-uvloop needs uvloop: pip install uvloop") from None
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


_loops: dict[str, _Loop] = {}
_loop_lock = threading.Lock()


def _the_loop(api: str) -> _Loop:
    with _loop_lock:
        if api not in _loops:
            _loops[api] = _Loop(api)
        return _loops[api]


def factory(url: str, api: str = "aio") -> Bridged:
    """A bridged ``jmslike.aio.ConnectionFactory`` (its constructor's refusals are raised here), on the event loop
    ``api`` names ("aio": asyncio's, "aio-uvloop": uvloop's)."""
    loop = _the_loop(api)

    async def make() -> aio.ConnectionFactory:
        return aio.ConnectionFactory(url)

    return Bridged(loop.run(make()), loop)


class Bridged:
    """A ``jmslike.aio`` object seen through blocking calls (module docstring)."""

    __slots__ = ("_loop", "_target")

    def __init__(self, target: object, loop: _Loop) -> None:
        self._target = target
        self._loop = loop

    @property
    def target(self) -> object:
        """The ``jmslike.aio`` object itself."""
        return self._target

    def __getattr__(self, name: str) -> Any:
        try:
            attribute = getattr(self._target, name)
        except AttributeError:
            if any(name in vars(klass) for klass in type(self._target).__mro__):
                raise  # jmslike.aio has it, and it failed: a defect, not a gap
            raise NotYetInAioException(f"{type(self._target).__name__}.{name}") from None
        if not callable(attribute):
            return self._bridge(attribute)

        def call(*args: Any, **kwargs: Any) -> Any:
            _check_arguments(self._target, name, attribute, args, kwargs)
            args = tuple(self._unbridge(a) for a in args)
            kwargs = {k: self._unbridge(v) for k, v in kwargs.items()}
            return self._bridge(self._loop.run(_call(attribute, args, kwargs)))

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        """The bridge's own slots, or an attribute of the ``jmslike.aio`` object a scenario sets (one forges a
        consumer's ``spec`` to play another client)."""
        if name in Bridged.__slots__:
            object.__setattr__(self, name, value)
        else:
            setattr(self._target, name, self._unbridge(value))

    def _bridge(self, value: Any) -> Any:
        if isinstance(value, _BRIDGED):
            return Bridged(value, self._loop)
        if isinstance(value, Message):
            _blocking_acknowledge(value, self._loop)
        return value

    def _unbridge(self, value: Any) -> Any:
        if isinstance(value, Bridged):
            return value.target
        if callable(value) and not isinstance(value, type):
            return _in_worker(value, self._loop)
        if hasattr(value, "onCompletion"):  # a CompletionListener: both of its methods
            return _CompletionInWorker(value, self._loop)
        if hasattr(value, "onMessage"):
            return _in_worker(value.onMessage, self._loop)
        if hasattr(value, "onException"):  # an ExceptionListener object
            return _in_worker(value.onException, self._loop)
        return value

    # -- the protocols scenarios use on API objects ------------------------------------------------------------

    def __iter__(self) -> Any:
        """A consumer or browser: its messages, each awaited on the loop."""
        if isinstance(self._target, aio.QueueBrowser):
            enumeration = self._loop.run(self._target.getEnumeration())
        else:
            enumeration = self._target.__aiter__()  # type: ignore[attr-defined]
        while True:
            try:
                message = self._loop.run(anext(enumeration))
            except StopAsyncIteration:
                return
            yield self._bridge(message)

    def __enter__(self) -> Bridged:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __eq__(self, other: object) -> bool:
        return self._target == (other.target if isinstance(other, Bridged) else other)

    def __hash__(self) -> int:
        return hash(self._target)

    def __repr__(self) -> str:
        return f"Bridged({self._target!r})"


def _threaded_twins() -> dict[type, type]:
    import jmslike

    return {
        aio.ConnectionFactory: jmslike.ConnectionFactory,
        aio.Connection: jmslike.Connection,
        aio.Session: jmslike.Session,
        aio.MessageConsumer: jmslike.TopicSubscriber,  # the widest consumer: a durable subscriber's extras too
        aio.MessageProducer: jmslike.MessageProducer,
        aio.QueueBrowser: jmslike.QueueBrowser,
        aio.JMSContext: jmslike.JMSContext,
        aio.JMSProducer: jmslike.JMSProducer,
        aio.JMSConsumer: jmslike.JMSConsumer,
    }


def _check_arguments(
    target: object, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Arguments the threaded API takes and jmslike.aio does not (``retain=``, ``removeSubscription=``...)
    are a gap of jmslike.aio; arguments neither takes stay the scenario's TypeError."""
    try:
        inspect.signature(method).bind(*args, **kwargs)
        return
    except TypeError:
        twin = _threaded_twins().get(type(target))
        threaded = getattr(twin, name, None) if twin is not None else None
        if threaded is None:
            raise
        try:
            inspect.signature(threaded).bind(None, *args, **kwargs)  # unbound: self first
        except TypeError:
            raise TypeError(f"{type(target).__name__}.{name}: arguments neither API takes") from None
    given = ", ".join([*("_" for _ in args), *(f"{k}=" for k in kwargs)])
    raise NotYetInAioException(f"{type(target).__name__}.{name}({given}) as the threaded API takes it")


async def _call(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call on the loop (jmslike.aio's plain methods may expect it too); await what it returns."""
    result = function(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


#: Per thread: the queue of the listener task a worker thread runs a scenario's listener for.
_listener_thread = threading.local()
_Call = tuple[Awaitable[Any], "Future[Any]"]


def _in_worker(function: Callable[..., Any], loop: _Loop) -> Callable[..., Coroutine[Any, Any, Any]]:
    """A scenario's (blocking) listener as a coroutine function: it runs in a worker thread, and the bridged
    calls it makes run in this coroutine's own task (the session's dispatch task), as a jmslike.aio listener's
    own awaits would, so jmslike.aio sees who is calling (a listener closing its own session is refused, not
    a deadlock)."""

    async def listener(*values: Any) -> Any:
        for value in values:
            if isinstance(value, Message):
                _blocking_acknowledge(value, loop)
        calls: asyncio.Queue[_Call] = asyncio.Queue()

        def in_thread() -> Any:
            _listener_thread.calls = calls
            try:
                return function(*values)
            finally:
                _listener_thread.calls = None

        worker = asyncio.ensure_future(asyncio.to_thread(in_thread))
        while True:
            next_call = asyncio.ensure_future(calls.get())
            await asyncio.wait({worker, next_call}, return_when=asyncio.FIRST_COMPLETED)
            if not next_call.done():
                next_call.cancel()
                return worker.result()
            awaitable, done = next_call.result()
            try:
                done.set_result(await awaitable)
            except asyncio.CancelledError as exc:  # the listener's task is cancelled: so is the call
                done.set_exception(exc)
                raise
            except BaseException as exc:  # handed to the listener's thread, which raises it
                done.set_exception(exc)

    return listener


class _CompletionInWorker:
    """A scenario's CompletionListener, each method run as :func:`_in_worker` runs a listener."""

    def __init__(self, listener: Any, loop: _Loop) -> None:
        self.onCompletion = _in_worker(listener.onCompletion, loop)
        self.onException = _in_worker(listener.onException, loop)


def _blocking_acknowledge(message: Message, loop: _Loop) -> None:
    """``message.acknowledge()`` of a jmslike.aio message returns an awaitable: make it wait, as the
    threaded API's does (once per message)."""
    acknowledger = message.acknowledger
    if acknowledger is None or getattr(acknowledger, "bridged", False):
        return

    def acknowledge() -> None:
        loop.run(_call(acknowledger, (), {}))  # on the loop, where jmslike.aio's acknowledgement runs

    acknowledge.bridged = True  # type: ignore[attr-defined]
    message.bind_acknowledger(acknowledge)
