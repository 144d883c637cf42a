"""Which call a RECEIPT or ERROR frame answers: the receipt rules of one STOMP connection, with no I/O.

Both wires keep their waiting calls here -- the threaded one (:mod:`~jmslike.adapters.transport`, under its
lock, a timer for the hold) and the asyncio one (:mod:`~jmslike.adapters.async_wire`, on its loop) -- so
the rules below live once and are unit-tested without a socket:

- a RECEIPT answers the call that recorded its receipt id; an ERROR naming a receipt fails exactly that call;
- an ERROR that names no receipt (RabbitMQ's answer to a refused SEND or SUBSCRIBE, just before it closes
  the connection) *holds* the receipts that arrive for :data:`HOLD_AFTER_ERROR_S`: if the connection then
  ends, the refused frame is the oldest one still waiting (brokers process frames in order) and gets the
  broker's error, not a success on a connection about to die; if the connection survives (ActiveMQ keeps
  it), the held receipts stand;
- when the connection ends, every call still waiting is answered with the loss, and held receipts, which
  did arrive, with success;
- a call the broker will never answer (its frame was dropped with a rolled-back transaction) is discarded:
  it is gone from the book, not answered;
- a call whose caller stopped waiting (its receipt timed out) stays in the book, so a late RECEIPT or ERROR
  still settles it by the rules above, but it no longer counts as something the connection waits for
  (:attr:`ReceiptBook.busy`): a broker that never answers it must not switch the byte bound off for good.

The book never calls back: it returns what must be answered, and its owner answers outside its lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

#: How long receipts are held after an ERROR frame that answered no receipt.
HOLD_AFTER_ERROR_S = 0.5

P = TypeVar("P")


@dataclass
class Ending(Generic[P]):
    """What the end of a connection answers: the refused frame's call with the broker's text (when an
    unmatched ERROR came before the end), calls whose receipts had arrived, and calls left in doubt."""

    culprit: P | None = None
    culprit_text: str = ""
    arrived: list[P] = field(default_factory=list)
    unanswered: list[P] = field(default_factory=list)


class ReceiptBook(Generic[P]):
    """The calls of one connection waiting for receipts, keyed by receipt id, in the order they were sent."""

    __slots__ = (
        "_abandoned",
        "_ended",
        "_held",
        "_hold_until",
        "_pending",
        "_release_scheduled",
        "_unmatched_error",
    )

    def __init__(self) -> None:
        self._pending: dict[str, P] = {}
        self._abandoned: set[str] = set()  # ids in _pending whose callers gave up waiting
        self._held: list[P] = []
        self._unmatched_error: str | None = None
        self._hold_until = 0.0
        self._release_scheduled = False
        self._ended = False

    def __len__(self) -> int:
        return len(self._pending)

    @property
    def busy(self) -> bool:
        """Something still depends on the broker's next frames: a call waiting for its receipt, or receipts
        held after an ERROR that named none (the connection's end, if it comes, decides them)."""
        return (
            len(self._pending) > len(self._abandoned) or bool(self._held) or self._unmatched_error is not None
        )

    def abandon(self, call: P) -> None:
        """``call``'s caller stopped waiting (receipt timeout, or cancelled): keep it for a late answer, but stop counting it
        in :attr:`busy`. A call no longer in the book (answered meanwhile) is left alone."""
        for receipt_id, waiting in self._pending.items():
            if waiting is call:
                self._abandoned.add(receipt_id)
                return

    def discard(self, calls: Iterable[object]) -> list[str]:
        """The broker will never answer ``calls`` (it dropped their frames: a rolled-back RabbitMQ transaction's
        sends): remove them unanswered, so they neither count in :attr:`busy` nor become the refused frame at
        the end of the connection. Returns their receipt ids (the protocol forgets them too); calls no longer
        in the book are left alone."""
        wanted = {id(call) for call in calls}
        gone = [receipt_id for receipt_id, call in self._pending.items() if id(call) in wanted]
        for receipt_id in gone:
            self._take(receipt_id)
        return gone

    def _refused_one(self, answered_later: Callable[[P], bool] | None) -> str:
        """The receipt id of the call an ERROR that named none refused (see :meth:`end`)."""
        for receipt_id, call in self._pending.items():
            if receipt_id not in self._abandoned and (answered_later is None or not answered_later(call)):
                return receipt_id
        return next(iter(self._pending))

    def _take(self, receipt_id: str) -> P | None:
        self._abandoned.discard(receipt_id)
        return self._pending.pop(receipt_id, None)

    def record(self, receipt_id: str, call: P) -> None:
        """``call`` waits for ``receipt_id``; recorded before the frame's first byte is written."""
        self._pending[receipt_id] = call

    def withdraw(self, receipt_id: str) -> P | None:
        """Take back a call whose frame could not be written; None when the end of the connection already
        answered it (then its answer stands, and the writer must not report the failure a second time)."""
        return self._take(receipt_id)

    def receipt(self, receipt_id: str) -> P | None:
        """A RECEIPT arrived: the call to answer with success now, or None (unknown id, or held after an
        unmatched ERROR until :meth:`release_due` or :meth:`end`)."""
        call = self._take(receipt_id)
        if call is not None and self._unmatched_error is not None and not self._ended:
            self._held.append(call)
            return None
        return call

    def refused(self, receipt_id: str | None) -> P | None:
        """An ERROR naming ``receipt_id`` arrived: the call it fails, or None (then call :meth:`unmatched`)."""
        return None if receipt_id is None else self._take(receipt_id)

    def unmatched(self, text: str, now: float) -> bool:
        """An ERROR answering no waiting call arrived at ``now``: hold receipts until ``now`` +
        :data:`HOLD_AFTER_ERROR_S`. True when the owner must schedule :meth:`release_due` (one schedule
        at a time, however many ERROR frames arrive: a flood of them creates no timers)."""
        self._unmatched_error = text
        self._hold_until = now + HOLD_AFTER_ERROR_S
        if self._release_scheduled:
            return False
        self._release_scheduled = True
        return True

    def release_due(self, now: float) -> tuple[list[P], float | None]:
        """The scheduled release at ``now``: the held calls to answer with success (the connection survived
        the unmatched ERROR), or, when a later ERROR moved the deadline, ``([], seconds to wait on)``."""
        remaining = self._hold_until - now
        if remaining > 0 and not self._ended:
            return [], remaining
        self._release_scheduled = False
        held, self._held = self._held, []
        self._unmatched_error = None
        return held, None

    def end(self, closing: bool, answered_later: Callable[[P], bool] | None = None) -> Ending[P]:
        """The connection ended (``closing``: because this client closed it). Everything waiting is in the
        returned :class:`Ending`; the book is empty afterwards and holds no later receipt.

        The refused frame is the oldest call the broker should have answered by now: not one whose caller gave up
        (its answer may never come, a timed-out request), nor one ``answered_later`` says the broker answers only
        at some later frame (RabbitMQ's transactional SENDs, answered at COMMIT), which would otherwise take the
        error of a frame sent after it. Only when every waiting call is such is the oldest one taken."""
        self._ended = True
        ending: Ending[P] = Ending()
        if self._unmatched_error is not None and not closing:
            if self._held:
                ending.culprit = self._held.pop(0)
            elif self._pending:
                ending.culprit = self._take(self._refused_one(answered_later))
            ending.culprit_text = self._unmatched_error
        ending.arrived, self._held = self._held, []
        ending.unanswered = list(self._pending.values())
        self._pending.clear()
        self._abandoned.clear()
        return ending
