"""JMS 2.0's simplified API: JMSContext, JMSProducer, JMSConsumer, on top of Connection and Session.

A JMSContext is a connection and one session in one object, created by ``ConnectionFactory.createContext``.
It holds no JMS rule of its own: each call goes to the Connection, Session, MessageProducer or
MessageConsumer that owns the rule, so a JMSContext behaves exactly like the JMS 1.1 objects on every
broker. What it adds is JMS 2.0's shape:

- errors are unchecked: every :class:`JMSException` leaves as its :class:`JMSRuntimeException` counterpart,
  with the checked one as its cause (``jmslike.exceptions.runtime_exception``);
- the session is created on first use, so ``setClientID`` still works right after ``createContext``;
- ``createContext(sessionMode)`` makes a sibling context on the same connection; the connection closes
  when the last context sharing it closes;
- with ``autoStart`` (the default) creating a consumer starts the connection;
- ``close()`` from one of the context's own listeners or completion callbacks is refused
  (IllegalStateRuntimeException), because it would wait for itself.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar

from jmslike.constants import DEFAULT_PRIORITY, DEFAULT_TIME_TO_LIVE, AcknowledgeMode, DeliveryMode
from jmslike.destinations import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidDestinationException,
    JMSException,
    runtime_exception,
)
from jmslike.message_factory import MessageFactoryMethods
from jmslike.messages import BytesMessage, MapMessage, Message, ObjectMessage, StreamMessage, TextMessage
from jmslike.producer_settings import (
    check_delivery_delay,
    check_delivery_mode,
    check_priority,
    check_time_to_live,
)
from jmslike.session_mode import SessionModes, check_session_mode

if TYPE_CHECKING:
    from jmslike.connection import Connection, ConnectionMetaData, ExceptionListener
    from jmslike.connection_listener import ConnectionListener
    from jmslike.consumer import MessageConsumer, QueueBrowser
    from jmslike.producer import CompletionListener, MessageProducer
    from jmslike.session import Session

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")


def unchecked(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Raise a method's JMSException as its JMS 2.0 JMSRuntimeException counterpart (cause linked)."""

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except JMSException as exc:
            raise runtime_exception(exc) from exc

    return call


def unchecked_async(
    method: Callable[Concatenate[S, P], Awaitable[R]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """:func:`unchecked` for a coroutine method (``jmslike.aio``'s JMSContext)."""

    @functools.wraps(method)
    async def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(self, *args, **kwargs)
        except JMSException as exc:
            raise runtime_exception(exc) from exc

    return call


class _Closable(Protocol):
    @property
    def closed(self) -> bool: ...


C = TypeVar("C", bound=_Closable)


class SharedConnection(Generic[C]):
    """The connection under one or more JMSContexts (of either API); closed when the last of them closes."""

    def __init__(self, connection: C) -> None:
        self.connection = connection
        self._lock = threading.Lock()
        self._users = 0

    def join(self) -> None:
        with self._lock:
            if self._users == 0 and self.connection.closed:
                raise IllegalStateException("the connection of this JMSContext is closed")
            self._users += 1

    def is_last(self) -> bool:
        with self._lock:
            return self._users == 1

    def leave(self) -> bool:
        """One context is done with the connection; True when it was the last one."""
        with self._lock:
            self._users -= 1
            return self._users == 0


class ContextBase(SessionModes, Generic[C]):
    """What a ``javax.jms.JMSContext`` is in every API: the connection it shares with its siblings, its session
    mode, autoStart, and the calls that make destinations and messages (no broker round trip). The rest is the
    API's (:class:`JMSContext`, ``jmslike.aio``'s)."""

    def __init__(self, shared: SharedConnection[C], sessionMode: int) -> None:
        self._mode = check_session_mode(sessionMode)
        self._auto_start = True
        self._closed = False
        shared.join()
        self._shared = shared
        self._connection: C = shared.connection

    @unchecked
    def createContext(self, sessionMode: int) -> Self:
        """A new context with its own session on this context's connection (JMS 2.0)."""
        self._check_open()
        return type(self)(self._shared, check_session_mode(sessionMode))

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the JMSContext is closed")

    def _check_open_unchecked(self) -> None:
        if self._closed:
            raise IllegalStateRuntimeException("the JMSContext is closed")

    def _messages(self) -> MessageFactoryMethods:
        """The context's session, created on first use (so setClientID can still come first)."""
        raise NotImplementedError

    def setAutoStart(self, autoStart: bool) -> None:
        """Whether creating a consumer starts the connection."""
        self._check_open_unchecked()
        self._auto_start = bool(autoStart)

    def getAutoStart(self) -> bool:
        """Whether creating a consumer starts the connection (default True)."""
        self._check_open_unchecked()
        return self._auto_start

    def getSessionMode(self) -> int:
        """The session mode the context was created with."""
        self._check_open_unchecked()
        return self._mode

    def getTransacted(self) -> bool:
        """Whether the context is SESSION_TRANSACTED."""
        self._check_open_unchecked()
        return self._mode == AcknowledgeMode.SESSION_TRANSACTED

    @unchecked
    def createQueue(self, queueName: str) -> Queue:
        """The Queue named ``queueName``."""
        return self._messages().createQueue(queueName)

    @unchecked
    def createTopic(self, topicName: str) -> Topic:
        """The Topic named ``topicName`` (the portable notation ``a/b/#`` works, as in Session)."""
        return self._messages().createTopic(topicName)

    @unchecked
    def createMessage(self) -> Message:
        """A Message without a body."""
        return self._messages().createMessage()

    @unchecked
    def createTextMessage(self, text: str | None = None) -> TextMessage:
        """A TextMessage holding ``text``."""
        return self._messages().createTextMessage(text)

    @unchecked
    def createBytesMessage(self) -> BytesMessage:
        """An empty BytesMessage."""
        return self._messages().createBytesMessage()

    @unchecked
    def createMapMessage(self) -> MapMessage:
        """An empty MapMessage."""
        return self._messages().createMapMessage()

    @unchecked
    def createStreamMessage(self) -> StreamMessage:
        """An empty StreamMessage."""
        return self._messages().createStreamMessage()

    @unchecked
    def createObjectMessage(self, obj: object = None, serializer: str | None = None) -> ObjectMessage:
        """An ObjectMessage, serialised by a named safe serializer (JSON by default)."""
        return self._messages().createObjectMessage(obj, serializer)


class JMSContext(ContextBase["Connection"]):
    """``javax.jms.JMSContext``: a connection and a session; see the module docstring for its rules."""

    def __init__(self, shared: SharedConnection[Connection], sessionMode: int) -> None:
        """Made by ``ConnectionFactory.createContext`` or ``JMSContext.createContext``, not directly."""
        super().__init__(shared, sessionMode)
        self._session: Session | None = None
        self._producer: MessageProducer | None = None

    # -- the session behind the context -------------------------------------------------------------

    def _messages(self) -> Session:
        return self._open_session()

    def _open_session(self) -> Session:
        """The context's session, created on first use (so setClientID can still come first)."""
        self._check_open()
        if self._session is None:
            self._session = self._connection.createSession(self._mode)
        return self._session

    def _message_producer(self) -> MessageProducer:
        """One anonymous producer per context carries every JMSProducer's sends (as in Qpid JMS)."""
        if self._producer is None:
            self._producer = self._open_session().createProducer(None)
        return self._producer

    def _consumer(self, consumer: MessageConsumer) -> JMSConsumer:
        if self._auto_start:
            self._connection.start()
        return JMSConsumer(consumer)

    # -- connection-level calls -----------------------------------------------------------------------

    @unchecked
    def getClientID(self) -> str | None:
        """The connection's client ID, or None."""
        self._check_open()
        return self._connection.getClientID()

    @unchecked
    def setClientID(self, clientID: str) -> None:
        """Set the connection's client ID; only before the context is used (the session is created then)."""
        self._check_open()
        self._connection.setClientID(clientID)

    @unchecked
    def getMetaData(self) -> ConnectionMetaData:
        """What is known about the provider and the broker."""
        self._check_open()
        return self._connection.getMetaData()

    @unchecked
    def getExceptionListener(self) -> ExceptionListener | None:
        """The connection's ExceptionListener."""
        self._check_open()
        return self._connection.getExceptionListener()

    @unchecked
    def setExceptionListener(self, listener: ExceptionListener | None) -> None:
        """Called (on a connection thread) with asynchronous errors, e.g. a lost connection."""
        self._check_open()
        self._connection.setExceptionListener(listener)

    @unchecked
    def getConnectionListener(self) -> ConnectionListener | None:
        """The connection's ConnectionListener (jmslike extra: jmslike.connection_listener)."""
        self._check_open()
        return self._connection.getConnectionListener()

    @unchecked
    def setConnectionListener(self, listener: ConnectionListener | None) -> None:
        """Told (on the ExceptionListener's thread) when a reconnecting connection loses its broker and is back."""
        self._check_open()
        self._connection.setConnectionListener(listener)

    @unchecked
    def start(self) -> None:
        """Start (or restart) delivery on the connection."""
        self._check_open()
        self._connection.start()

    @unchecked
    def stop(self) -> None:
        """Pause delivery; returns once no listener of the connection is running."""
        self._check_open()
        self._connection.stop()

    @unchecked
    def close(self) -> None:
        """Close the session (rolling back an open transaction); the connection too when this was the last
        context on it. Idempotent. Refused from the context's own listener or completion callback."""
        if self._closed:
            return
        session = self._session
        if session is not None and session.on_dispatch_thread():
            raise IllegalStateException(
                "a JMSContext cannot be closed from its own MessageListener or CompletionListener (it would "
                "wait for that callback to return); close it from another thread"
            )
        if self._shared.is_last() and self._connection.on_dispatch_thread():
            raise IllegalStateException(
                "the last JMSContext of a connection cannot be closed from a listener of that connection "
                "(closing the connection waits for its listeners); close it from another thread"
            )
        self._closed = True
        if session is not None:
            session.close()
        if self._shared.leave():
            self._connection.close()

    def __enter__(self) -> JMSContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<JMSContext mode={self._mode} {state} on {self._connection!r}>"

    # -- session-level calls --------------------------------------------------------------------------

    @unchecked
    def commit(self) -> None:
        """Commit the context's transaction (SESSION_TRANSACTED): Session.commit."""
        self._open_session().commit()

    @unchecked
    def rollback(self) -> None:
        """Roll back the context's transaction; consumed messages come back flagged redelivered."""
        self._open_session().rollback()

    @unchecked
    def recover(self) -> None:
        """Redeliver, flagged, every message consumed and not acknowledged (not in a transacted context)."""
        self._open_session().recover()

    @unchecked
    def acknowledge(self) -> None:
        """Acknowledge every message this context consumed so far (CLIENT_ACKNOWLEDGE; no effect otherwise)."""
        self._open_session().acknowledge_delivered()

    @unchecked
    def createTemporaryQueue(self) -> TemporaryQueue:
        """A temporary queue that lives as long as the context's connection."""
        return self._open_session().createTemporaryQueue()

    @unchecked
    def createTemporaryTopic(self) -> TemporaryTopic:
        """A temporary topic that lives as long as the context's connection."""
        return self._open_session().createTemporaryTopic()

    @unchecked
    def createProducer(self) -> JMSProducer:
        """A JMSProducer: fluent settings, then ``send(destination, body)``."""
        self._open_session()
        return JMSProducer(self)

    @unchecked
    def createConsumer(
        self, destination: Destination, messageSelector: str | None = None, noLocal: bool = False
    ) -> JMSConsumer:
        """A consumer on ``destination``; starts the connection when autoStart is on."""
        return self._consumer(self._open_session().createConsumer(destination, messageSelector, noLocal))

    @unchecked
    def createDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None, noLocal: bool = False
    ) -> JMSConsumer:
        """A consumer on the unshared durable subscription (client ID, ``name``)."""
        return self._consumer(
            self._open_session().createDurableConsumer(topic, name, messageSelector, noLocal)
        )

    @unchecked
    def createSharedConsumer(
        self, topic: Topic, sharedSubscriptionName: str, messageSelector: str | None = None
    ) -> JMSConsumer:
        """A consumer on the shared non-durable subscription (``sharedSubscriptionName``, client ID or none)."""
        session = self._open_session()
        return self._consumer(session.createSharedConsumer(topic, sharedSubscriptionName, messageSelector))

    @unchecked
    def createSharedDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None
    ) -> JMSConsumer:
        """A consumer on the shared durable subscription (``name``, client ID or none)."""
        return self._consumer(self._open_session().createSharedDurableConsumer(topic, name, messageSelector))

    @unchecked
    def createBrowser(self, queue: Queue, messageSelector: str | None = None) -> QueueBrowser:
        """A QueueBrowser on ``queue`` (where the broker can browse)."""
        return self._open_session().createBrowser(queue, messageSelector)

    @unchecked
    def unsubscribe(self, name: str) -> None:
        """Delete the durable subscription ``name`` (unshared: of this client ID; shared: name and client ID or none)."""
        self._open_session().unsubscribe(name)

    # -- for JMSProducer ------------------------------------------------------------------------------

    def send_with(
        self,
        destination: Destination,
        message: Message,
        settings: tuple[int, int, int],
        listener: CompletionListener | None,
        disable: tuple[bool, bool],
        delivery_delay: int,
    ) -> None:
        """Send through the context's anonymous producer with one JMSProducer's settings."""
        producer = self._message_producer()
        producer.setDeliveryDelay(delivery_delay)
        producer.setDisableMessageID(disable[0])
        producer.setDisableMessageTimestamp(disable[1])
        producer.send(destination, message, *settings, completionListener=listener)


class BodyFactory(Protocol):
    """What makes a JMSProducer's body into a message: its context."""

    def createTextMessage(self, text: str | None = None) -> TextMessage: ...

    def createBytesMessage(self) -> BytesMessage: ...

    def createMapMessage(self) -> MapMessage: ...

    def createObjectMessage(self, obj: object = None, serializer: str | None = None) -> ObjectMessage: ...


class JMSProducerBase:
    """What a ``javax.jms.JMSProducer`` is in every API: its fluent settings and properties, and how a body
    becomes the message it sends. The send itself is the API's (:class:`JMSProducer`, ``jmslike.aio``'s).

    The body may be a Message, or what JMS 2.0 turns into one: ``str`` (or None) -> TextMessage, ``bytes``
    -> BytesMessage, a ``Mapping`` -> MapMessage, anything else -> ObjectMessage (serialised by the
    connection's default serializer). Properties and JMSCorrelationID / JMSType / JMSReplyTo set here are
    put on every message sent, overriding the message's own, as JMS 2.0 says.
    """

    def __init__(self) -> None:
        self._delivery_mode = DeliveryMode.PERSISTENT
        self._priority = DEFAULT_PRIORITY
        self._time_to_live = DEFAULT_TIME_TO_LIVE
        self._delivery_delay = 0
        self._async: CompletionListener | None = None
        self._disable_id = False
        self._disable_timestamp = False
        self._properties = Message()  # the property store: same names, types and conversions as a message
        self._correlation_id: str | None = None
        self._correlation_id_set = False
        self._jms_type: str | None = None
        self._jms_type_set = False
        self._reply_to: Destination | None = None
        self._reply_to_set = False

    def message_for(self, destination: object, body: object, factory: BodyFactory) -> Message:
        """The message ``send(destination, body)`` sends: the body as a message (made by ``factory``, the
        context, so its errors are already unchecked) with
        this producer's properties and headers on it."""
        if not isinstance(destination, Destination):
            raise InvalidDestinationException(
                f"send() needs a Queue or Topic (context.createQueue/createTopic), got {destination!r}"
            )
        message = _as_message(body, factory)
        for name, typed in self._properties.typed_properties().items():
            message.setObjectProperty(name, typed)
        if self._correlation_id_set:
            message.setJMSCorrelationID(self._correlation_id)
        if self._jms_type_set:
            message.setJMSType(self._jms_type)
        if self._reply_to_set:
            message.setJMSReplyTo(self._reply_to)
        return message

    @property
    def send_settings(self) -> tuple[int, int, int]:
        """(deliveryMode, priority, timeToLive), as MessageProducer.send takes them."""
        return (self._delivery_mode, self._priority, self._time_to_live)

    @property
    def disabled(self) -> tuple[bool, bool]:
        """(disableMessageID, disableMessageTimestamp)."""
        return (self._disable_id, self._disable_timestamp)

    # -- settings (fluent, as in Java) -----------------------------------------------------------------

    @unchecked
    def setDeliveryMode(self, deliveryMode: int) -> Self:
        """Set the DeliveryMode of every message this producer sends; returns the producer."""
        self._delivery_mode = check_delivery_mode(deliveryMode)
        return self

    def getDeliveryMode(self) -> int:
        """The DeliveryMode this producer gives every message it sends."""
        return self._delivery_mode

    @unchecked
    def setPriority(self, priority: int) -> Self:
        """Set the Priority of every message this producer sends; returns the producer."""
        self._priority = check_priority(priority)
        return self

    def getPriority(self) -> int:
        """The Priority this producer gives every message it sends."""
        return self._priority

    @unchecked
    def setTimeToLive(self, timeToLive: int) -> Self:
        """Set the TimeToLive of every message this producer sends; returns the producer."""
        self._time_to_live = check_time_to_live(timeToLive)
        return self

    def getTimeToLive(self) -> int:
        """The TimeToLive this producer gives every message it sends."""
        return self._time_to_live

    @unchecked
    def setDeliveryDelay(self, deliveryDelay: int) -> Self:
        """Messages are delivered no earlier than ``deliveryDelay`` ms after send (JMS 2.0); where the
        broker cannot hold them back, the first delayed send raises UnsupportedFeatureRuntimeException."""
        self._delivery_delay = check_delivery_delay(deliveryDelay)
        return self

    def getDeliveryDelay(self) -> int:
        """The DeliveryDelay this producer gives every message it sends."""
        return self._delivery_delay

    def setAsync(self, completionListener: CompletionListener | None) -> Self:
        """Sends return at once; the listener's onCompletion/onException run on the context's session
        thread (None: sends wait for the broker again)."""
        self._async = completionListener
        return self

    def getAsync(self) -> CompletionListener | None:
        """The Async this producer gives every message it sends."""
        return self._async

    def setDisableMessageID(self, value: bool) -> Self:
        """Set the DisableMessageID of every message this producer sends; returns the producer."""
        self._disable_id = bool(value)
        return self

    def getDisableMessageID(self) -> bool:
        """The DisableMessageID this producer gives every message it sends."""
        return self._disable_id

    def setDisableMessageTimestamp(self, value: bool) -> Self:
        """Set the DisableMessageTimestamp of every message this producer sends; returns the producer."""
        self._disable_timestamp = bool(value)
        return self

    def getDisableMessageTimestamp(self) -> bool:
        """The DisableMessageTimestamp this producer gives every message it sends."""
        return self._disable_timestamp

    @unchecked
    def setJMSCorrelationID(self, correlationID: str | None) -> Self:
        """Set the JMSCorrelationID of every message this producer sends; returns the producer."""
        Message().setJMSCorrelationID(correlationID)  # the message's own check, before anything is kept
        self._correlation_id, self._correlation_id_set = correlationID, True
        return self

    def getJMSCorrelationID(self) -> str | None:
        """The JMSCorrelationID this producer gives every message it sends."""
        return self._correlation_id

    @unchecked
    def setJMSType(self, type: str | None) -> Self:
        """Set the JMSType of every message this producer sends; returns the producer."""
        Message().setJMSType(type)
        self._jms_type, self._jms_type_set = type, True
        return self

    def getJMSType(self) -> str | None:
        """The JMSType this producer gives every message it sends."""
        return self._jms_type

    @unchecked
    def setJMSReplyTo(self, replyTo: Destination | None) -> Self:
        """Set the JMSReplyTo of every message this producer sends; returns the producer."""
        Message().setJMSReplyTo(replyTo)
        self._reply_to, self._reply_to_set = replyTo, True
        return self

    def getJMSReplyTo(self) -> Destination | None:
        """The JMSReplyTo this producer gives every message it sends."""
        return self._reply_to

    # -- properties --------------------------------------------------------------------------------------

    @unchecked
    def setProperty(self, name: str, value: object) -> Self:
        """Java's overloads in one: bool -> boolean, int -> int (long beyond 32 bits), float -> double,
        str -> String; a ``jmslike.properties.TypedValue`` picks the JMS type explicitly."""
        self._properties.setObjectProperty(name, value)
        return self

    def clearProperties(self) -> Self:
        """Remove every property this producer sets; returns the producer."""
        self._properties.clearProperties()
        return self

    def propertyExists(self, name: str) -> bool:
        """Whether this producer sets property ``name``."""
        return self._properties.propertyExists(name)

    def getPropertyNames(self) -> set[str]:
        """The PropertyNames this producer gives every message it sends."""
        return set(self._properties.getPropertyNames())

    @unchecked
    def getBooleanProperty(self, name: str) -> bool:
        """The property ``name`` as Boolean, converted by the JMS rules (as Message's getters)."""
        return self._properties.getBooleanProperty(name)

    @unchecked
    def getByteProperty(self, name: str) -> int:
        """The property ``name`` as Byte, converted by the JMS rules (as Message's getters)."""
        return self._properties.getByteProperty(name)

    @unchecked
    def getShortProperty(self, name: str) -> int:
        """The property ``name`` as Short, converted by the JMS rules (as Message's getters)."""
        return self._properties.getShortProperty(name)

    @unchecked
    def getIntProperty(self, name: str) -> int:
        """The property ``name`` as Int, converted by the JMS rules (as Message's getters)."""
        return self._properties.getIntProperty(name)

    @unchecked
    def getLongProperty(self, name: str) -> int:
        """The property ``name`` as Long, converted by the JMS rules (as Message's getters)."""
        return self._properties.getLongProperty(name)

    @unchecked
    def getFloatProperty(self, name: str) -> float:
        """The property ``name`` as Float, converted by the JMS rules (as Message's getters)."""
        return self._properties.getFloatProperty(name)

    @unchecked
    def getDoubleProperty(self, name: str) -> float:
        """The property ``name`` as Double, converted by the JMS rules (as Message's getters)."""
        return self._properties.getDoubleProperty(name)

    @unchecked
    def getStringProperty(self, name: str) -> str | None:
        """The property ``name`` as String, converted by the JMS rules (as Message's getters)."""
        return self._properties.getStringProperty(name)

    @unchecked
    def getObjectProperty(self, name: str) -> object:
        """The property ``name`` as Object, converted by the JMS rules (as Message's getters)."""
        return self._properties.getObjectProperty(name)


def _as_message(body: object, factory: BodyFactory) -> Message:
    if isinstance(body, Message):
        return body
    if body is None or isinstance(body, str):
        return factory.createTextMessage(body)
    if isinstance(body, bytes | bytearray | memoryview):
        message = factory.createBytesMessage()
        message.writeBytes(bytes(body))
        return message
    if isinstance(body, Mapping):
        message_map = factory.createMapMessage()
        for key, value in body.items():
            message_map.setObject(key, value)
        return message_map
    return factory.createObjectMessage(body)


class JMSProducer(JMSProducerBase):
    """``javax.jms.JMSProducer``: fluent settings, then ``send(destination, body)`` (:class:`JMSProducerBase`)."""

    def __init__(self, context: JMSContext) -> None:
        super().__init__()
        self._context = context

    @unchecked
    def send(self, destination: Destination, body: object) -> JMSProducer:
        """Send ``body`` (a Message, str, bytes, Mapping or serialisable object) to ``destination``."""
        message = self.message_for(destination, body, self._context)
        self._context.send_with(
            destination, message, self.send_settings, self._async, self.disabled, self._delivery_delay
        )
        return self


class JMSConsumer:
    """``javax.jms.JMSConsumer``: ``receive``, ``receiveBody``, listeners; iterable as an extra."""

    def __init__(self, consumer: MessageConsumer) -> None:
        self._consumer = consumer

    @unchecked
    def getMessageSelector(self) -> str | None:
        """The selector as the application wrote it, or None."""
        return self._consumer.getMessageSelector()

    @unchecked
    def receive(self, timeout: int | None = None) -> Message | None:
        """Wait for the next message; ``None``/0 waits until one comes or the consumer closes."""
        return self._consumer.receive(timeout)

    @unchecked
    def receiveNoWait(self) -> Message | None:
        """The next message if one is there now, else None."""
        return self._consumer.receiveNoWait()

    @unchecked
    def receiveBody(self, c: type[T], timeout: int | None = None) -> T | None:
        """The next message's body as ``c`` (str, bytes, dict, or an ObjectMessage's class): a body that
        is not one raises MessageFormatRuntimeException, and in AUTO/DUPS_OK mode the message stays for
        the next receive (JMS 2.0)."""
        return self._consumer.receive_body(c, timeout)

    @unchecked
    def receiveBodyNoWait(self, c: type[T]) -> T | None:
        """The next message's body as ``c`` if one is there now, else None."""
        return self._consumer.receive_body(c, no_wait=True)

    @unchecked
    def setMessageListener(self, listener: Callable[[Message], None] | object | None) -> None:
        """Deliver messages to ``listener`` (a callable or an object with onMessage) on the session thread."""
        self._consumer.setMessageListener(listener)

    @unchecked
    def getMessageListener(self) -> Callable[[Message], None] | None:
        """The listener set with setMessageListener, or None."""
        return self._consumer.getMessageListener()

    @unchecked
    def close(self) -> None:
        """Stop delivery to this consumer (a listener may close its own consumer)."""
        self._consumer.close()

    def __iter__(self) -> Iterator[Message]:
        """Pythonic extra: iterate until the consumer is closed."""
        while True:
            message = self.receive()
            if message is None:
                return
            yield message

    def __enter__(self) -> JMSConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<JMSConsumer of {self._consumer!r}>"
