"""What a commit whose outcome jmslike cannot know raises, in every API (JMS: "in doubt").

TransactionRolledBackException is only for a transaction certainly not committed. When COMMIT was sent and
the answer is missing -- the connection dropped, the receipt did not come in time, or a send the broker
confirms only after COMMIT (RabbitMQ) was not confirmed -- the application gets a plain JMSException (a
ConnectionLostException for a loss) that says the outcome is unknown. The threaded and the asyncio session
raise these same exceptions.
"""

from __future__ import annotations

from collections.abc import Callable

from jmslike.exceptions import ConnectionLostException, JMSException, TransactionRolledBackException


def commit_lost() -> ConnectionLostException:
    """The connection was lost while COMMIT awaited its receipt."""
    return ConnectionLostException(
        "the connection was lost while committing; the outcome is unknown (the broker applies a "
        "transaction all or nothing): messages consumed in it come back flagged redelivered if it "
        "did not commit"
    )


def commit_in_doubt() -> JMSException:
    """COMMIT was sent and its receipt did not come within the receipt timeout."""
    return JMSException(
        "COMMIT was sent but the broker did not answer in time; the outcome is unknown (in doubt): "
        "check before sending the transaction's messages again"
    )


def deferred_receipt_error(answered: bool, error: JMSException | None) -> JMSException | None:
    """After a COMMIT that succeeded: what one of the transaction's sends whose receipt the broker holds until
    COMMIT raises -- None when the broker confirmed it (``answered`` and no ``error``)."""
    if not answered:
        return JMSException(
            "the broker committed the transaction but did not confirm all its messages in time; "
            "they may not be safe from a broker crash (in doubt)"
        )
    if isinstance(error, ConnectionLostException):
        raised = JMSException(
            "the broker committed the transaction, but the connection was lost before it confirmed all "
            "its messages: whether they are safe from a broker crash is unknown (in doubt)"
        )
    elif error is not None:
        raised = JMSException(
            f"the broker committed the transaction but refused one of its messages: {error}"
        )
    else:
        return None
    raised.__cause__ = error
    return raised


def sends_in_doubt() -> JMSException:
    """What a send confirmed only at COMMIT (RabbitMQ) hears when that COMMIT went unanswered in time."""
    return JMSException(
        "COMMIT of this send's transaction was not answered in time; whether the send was committed is unknown "
        "(in doubt)"
    )


def abandon_sends(
    settles: list[Callable[[JMSException | None], None]], error: JMSException | None = None
) -> None:
    """A transaction ended before the broker answered its sends (RabbitMQ answers them only at COMMIT): rolled
    back, or (``error``) its COMMIT in doubt. Answer them now, so their completion callbacks run (onException)
    and no later callback waits behind them; their receipts, should any still come, are discarded by the
    caller (``Wire.discard``)."""
    for settle in settles:
        settle(
            error
            or TransactionRolledBackException(
                "the transaction was rolled back before the broker confirmed this send; it was discarded"
            )
        )
