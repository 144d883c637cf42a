"""createSession's argument rules (JMS 1.1 and 2.0 forms), without a broker."""

from __future__ import annotations

from typing import Any

import pytest

from jmslike import JMSException, Session
from jmslike.session_mode import check_session_mode, mode_name, session_mode


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((), {}, Session.AUTO_ACKNOWLEDGE),
        # JMS 2.0 createSession(sessionMode): the idiom that used to give a transacted session.
        ((Session.CLIENT_ACKNOWLEDGE,), {}, Session.CLIENT_ACKNOWLEDGE),
        ((Session.AUTO_ACKNOWLEDGE,), {}, Session.AUTO_ACKNOWLEDGE),
        ((Session.DUPS_OK_ACKNOWLEDGE,), {}, Session.DUPS_OK_ACKNOWLEDGE),
        ((Session.SESSION_TRANSACTED,), {}, Session.SESSION_TRANSACTED),
        ((Session.INDIVIDUAL_ACKNOWLEDGE,), {}, Session.INDIVIDUAL_ACKNOWLEDGE),
        ((), {"sessionMode": Session.CLIENT_ACKNOWLEDGE}, Session.CLIENT_ACKNOWLEDGE),
        # JMS 1.1 createSession(transacted, acknowledgeMode).
        ((False, Session.CLIENT_ACKNOWLEDGE), {}, Session.CLIENT_ACKNOWLEDGE),
        ((True, Session.CLIENT_ACKNOWLEDGE), {}, Session.SESSION_TRANSACTED),  # mode ignored, as JMS says
        ((True, Session.SESSION_TRANSACTED), {}, Session.SESSION_TRANSACTED),
        ((True,), {}, Session.SESSION_TRANSACTED),
        ((False,), {}, Session.AUTO_ACKNOWLEDGE),
        ((), {"transacted": True}, Session.SESSION_TRANSACTED),
        ((), {"acknowledgeMode": Session.CLIENT_ACKNOWLEDGE}, Session.CLIENT_ACKNOWLEDGE),
        ((False,), {"acknowledgeMode": Session.DUPS_OK_ACKNOWLEDGE}, Session.DUPS_OK_ACKNOWLEDGE),
    ],
)
def test_each_form_gives_the_mode_jms_defines(
    args: tuple[Any, ...], kwargs: dict[str, Any], expected: int
) -> None:
    assert session_mode(*args, **kwargs) == expected


def test_the_jms2_client_acknowledge_idiom_is_not_transacted() -> None:
    """Issue #16: createSession(Session.CLIENT_ACKNOWLEDGE) gave a transacted session (2 is truthy)."""
    assert session_mode(Session.CLIENT_ACKNOWLEDGE) != Session.SESSION_TRANSACTED


@pytest.mark.parametrize(
    ("args", "kwargs", "says"),
    [
        ((2, Session.AUTO_ACKNOWLEDGE), {}, "transacted must be True or False"),
        (("yes", Session.AUTO_ACKNOWLEDGE), {}, "transacted must be True or False"),
        ((None,), {}, "transacted must be True or False"),
        ((1.0,), {}, "transacted must be True or False"),
        ((), {"transacted": 1}, "transacted must be True or False"),
        ((False, 7), {}, "invalid session mode 7"),
        ((False, True), {}, "invalid session mode True"),
        ((False, Session.SESSION_TRANSACTED), {}, "needs transacted=True"),
        ((9,), {}, "invalid session mode 9"),
        ((-1,), {}, "invalid session mode -1"),
        ((), {"sessionMode": True}, "invalid session mode True"),
        ((), {"sessionMode": 1, "transacted": False}, "takes the mode alone"),
        ((False, 1, 2), {}, "at most 2 arguments"),
        ((False,), {"transacted": False}, "twice"),
        ((), {"ackMode": 1}, "unexpected keyword(s) ackMode"),
    ],
)
def test_bad_arguments_are_a_clear_jms_exception(
    args: tuple[Any, ...], kwargs: dict[str, Any], says: str
) -> None:
    with pytest.raises(JMSException, match=None) as raised:
        session_mode(*args, **kwargs)
    assert says in str(raised.value)


def test_check_session_mode_and_names() -> None:
    assert check_session_mode(Session.DUPS_OK_ACKNOWLEDGE) == 3
    with pytest.raises(JMSException):
        check_session_mode("1")
    assert mode_name(Session.CLIENT_ACKNOWLEDGE) == "CLIENT_ACKNOWLEDGE"
    assert mode_name(42) == "42"


def test_create_context_raises_the_runtime_form_in_both_apis() -> None:
    """JMS 2.0's ConnectionFactory.createContext throws JMSRuntimeException, as every simplified-API call does;
    a bad mode is refused before any connection is tried (the port here is never dialled)."""
    import asyncio

    from jmslike import ConnectionFactory, JMSRuntimeException, aio

    with pytest.raises(JMSRuntimeException, match="AUTO_ACKNOWLEDGE") as threaded:
        ConnectionFactory("activemq://127.0.0.1:1").createContext(99)
    assert isinstance(threaded.value.__cause__, JMSException)
    with pytest.raises(JMSRuntimeException, match="AUTO_ACKNOWLEDGE"):
        asyncio.run(aio.ConnectionFactory("activemq://127.0.0.1:1").createContext(99))
