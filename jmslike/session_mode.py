"""The argument rules of ``createSession`` and ``createContext``: which session mode a call asks for.

JMS 2.0 has three forms of ``Connection.createSession`` -- ``()``, ``(sessionMode)`` and
``(transacted, acknowledgeMode)`` -- and Python cannot overload, so one function reads all three. The rule
lives here, in one place, because it is easy to get silently wrong: with a plain
``createSession(transacted=False, acknowledgeMode=AUTO)`` signature, the JMS 2.0 call
``createSession(Session.CLIENT_ACKNOWLEDGE)`` puts 2 into ``transacted``, which is truthy, and gives a
*transacted* session that never acknowledges anything. Here an int is a session mode, a bool is
``transacted``, and anything else is refused with a message that says what to write instead.
"""

from __future__ import annotations

from typing import Any, Final

from jmslike.constants import AcknowledgeMode
from jmslike.exceptions import JMSException

_NAMES: Final = {
    AcknowledgeMode.SESSION_TRANSACTED: "SESSION_TRANSACTED",
    AcknowledgeMode.AUTO_ACKNOWLEDGE: "AUTO_ACKNOWLEDGE",
    AcknowledgeMode.CLIENT_ACKNOWLEDGE: "CLIENT_ACKNOWLEDGE",
    AcknowledgeMode.DUPS_OK_ACKNOWLEDGE: "DUPS_OK_ACKNOWLEDGE",
    AcknowledgeMode.INDIVIDUAL_ACKNOWLEDGE: "INDIVIDUAL_ACKNOWLEDGE",
}

_MISSING: Any = object()


def mode_name(mode: int) -> str:
    """``'CLIENT_ACKNOWLEDGE'`` for 2, and so on (for messages and reprs)."""
    return _NAMES.get(mode, repr(mode))


def check_session_mode(sessionMode: Any) -> int:
    """A JMS 2.0 ``sessionMode`` (``createSession(mode)``, ``createContext(mode)``), checked."""
    if isinstance(sessionMode, bool) or not isinstance(sessionMode, int) or sessionMode not in _NAMES:
        raise JMSException(
            f"invalid session mode {sessionMode!r}; use Session.AUTO_ACKNOWLEDGE, CLIENT_ACKNOWLEDGE, "
            "DUPS_OK_ACKNOWLEDGE, SESSION_TRANSACTED or INDIVIDUAL_ACKNOWLEDGE"
        )
    return int(sessionMode)


def session_mode(*args: Any, **kwargs: Any) -> int:
    """The session mode of ``createSession(*args, **kwargs)`` in any of its JMS forms.

    - ``()`` -> AUTO_ACKNOWLEDGE (JMS 2.0 ``createSession()``);
    - ``(sessionMode)`` or ``(sessionMode=...)`` with an int -> that mode (JMS 2.0);
    - ``(transacted)`` with a bool -> SESSION_TRANSACTED or AUTO_ACKNOWLEDGE;
    - ``(transacted, acknowledgeMode)`` (also by keyword) -> JMS 1.1: ``acknowledgeMode`` is ignored when
      ``transacted`` is true, as JMS says, and must be a non-transacted mode otherwise.
    """
    unknown = set(kwargs) - {"transacted", "acknowledgeMode", "sessionMode"}
    if unknown:
        raise JMSException(
            f"createSession() got unexpected keyword(s) {', '.join(sorted(unknown))}; it takes "
            "(sessionMode) or (transacted, acknowledgeMode)"
        )
    if len(args) > 2:
        raise JMSException(
            f"createSession() takes at most 2 arguments (transacted, acknowledgeMode), got {len(args)}"
        )
    names = ("transacted", "acknowledgeMode")[: len(args)]
    given = dict(zip(names, args, strict=True))
    for name, value in kwargs.items():
        if name in given:
            raise JMSException(f"createSession() got {name} twice (by position and by keyword)")
        given[name] = value
    if "sessionMode" in given:
        if len(given) > 1:
            raise JMSException(
                "createSession(sessionMode) takes the mode alone; do not combine it with transacted or "
                "acknowledgeMode"
            )
        return check_session_mode(given["sessionMode"])
    transacted = given.get("transacted", _MISSING)
    acknowledge_mode = given.get("acknowledgeMode", _MISSING)
    if transacted is _MISSING:
        if acknowledge_mode is _MISSING:
            return AcknowledgeMode.AUTO_ACKNOWLEDGE
        transacted = False
    if not isinstance(transacted, bool):
        if len(given) == 1 and len(args) == 1 and isinstance(transacted, int):
            return check_session_mode(transacted)  # JMS 2.0 createSession(sessionMode), by position
        raise JMSException(
            f"transacted must be True or False, got {transacted!r}; for the JMS 2.0 form pass the session "
            "mode alone: createSession(Session.CLIENT_ACKNOWLEDGE)"
        )
    if transacted:
        return AcknowledgeMode.SESSION_TRANSACTED  # JMS: acknowledgeMode is ignored
    if acknowledge_mode is _MISSING:
        return AcknowledgeMode.AUTO_ACKNOWLEDGE
    mode = check_session_mode(acknowledge_mode)
    if mode == AcknowledgeMode.SESSION_TRANSACTED:
        raise JMSException(
            "acknowledgeMode SESSION_TRANSACTED needs transacted=True; write createSession(True, "
            "Session.SESSION_TRANSACTED) or createSession(Session.SESSION_TRANSACTED)"
        )
    return mode


class SessionModes:
    """The session modes as a Session's own attributes (``Session.CLIENT_ACKNOWLEDGE``), in every API."""

    AUTO_ACKNOWLEDGE = AcknowledgeMode.AUTO_ACKNOWLEDGE
    CLIENT_ACKNOWLEDGE = AcknowledgeMode.CLIENT_ACKNOWLEDGE
    DUPS_OK_ACKNOWLEDGE = AcknowledgeMode.DUPS_OK_ACKNOWLEDGE
    SESSION_TRANSACTED = AcknowledgeMode.SESSION_TRANSACTED
    INDIVIDUAL_ACKNOWLEDGE = AcknowledgeMode.INDIVIDUAL_ACKNOWLEDGE
