"""MessageConsumer and QueueBrowser (TopicSubscriber, the durable kind, is jmslike.durable_subscriptions').

A consumer owns one broker subscription and an inbox the receiver thread fills; the session decides
when and on which thread its messages are handed out (see session_engine.py). Building the Message object
happens on the delivering thread, not the receiver thread, so a slow decode never delays receipts.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from jmslike import body_codec
from jmslike.constants import DeliveryMode
from jmslike.contract import Adapter, IncomingMessage, SubscriptionSpec
from jmslike.delivery import Pending
from jmslike.destinations import Destination, Queue
from jmslike.exceptions import (
    IllegalStateException,
    JMSException,
    MessageFormatException,
    UnsupportedFeatureException,
)
from jmslike.flow import BufferGauge
from jmslike.messages import BytesMessage, Message
from jmslike.selector import Selector, parse
from jmslike.serializers import SerializerRegistry

if TYPE_CHECKING:
    from jmslike.session import Session
    from jmslike.subscriptions import DurableDefinition

MessageListener = Callable[[Message], None]
T = TypeVar("T")

# Properties the provider sets; they are never taken from the wire as user properties.
_PROVIDER_PROPERTIES = frozenset({"JMSXDeliveryCount"})


class Inbox:
    """A consumer's messages not yet handed out, oldest first, and whether it still takes any.

    The session owns delivery (order, local redelivery, acknowledgement, see session_engine.py): it is the only one
    that changes an inbox, always under its own lock, so the inbox needs none. A closed inbox stays closed:
    closing hands back what it held, for the broker to have again."""

    __slots__ = ("_buffer", "_closed", "_items")

    def __init__(self, buffer: BufferGauge | None = None) -> None:
        self._items: deque[Pending] = deque()
        self._closed = False
        self._buffer = buffer  # the connection's byte count of what its inboxes hold (jmslike.flow)

    @property
    def closed(self) -> bool:
        return self._closed

    def put(self, pending: Pending) -> None:
        self._items.append(pending)
        if self._buffer is not None:
            self._buffer.add(len(pending.incoming.body))

    def put_back(self, pending: Pending) -> None:
        """Ahead of everything else: a message redelivered locally, or left in place, comes first."""
        self._items.appendleft(pending)
        if self._buffer is not None:
            self._buffer.add(len(pending.incoming.body))

    def take(self) -> Pending:
        pending = self._items.popleft()
        if self._buffer is not None:
            self._buffer.remove(len(pending.incoming.body))
        return pending

    def clear(self) -> None:
        """Forget what is buffered (the connection was lost: the broker has it all again)."""
        self._empty()

    def close(self) -> list[Pending]:
        """Take no more; what was buffered, in order."""
        self._closed = True
        return self._empty()

    def _empty(self) -> list[Pending]:
        """Empty the inbox; what it held, in order."""
        items = list(self._items)
        self._items.clear()
        if self._buffer is not None and items:
            self._buffer.remove(sum(len(p.incoming.body) for p in items))
        return items

    def __len__(self) -> int:
        return len(self._items)


class ConsumerBase:
    """What a consumer is in every API (this module's and ``jmslike.aio``'s): its subscription, its selector
    and who evaluates it, its inbox; the session decides delivery."""

    def __init__(
        self,
        spec: SubscriptionSpec,
        selector: Selector | None,
        adapter: Adapter,
        buffer: BufferGauge | None = None,
    ) -> None:
        self.spec = spec
        self._selector = selector
        client_filter = selector is not None and adapter.selector_placement(selector) == "client"
        #: The selector jmslike evaluates itself (None: the broker does, or there is none).
        self.client_selector = selector if client_filter else None
        #: noLocal filtered by jmslike, where the broker cannot.
        self.client_no_local = spec.no_local and not adapter.capabilities.no_local
        self._inbox = Inbox(buffer)

    #: A durable subscriber's record (jmslike.subscriptions): set by whoever attaches one, kept up to date.
    definition: DurableDefinition | None = None

    def getMessageSelector(self) -> str | None:
        """The selector as the application wrote it (the broker gets an equivalent normalised form; a
        persistence-filtered subscription's inactive selector is apart)."""
        self.check_open()
        if self.definition is not None:
            return self.definition.selector
        return self._selector.text if self._selector is not None else None

    def getInactiveSelector(self) -> str | None:
        """MQ extra, durable subscriptions: the selector of what is kept while no subscriber is attached
        (None = everything)."""
        self.check_open()
        return self.definition.inactive_selector if self.definition is not None else None

    def getDestination(self) -> Destination:
        return self.spec.destination

    def check_open(self) -> None:
        if self.closed:
            raise IllegalStateException("the consumer is closed")
        self._check_session_open()

    def _check_session_open(self) -> None:
        raise NotImplementedError

    def check_receive_body(self, c: object, has_listener: bool) -> None:
        """JMS 2.0 ``receiveBody``: an open consumer without a listener, and a class to return the body as."""
        self.check_open()
        if has_listener:
            raise IllegalStateException("receiveBody() is not allowed while a MessageListener is set")
        if not isinstance(c, type):
            raise MessageFormatException(
                f"receiveBody needs a plain class such as str, bytes or dict, got {c!r}"
            )

    @property
    def closed(self) -> bool:
        """Closed by the application (its inbox takes no more); the connection never re-subscribes it."""
        return self._inbox.closed

    @property
    def inbox(self) -> Inbox:
        """What the wire's reader delivered and nobody took yet; only the session changes it."""
        return self._inbox

    @property
    def selector(self) -> Selector | None:
        """The parsed selector (``getMessageSelector()`` gives its text)."""
        return self._selector

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec.destination} {'closed' if self.closed else 'open'}>"


class MessageConsumer(ConsumerBase):
    """``javax.jms.MessageConsumer``: ``receive``, ``receiveNoWait``, listeners; iterable as an extra."""

    def __init__(self, session: Session, spec: SubscriptionSpec, selector: Selector | None) -> None:
        super().__init__(spec, selector, session.connection.adapter, session.connection.buffer)
        self._session = session
        self._listener: MessageListener | None = None

    # -- JMS API --------------------------------------------------------------------------------------

    def receive(self, timeout_ms: int | None = None) -> Message | None:
        """Wait for the next message; ``None``/0 waits forever (as JMS ``receive()``/``receive(0)``)."""
        self.check_open()
        if self._listener is not None:
            raise IllegalStateException("receive() is not allowed while a MessageListener is set")
        deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms else None
        self._session.connection.hint_if_stopped("receive()")
        return self._session.receive_for(self, deadline)

    def receiveNoWait(self) -> Message | None:
        self.check_open()
        if self._listener is not None:
            raise IllegalStateException("receiveNoWait() is not allowed while a MessageListener is set")
        return self._session.receive_for(self, time.monotonic())

    def receive_body(self, c: type[T], timeout_ms: int | None = None, *, no_wait: bool = False) -> T | None:
        """JMS 2.0 ``JMSConsumer.receiveBody`` on this consumer: the next message's body as ``c`` (``None``
        when the wait ends empty or the message has no body). A body that is not a ``c`` raises
        MessageFormatException; in AUTO and DUPS_OK mode the message then stays for the next receive."""
        self.check_receive_body(c, self._listener is not None)
        if no_wait:
            deadline: float | None = time.monotonic()
        else:
            deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms else None
        message = self._session.receive_for(self, deadline, body_type=c)
        return None if message is None else message.getBody(c)

    def setMessageListener(self, listener: MessageListener | object | None) -> None:
        """Accepts a callable or an object with ``onMessage(message)`` (the Java shape)."""
        self.check_open()
        self._listener = as_listener(listener)
        if self._listener is not None:
            self._session.ensure_dispatcher()

    def getMessageListener(self) -> MessageListener | None:
        """The listener set, or None; IllegalStateException once closed."""
        self.check_open()
        return self._listener

    @property
    def listener(self) -> MessageListener | None:
        """The listener set, closed or not: what the session's dispatch reads (getMessageListener is the
        application's, and raises once closed)."""
        return self._listener

    def requestUpdate(self, correlationID: str | None = None) -> int:
        """Deliver (to receive or the listener) the current retained publication of every topic this
        subscription matches that passes its selector, marked ``JMS_jmslike_Retained``; return how many.
        None: NoRetainedMessageException. Only the subscription's owner may ask. With ``correlationID``
        every delivered message carries it as JMSCorrelationID (docs/retained.md)."""
        return self._session.request_update(self, correlationID)

    def close(self) -> None:
        """Stop delivery. The broker subscription is released now, or, when messages this consumer
        delivered are still unacknowledged or in the open transaction, once the session acknowledges,
        recovers, commits or rolls them back (as the ActiveMQ Java client defers it): JMS lets the
        session acknowledge them after the consumer is closed, which needs the subscription."""
        if self.closed:
            return
        # Stays routable until detached: what still arrives is handed back to the broker at detach.
        self._session.consumer_closed(self)

    def detach(self) -> None:
        """Release the broker subscription; its prefetched and unacknowledged messages go back to the broker."""
        connection = self._session.connection
        if connection.wire.is_open:
            with contextlib.suppress(JMSException):  # a lost connection detaches everything anyway
                connection.adapter.detach(connection.wire, self.spec, lambda: self._session.hand_back(self))
        connection.unregister_consumer(self)
        self._session.hand_back(self)  # what arrived after that stays with the broker's connection

    def __iter__(self) -> Iterator[Message]:
        """Pythonic extra: iterate until the consumer is closed."""
        while not self.closed:
            message = self.receive()
            if message is None:
                return
            yield message

    def __enter__(self) -> MessageConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_session_open(self) -> None:
        self._session.check_open()

    # -- for the session and the connection -----------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._session

    def end_now(self) -> None:
        """Closed and detached at once, with nothing owed: a persistence-filtered subscription's companion
        delivers through its owner and ends with it (jmslike.durable_subscriptions)."""
        self._inbox.close()
        self.detach()

    def enqueue(self, incoming: IncomingMessage) -> None:
        self._session.enqueue_for(self, Pending(incoming))

    def accepts(self, incoming: IncomingMessage) -> bool:
        """Client-side selector and noLocal, for brokers that cannot filter (topics only; see Session)."""
        connection = self._session.connection
        return client_accepts(
            incoming,
            connection.adapter,
            connection.connection_id,
            no_local=self.client_no_local,
            selector=self.client_selector,
        )

    def build_message(self, pending: Pending) -> Message:
        connection = self._session.connection
        return build_message(
            pending.incoming,
            connection.adapter.reserved_headers,
            connection.serializers,
            redelivered=pending.redelivered,
            delivery_count=pending.delivery_count,
        )


class BrowserBase:
    """What a QueueBrowser is in every API: its queue and selector (the browse itself is the API's)."""

    def __init__(self, queue: Queue, selector: Selector | None) -> None:
        self._queue = queue
        self._selector = selector
        self._closed = False

    def getQueue(self) -> Queue:
        return self._queue

    def getMessageSelector(self) -> str | None:
        return self._selector.text if self._selector is not None else None


class QueueBrowser(BrowserBase):
    """``javax.jms.QueueBrowser``: look at a queue's messages without consuming them."""

    def __init__(self, session: Session, queue: Queue, selector: Selector | None) -> None:
        super().__init__(queue, selector)
        self._session = session

    def getEnumeration(self, timeout_ms: int = 30_000) -> Iterator[Message]:
        """The queue's messages in order, as the broker sends them; each call browses afresh.

        It streams: each message is handed over as it arrives, so a long queue is not held in memory first and
        is not refused for taking longer than ``timeout_ms`` as a whole; ``timeout_ms`` bounds the wait for each
        next message (JMSException when the broker goes quiet without ending the browse). The browse
        subscription ends when the enumeration is exhausted, closed, or garbage collected."""
        if self._closed:
            raise IllegalStateException("the browser is closed")
        self._session.check_open()
        stream = self._stream(timeout_ms)
        # Run it up to its first yield: the browse subscription exists (or its refusal is raised) here, as JMS
        # has it, and from here on closing or collecting the enumeration ends the subscription.
        next(stream)
        return cast(Iterator[Message], stream)

    def __iter__(self) -> Iterator[Message]:
        return self.getEnumeration()

    def _stream(self, timeout_ms: int) -> Iterator[Message | None]:
        """Yields None once subscribed, then the messages (see :meth:`getEnumeration`)."""
        connection = self._session.connection
        spec = browse_spec(connection.next_sub_id(), self._queue, self._selector, connection.config.prefetch)
        sink = _BrowseSink(spec, connection.buffer)
        connection.register_consumer(sink)  # type: ignore[arg-type]
        try:
            connection.adapter.subscribe(connection.wire_for_use(), spec)
            yield None
            while (item := sink.next(timeout_ms / 1000)) is not None:
                message = browsed_message(item, connection.adapter, connection.serializers)
                if message is not None:
                    yield message
        finally:
            sink.stopped = True
            connection.unregister_consumer_id(spec.sub_id)
            with contextlib.suppress(JMSException):  # a lost connection ends the browse anyway
                connection.adapter.detach(connection.wire_for_use(), spec, list)

    def close(self) -> None:
        self._closed = True


class _BrowseSink:
    """Hands a browse subscription's messages from the receiver thread to the browsing thread, in order, until the
    broker says the browse ended."""

    def __init__(self, spec: SubscriptionSpec, buffer: BufferGauge) -> None:
        import threading

        self.spec = spec
        self._buffer = buffer  # a browse is no consumer's: while it waits, the wire reads on (jmslike.flow)
        self._items: deque[IncomingMessage] = deque()
        self._ended = False
        self._cond = threading.Condition()
        self.stopped = False  # the browsing side is gone: what still arrives is dropped

    @property
    def closed(self) -> bool:
        """Read by the connection like a consumer's: True, so a reconnect never re-subscribes a browse (it
        would start again from the head of the queue); the browse then ends with the timeout's JMSException."""
        return True

    def enqueue(self, incoming: IncomingMessage) -> None:  # receiver thread
        with self._cond:
            if incoming.browser_end:
                self._ended = True
            elif not self.stopped:
                self._items.append(incoming)
            self._cond.notify_all()

    def next(self, timeout_s: float) -> IncomingMessage | None:
        """The next message, or None once the broker ended the browse; JMSException after ``timeout_s`` of
        silence."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            if not self._items and not self._ended:
                with self._buffer.reading():
                    while not self._items and not self._ended:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            raise JMSException(
                                f"the broker sent nothing for {timeout_s:.1f}s during a queue browse and did not "
                                "end it"
                            )
                        self._cond.wait(remaining)
            return self._items.popleft() if self._items else None


def browse_spec(sub_id: str, queue: Queue, selector: Selector | None, prefetch: int) -> SubscriptionSpec:
    """The subscription of a queue browse (both APIs)."""
    return SubscriptionSpec(
        sub_id=sub_id,
        destination=queue,
        selector=selector.render() if selector is not None else None,
        browser=True,
        prefetch=prefetch,
    )


def browsed_message(
    item: IncomingMessage, adapter: Adapter, serializers: SerializerRegistry
) -> Message | None:
    """A browsed message as the application sees it, or None for one that expired (JMS: never handed out)."""
    if item.expired():
        return None
    return build_message(
        item, adapter.reserved_headers, serializers, item.redelivered, Pending(item).delivery_count
    )


def build_message(
    incoming: IncomingMessage,
    reserved: frozenset[str],
    serializers: SerializerRegistry,
    redelivered: bool,
    delivery_count: int,
) -> Message:
    """Decode body and properties and set every JMS header; the result is read-only, as received."""
    try:
        message = body_codec.decode_body(incoming.type_tag, incoming.body, incoming.headers, serializers)
    except MessageFormatException:
        # A body we cannot decode is still delivered, as bytes: never lose a message to a parse error.
        message = BytesMessage()
        message.writeBytes(incoming.body)
    properties = body_codec.decode_properties(incoming.property_headers, reserved, _PROVIDER_PROPERTIES)
    message.load_properties(properties)
    message.setJMSMessageID(incoming.message_id)
    message.setJMSDestination(incoming.destination)
    message.setJMSTimestamp(incoming.timestamp)
    message.setJMSDeliveryTime(incoming.delivery_time)
    message.setJMSDeliveryMode(incoming.delivery_mode)
    message.setJMSPriority(incoming.priority)
    message.setJMSExpiration(incoming.expiration)
    message.setJMSCorrelationID(incoming.correlation_id)
    message.setJMSReplyTo(incoming.reply_to)
    message.setJMSType(incoming.jms_type)
    message.setJMSRedelivered(redelivered)
    message.set_delivery_count(delivery_count)
    message.mark_received()
    return message


def parse_selector(adapter: Adapter, text: str | None, destination: Destination) -> Selector | None:
    """Parse a consumer's selector, refusing it where the broker cannot apply it honestly (see capabilities):
    where the broker cannot evaluate it, jmslike filters on topics only; on a queue that would consume other
    consumers' messages."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    parsed = parse(text)
    support = adapter.selector_placement(parsed)
    if support == "none":
        raise UnsupportedFeatureException(adapter.display_name, "message selectors")
    if support == "client" and isinstance(destination, Queue):
        if adapter.capabilities.selectors == "broker" and parsed.computes:  # this selector only
            raise UnsupportedFeatureException(
                adapter.display_name,
                "arithmetic in selectors on queues",
                f"{parsed.text!r} computes on property values, which this broker cannot do on STOMP's string "
                "properties, and a client-side filter would consume other consumers' messages; compare "
                "values without arithmetic, or have the producer set the computed value as a property",
            )
        if adapter.capabilities.selectors == "broker":  # this selector only: it compares typed values
            raise UnsupportedFeatureException(
                adapter.display_name,
                "number and boolean comparisons in selectors on queues",
                f"{parsed.text!r} compares a property as a number or boolean, but this broker keeps STOMP's "
                "properties as strings and never converts them, and a client-side filter would consume "
                "other consumers' messages; compare with string literals (weight = '10') or use a topic, "
                "where jmslike evaluates the selector",
            )
        raise UnsupportedFeatureException(
            adapter.display_name,
            "selectors on queues",
            "the broker cannot filter and a client-side filter would consume other consumers' messages",
        )
    return parsed


def as_listener(listener: object) -> Any:
    """A MessageListener as the application gave it: a callable (in jmslike.aio a coroutine function too), an
    object with ``onMessage(message)`` (the Java shape), or None (no listener)."""
    if listener is None or callable(listener):
        return listener
    on_message = getattr(listener, "onMessage", None)
    if on_message is None:
        raise JMSException(f"a MessageListener must be callable or have onMessage(), got {listener!r}")
    return on_message


def client_accepts(
    incoming: IncomingMessage,
    adapter: Adapter,
    connection_id: str,
    *,
    no_local: bool,
    selector: Selector | None,
) -> bool:
    """Whether a subscription keeps ``incoming`` where jmslike, not the broker, filters (topics only):
    ``no_local`` drops this connection's own messages, ``selector`` is a selector the broker cannot evaluate
    (None: the broker did, or there is none)."""
    if no_local and adapter.origin_of(incoming) == connection_id:
        return False
    if selector is None or incoming.selected_by_broker:
        return True
    return selector.matches(lambda name: selector_value(incoming, name))


def selector_value(incoming: IncomingMessage, name: str) -> object | None:
    """The value a selector sees for ``name``: a JMS header field or a property (typed when known)."""
    headers = {
        "JMSDeliveryMode": DeliveryMode.name(incoming.delivery_mode),
        "JMSPriority": incoming.priority,
        "JMSMessageID": incoming.message_id,
        "JMSTimestamp": incoming.timestamp,
        "JMSCorrelationID": incoming.correlation_id,
        "JMSType": incoming.jms_type,
        "JMSExpiration": incoming.expiration,
        "JMSRedelivered": incoming.redelivered,
    }
    if name in headers:
        return headers[name]
    typed = body_codec.decode_properties(incoming.property_headers, (), ()).get(name)
    return typed.value if typed is not None else None
