"""The one exception tree of jmslike, with JMS's own names.

Every error an application can see is a :class:`JMSException`, so ported Java code that catches
``JMSException`` keeps working. Broker errors are chained (``raise ... from``) so the original ERROR
frame stays visible in tracebacks.
"""

from __future__ import annotations


class JMSException(Exception):
    """Base of every jmslike error; ``errorCode`` mirrors ``JMSException.getErrorCode()``."""

    def __init__(self, reason: str, errorCode: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.errorCode = errorCode

    def getErrorCode(self) -> str | None:
        return self.errorCode

    def getLinkedException(self) -> BaseException | None:
        """JMS 1.1 linked exception: here the chained cause."""
        return self.__cause__


class IllegalStateException(JMSException):
    """A method was called at a time the JMS state machine does not allow it."""


class InvalidClientIDException(JMSException):
    """The client ID is malformed or already in use by another live connection."""


class InvalidDestinationException(JMSException):
    """The destination is not understood, not valid for the call, or does not exist."""


class InvalidSelectorException(JMSException):
    """A message selector does not follow the JMS selector grammar."""


class JMSSecurityException(JMSException):
    """Authentication failed, or the user may not do what was asked."""


class MessageEOFException(JMSException):
    """A StreamMessage or BytesMessage was read past its end."""


class MessageFormatException(JMSException):
    """A value has a type JMS does not allow here, or cannot be converted as asked."""


class NumberFormatException(MessageFormatException, ValueError):
    """A String value does not parse as the number asked for (Java's ``NumberFormatException``).

    Java throws it outside the JMS tree; here it is also a :class:`MessageFormatException`, so code that
    catches JMS errors sees it, and a ``ValueError``, so Python code that catches parse errors does too.
    """


class MessageNotReadableException(JMSException):
    """The message body is write-only (not yet sent, or not reset)."""


class MessageNotWriteableException(JMSException):
    """The message body or properties are read-only (a received message)."""


class NoRetainedMessageException(JMSException):
    """``requestUpdate()`` found no retained publication for the subscription (none on its topics, or none
    passing its selector); IBM MQ's MQRC_NO_RETAINED_MSG."""


class ResourceAllocationException(JMSException):
    """The broker or the client ran out of a resource (memory, connections, window)."""


class TransactionInProgressException(JMSException):
    """The operation is not allowed while a transaction is in progress."""


class TransactionRolledBackException(JMSException):
    """A commit could not complete and the transaction was rolled back instead."""


class UnsupportedFeatureException(JMSException):
    """The broker cannot keep this JMS promise, so jmslike refuses instead of silently downgrading."""

    def __init__(self, broker: str, feature: str, detail: str = "") -> None:
        text = f"{broker} does not support {feature}"
        if detail:
            text += f": {detail}"
        super().__init__(text)
        self.broker = broker
        self.feature = feature


class NotYetInAioException(UnsupportedFeatureException):
    """``jmslike.aio`` does not have this feature yet, the threaded API does (docs/aio.md lists them): a gap of
    this API, not a broker's refusal; the conformance suite reports it apart."""

    def __init__(self, feature: str, detail: str = "") -> None:
        super().__init__("jmslike.aio", feature, detail or "use the threaded API (jmslike), which has it")


class UnsupportedOperationException(JMSException):
    """The call does not fit how the object was created (e.g. naming a destination on a producer that
    already has one); Java throws ``java.lang.UnsupportedOperationException`` here."""


class ConnectionLostException(JMSException):
    """The connection to the broker dropped; ``retriable`` says whether reconnecting may help."""

    retriable = True


class JMSTimeoutException(JMSException, TimeoutError):
    """A wait for the broker (receipt, connect) ran past its deadline."""


class ConfigurationError(JMSException, ValueError):
    """A connection URL or option is malformed; the message says which part and what is allowed.

    Here rather than in :mod:`jmslike.config` because :mod:`jmslike.registry` raises it too, and the config
    module reads the registry: defined there, the two modules would import each other. Not in ``__all__``
    (it is not a JMS name); :mod:`jmslike.config` still exports it."""


# -- JMS 2.0's unchecked exceptions, thrown by the simplified API (JMSContext, JMSProducer, JMSConsumer) --


class JMSRuntimeException(RuntimeError):
    """JMS 2.0 ``JMSRuntimeException``: what the simplified API raises instead of :class:`JMSException`.

    As in Java it is a separate tree (Java's is unchecked, the JMS 1.1 one checked): ported code that
    catches ``JMSRuntimeException`` around ``JMSContext`` calls keeps working, and code that catches
    ``JMSException`` around JMS 1.1 calls does not silently start catching these. The checked exception
    it wraps is its ``__cause__`` (``getCause()``), as JMS 2.0 specifies.
    """

    def __init__(
        self, detailMessage: str, errorCode: str | None = None, cause: BaseException | None = None
    ) -> None:
        super().__init__(detailMessage)
        self.reason = detailMessage
        self.errorCode = errorCode
        if cause is not None:
            self.__cause__ = cause

    def getErrorCode(self) -> str | None:
        return self.errorCode

    def getCause(self) -> BaseException | None:
        return self.__cause__


class IllegalStateRuntimeException(JMSRuntimeException):
    """Unchecked :class:`IllegalStateException`."""


class InvalidClientIDRuntimeException(JMSRuntimeException):
    """Unchecked :class:`InvalidClientIDException`."""


class InvalidDestinationRuntimeException(JMSRuntimeException):
    """Unchecked :class:`InvalidDestinationException`."""


class InvalidSelectorRuntimeException(JMSRuntimeException):
    """Unchecked :class:`InvalidSelectorException`."""


class JMSSecurityRuntimeException(JMSRuntimeException):
    """Unchecked :class:`JMSSecurityException`."""


class MessageFormatRuntimeException(JMSRuntimeException):
    """Unchecked :class:`MessageFormatException` (also: a body that ``receiveBody`` cannot return as asked)."""


class MessageNotWriteableRuntimeException(JMSRuntimeException):
    """Unchecked :class:`MessageNotWriteableException`."""


class ResourceAllocationRuntimeException(JMSRuntimeException):
    """Unchecked :class:`ResourceAllocationException`."""


class TransactionInProgressRuntimeException(JMSRuntimeException):
    """Unchecked :class:`TransactionInProgressException`."""


class TransactionRolledBackRuntimeException(JMSRuntimeException):
    """Unchecked :class:`TransactionRolledBackException`."""


class UnsupportedFeatureRuntimeException(JMSRuntimeException):
    """Unchecked :class:`UnsupportedFeatureException` (jmslike's): the broker cannot keep this promise."""

    broker: str = ""
    feature: str = ""


class ConnectionLostRuntimeException(JMSRuntimeException):
    """Unchecked :class:`ConnectionLostException` (jmslike's); ``retriable`` as there."""

    retriable = True


#: Checked class -> its unchecked counterpart; the most specific entry of a class's MRO wins.
_RUNTIME_COUNTERPARTS: dict[type[JMSException], type[JMSRuntimeException]] = {
    IllegalStateException: IllegalStateRuntimeException,
    InvalidClientIDException: InvalidClientIDRuntimeException,
    InvalidDestinationException: InvalidDestinationRuntimeException,
    InvalidSelectorException: InvalidSelectorRuntimeException,
    JMSSecurityException: JMSSecurityRuntimeException,
    MessageFormatException: MessageFormatRuntimeException,
    MessageNotWriteableException: MessageNotWriteableRuntimeException,
    ResourceAllocationException: ResourceAllocationRuntimeException,
    TransactionInProgressException: TransactionInProgressRuntimeException,
    TransactionRolledBackException: TransactionRolledBackRuntimeException,
    UnsupportedFeatureException: UnsupportedFeatureRuntimeException,
    ConnectionLostException: ConnectionLostRuntimeException,
}


def runtime_exception(exc: JMSException) -> JMSRuntimeException:
    """The unchecked exception the simplified API raises for ``exc``, with ``exc`` as its cause."""
    kind: type[JMSRuntimeException] = JMSRuntimeException
    for cls in type(exc).__mro__:
        counterpart = _RUNTIME_COUNTERPARTS.get(cls)
        if counterpart is not None:
            kind = counterpart
            break
    wrapped = kind(str(exc), exc.errorCode, exc)
    if isinstance(exc, UnsupportedFeatureException) and isinstance(
        wrapped, UnsupportedFeatureRuntimeException
    ):
        wrapped.broker, wrapped.feature = exc.broker, exc.feature
    return wrapped


__all__ = [
    "ConnectionLostException",
    "ConnectionLostRuntimeException",
    "IllegalStateException",
    "IllegalStateRuntimeException",
    "InvalidClientIDException",
    "InvalidClientIDRuntimeException",
    "InvalidDestinationException",
    "InvalidDestinationRuntimeException",
    "InvalidSelectorException",
    "InvalidSelectorRuntimeException",
    "JMSException",
    "JMSRuntimeException",
    "JMSSecurityException",
    "JMSSecurityRuntimeException",
    "JMSTimeoutException",
    "MessageEOFException",
    "MessageFormatException",
    "MessageFormatRuntimeException",
    "MessageNotReadableException",
    "MessageNotWriteableException",
    "MessageNotWriteableRuntimeException",
    "NoRetainedMessageException",
    "NotYetInAioException",
    "NumberFormatException",
    "ResourceAllocationException",
    "ResourceAllocationRuntimeException",
    "TransactionInProgressException",
    "TransactionInProgressRuntimeException",
    "TransactionRolledBackException",
    "TransactionRolledBackRuntimeException",
    "UnsupportedFeatureException",
    "UnsupportedFeatureRuntimeException",
    "UnsupportedOperationException",
]


def as_jms_exception(exc: BaseException, text: str | None = None) -> JMSException:
    """``exc`` as a JMSException for the ExceptionListener (itself when it is one and no ``text`` is given),
    with ``text`` saying where it came from and ``exc`` as its cause."""
    if isinstance(exc, JMSException) and text is None:
        return exc
    wrapped = JMSException(f"{text}: {exc!r}" if text else repr(exc))
    wrapped.__cause__ = exc
    return wrapped
