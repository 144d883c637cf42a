"""TLS, authentication, authorisation and secrecy of credentials, on real brokers.

Each broker kind gets one private "secured" broker for this module (launched by our launchers with a
TLS listener using certificates generated here, users, and per-destination permissions):

- ActiveMQ: users ``admin`` (group admins: everything) and ``limited`` (group limited: only
  destinations under ``allowed.``); ``wantClientAuth`` on the ``stomp+ssl`` connector;
- RabbitMQ: the launcher's administrator and ``limited`` whose permissions (configure/write/read
  regexes) only cover ``allowed.*`` queues; ``ssl_options.verify = verify_peer``.

The broker certificate names ``localhost`` only, so ``127.0.0.1`` is a host-name mismatch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aio_support import LoopRunner
from expectations import expected

from jmslike import (
    Connection,
    ConnectionFactory,
    DeliveryMode,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    JMSSecurityException,
    MessageFormatException,
    ObjectMessage,
    Session,
    TextMessage,
    aio,
)
from jmslike.conformance.brokers import BrokerHandle, LauncherUnavailableError, create
from jmslike.conformance.brokers.activemq import ActiveMQPermission, ActiveMQUser
from jmslike.conformance.brokers.rabbitmq import RabbitMQPermission, RabbitMQUser
from jmslike.exceptions import ConnectionLostException

pytest.importorskip("cryptography", reason="the TLS tests generate certificates with `cryptography`")

from jmslike.conformance.brokers.tls import TLSMaterial, generate

RECEIVE_MS = 10_000
ADMIN_PASSWORD = "Adm1n-s3cret-7f3a"
LIMITED_PASSWORD = "L1m1ted-s3cret-92c4"
WRONG_PASSWORD = "Wr0ng-s3cret-5d1e"
SECRETS = (ADMIN_PASSWORD, LIMITED_PASSWORD, WRONG_PASSWORD)

_secured: dict[str, BrokerHandle] = {}


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[TLSMaterial, TLSMaterial]:
    """The brokers' material (names ``localhost`` only) and an unrelated CA's, for the wrong-CA cases."""
    good = generate(tmp_path_factory.mktemp("tls-good"), names=("localhost",))
    other = generate(tmp_path_factory.mktemp("tls-other"), names=("localhost",), ca_name="some other CA")
    return good, other


@pytest.fixture(scope="module", autouse=True)
def _close_secured_brokers() -> Iterator[None]:
    yield
    while _secured:
        _secured.popitem()[1].close()


def _options(kind: str, tls: TLSMaterial) -> dict[str, Any]:
    if kind == "activemq":
        admins, limited = ("admins",), ("limited",)
        return {
            "tls": tls,
            "users": (
                ActiveMQUser("admin", ADMIN_PASSWORD, admins),
                ActiveMQUser("limited", LIMITED_PASSWORD, limited),
            ),
            "authorization": (
                ActiveMQPermission(">", read=admins, write=admins, admin=admins),
                ActiveMQPermission(">", topic=True, read=admins, write=admins, admin=admins),
                ActiveMQPermission("allowed.>", read=limited, write=limited, admin=limited),
                ActiveMQPermission("allowed.>", topic=True, read=limited, write=limited, admin=limited),
            ),
        }
    if kind == "rabbitmq":
        return {
            "tls": tls,
            "password": ADMIN_PASSWORD,
            "management": False,
            "users": (
                RabbitMQUser(
                    "limited",
                    LIMITED_PASSWORD,
                    permissions=(
                        RabbitMQPermission(
                            "/",
                            configure=r"^allowed\..*",
                            write=r"^(amq\.default|amq\.topic|allowed\..*)$",
                            read=r"^(amq\.topic|allowed\..*)$",
                        ),
                    ),
                ),
            ),
        }
    pytest.skip(f"no secured launcher configuration for {kind} (needs a local process launcher)")


@pytest.fixture
def secured(broker_kind: str, certificates: tuple[TLSMaterial, TLSMaterial]) -> BrokerHandle:
    """This module's TLS + users + permissions broker of ``broker_kind``, started on first use."""
    handle = _secured.get(broker_kind)
    if handle is None:
        try:
            handle = create(broker_kind, "process", **_options(broker_kind, certificates[0]))
        except LauncherUnavailableError as exc:
            pytest.skip(exc.reason)
        try:
            handle.start()
        except LauncherUnavailableError as exc:
            handle.close()
            pytest.skip(exc.reason)
        except BaseException:
            handle.close()
            raise
        _secured[broker_kind] = handle
    elif not handle.is_running():
        handle.start()
    return handle


def _url(handle: BrokerHandle, host: str = "localhost", tls: bool = True, **query: str) -> str:
    port = getattr(handle, "tls_port", None) if tls else handle.port
    scheme = f"{handle.kind}+ssl" if tls else handle.kind
    query_text = "&".join(f"{k}={v}" for k, v in query.items())
    return f"{scheme}://{host}:{port}" + (f"?{query_text}" if query_text else "")


@pytest.fixture
def opened() -> Iterator[list[Connection]]:
    connections: list[Connection] = []
    yield connections
    for connection in connections:
        with contextlib.suppress(JMSException):
            connection.close()


def _connect(opened: list[Connection], url: str, user: str, password: str) -> Connection:
    connection = ConnectionFactory(url).createConnection(user, password)
    opened.append(connection)
    connection.start()
    return connection


def _round_trip(connection: Connection, queue_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(queue_name)
    consumer = session.createConsumer(queue)
    session.createProducer(queue).send(session.createTextMessage("over tls"))
    got = consumer.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "over tls"
    session.close()


# -- TLS ----------------------------------------------------------------------------------------------


def test_tls_round_trip_with_the_right_ca(
    secured: BrokerHandle,
    certificates: tuple[TLSMaterial, TLSMaterial],
    opened: list[Connection],
    unique_name: str,
) -> None:
    good = certificates[0]
    connection = _connect(
        opened, _url(secured, ssl_ca_file=str(good.ca_file)), secured.user, secured.password
    )
    _round_trip(connection, f"allowed.{unique_name}")


def test_tls_with_a_client_certificate(
    secured: BrokerHandle,
    certificates: tuple[TLSMaterial, TLSMaterial],
    opened: list[Connection],
    unique_name: str,
) -> None:
    good, other = certificates
    url = _url(
        secured,
        ssl_ca_file=str(good.ca_file),
        ssl_cert_file=str(good.client_cert),
        ssl_key_file=str(good.client_key),
    )
    _round_trip(_connect(opened, url, secured.user, secured.password), f"allowed.{unique_name}")
    # A client certificate the broker's CA did not sign is refused by the broker, and we say so. The
    # refusal (a TLS alert after the handshake, TLS 1.3) races our CONNECT: repeat to meet both orders.
    bad = _url(
        secured,
        ssl_ca_file=str(good.ca_file),
        ssl_cert_file=str(other.client_cert),
        ssl_key_file=str(other.client_key),
    )
    for _ in range(10):
        with pytest.raises(JMSSecurityException, match="TLS"):
            _connect(opened, bad, secured.user, secured.password)


def test_tls_wrong_ca_fails_with_security_exception(
    secured: BrokerHandle, certificates: tuple[TLSMaterial, TLSMaterial], opened: list[Connection]
) -> None:
    other = certificates[1]
    with pytest.raises(JMSSecurityException, match="certificate verify failed"):
        _connect(opened, _url(secured, ssl_ca_file=str(other.ca_file)), secured.user, secured.password)
    # Without ssl_ca_file the system CAs are used, which do not know our test CA either.
    with pytest.raises(JMSSecurityException, match="certificate verify failed"):
        _connect(opened, _url(secured), secured.user, secured.password)


def test_tls_host_name_is_checked_unless_switched_off(
    secured: BrokerHandle,
    certificates: tuple[TLSMaterial, TLSMaterial],
    opened: list[Connection],
    unique_name: str,
) -> None:
    ca = str(certificates[0].ca_file)
    with pytest.raises(JMSSecurityException, match=r"(?i)mismatch|doesn.t match|not valid for"):
        _connect(opened, _url(secured, host="127.0.0.1", ssl_ca_file=ca), secured.user, secured.password)
    relaxed = _url(secured, host="127.0.0.1", ssl_ca_file=ca, ssl_check_hostname="false")
    _round_trip(_connect(opened, relaxed, secured.user, secured.password), f"allowed.{unique_name}")
    # Switching the host-name check off does not switch off verification of the certificate itself.
    other_ca = str(certificates[1].ca_file)
    with pytest.raises(JMSSecurityException, match="certificate verify failed"):
        _connect(
            opened,
            _url(secured, host="127.0.0.1", ssl_ca_file=other_ca, ssl_check_hostname="false"),
            secured.user,
            secured.password,
        )


def test_tls_url_against_a_plain_port_never_falls_back_to_plain(
    secured: BrokerHandle, certificates: tuple[TLSMaterial, TLSMaterial], opened: list[Connection]
) -> None:
    url = f"{secured.kind}+ssl://localhost:{secured.port}?ssl_ca_file={certificates[0].ca_file}&connect_timeout_ms=5000"
    with pytest.raises(JMSSecurityException, match="TLS handshake"):
        _connect(opened, url, secured.user, secured.password)


def test_tls_files_that_cannot_be_loaded_are_a_clear_error(secured: BrokerHandle, tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    with pytest.raises(JMSSecurityException, match=r"nope\.pem"):
        ConnectionFactory(_url(secured, ssl_ca_file=str(missing))).createConnection(
            secured.user, secured.password
        )


# -- authentication and authorisation ------------------------------------------------------------------


@pytest.mark.parametrize("user", ["limited", "nobody"])
def test_bad_credentials_are_a_security_exception(
    secured: BrokerHandle, certificates: tuple[TLSMaterial, TLSMaterial], opened: list[Connection], user: str
) -> None:
    url = _url(secured, ssl_ca_file=str(certificates[0].ca_file))
    with pytest.raises(JMSSecurityException) as raised:
        _connect(opened, url, user, WRONG_PASSWORD)
    assert WRONG_PASSWORD not in str(raised.value)
    # Over plain TCP too.
    with pytest.raises(JMSSecurityException):
        _connect(opened, _url(secured, tls=False), user, WRONG_PASSWORD)


def test_the_asyncio_api_over_tls_round_trips_and_refuses_bad_credentials(
    secured: BrokerHandle, certificates: tuple[TLSMaterial, TLSMaterial], run_loop: LoopRunner
) -> None:
    """jmslike.aio on the same TLS and login rules (adapters/async_wire.py shares the threaded wire's), on asyncio's
    event loop and on uvloop's (whose TLS is its own code)."""
    url = _url(secured, ssl_ca_file=str(certificates[0].ca_file))

    async def body() -> None:
        async with await aio.ConnectionFactory(url).createConnection(
            secured.user, secured.password
        ) as connection:
            await connection.start()
            session = await connection.createSession()
            queue = session.createQueue(f"aio-tls-{uuid.uuid4().hex[:8]}")
            consumer = await session.createConsumer(queue)
            await session.createProducer(queue).send(session.createTextMessage("over tls"))
            got = await consumer.receive(RECEIVE_MS)
            assert isinstance(got, TextMessage) and got.getText() == "over tls"
        for target in (url, _url(secured, tls=False)):
            with pytest.raises(JMSSecurityException) as raised:
                await aio.ConnectionFactory(target).createConnection("nobody", WRONG_PASSWORD)
            assert WRONG_PASSWORD not in str(raised.value)
        with pytest.raises(JMSSecurityException, match="TLS handshake"):
            await aio.ConnectionFactory(
                _url(secured, ssl_ca_file=str(certificates[1].ca_file))
            ).createConnection(secured.user, secured.password)

    run_loop(asyncio.wait_for(body(), 60))


def test_a_closed_tls_connection_never_reads_the_next_connection(
    secured: BrokerHandle, certificates: tuple[TLSMaterial, TLSMaterial], opened: list[Connection]
) -> None:
    """A closed connection's socket number goes to the next socket the process opens; a TLS reader still
    running then would read that connection's bytes. Seen as a refused plain CONNECT whose ERROR frame
    arrived without its first 5 bytes (one TLS record header), 1 pair in 30 under CPU load, before the
    transport stopped closing sockets its reader still used. Refused connections open and close fastest."""
    tls_url = _url(secured, ssl_ca_file=str(certificates[0].ca_file))
    for _ in range(60):
        with pytest.raises(JMSSecurityException):
            _connect(opened, tls_url, "nobody", WRONG_PASSWORD)
        with pytest.raises(JMSSecurityException):
            _connect(opened, _url(secured, tls=False), "nobody", WRONG_PASSWORD)


def test_send_where_not_permitted_raises_on_send(
    secured: BrokerHandle, broker_kind: str, opened: list[Connection], unique_name: str
) -> None:
    connection = _connect(opened, _url(secured, tls=False), "limited", LIMITED_PASSWORD)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    _round_trip(connection, f"allowed.{unique_name}")
    producer = session.createProducer(session.createQueue(f"denied.{unique_name}"))
    with pytest.raises(JMSSecurityException):
        producer.send(session.createTextMessage("not allowed"))
    with expected("usable-after-authorization-error", broker_kind):
        _assert_still_usable(connection, f"allowed.{unique_name}.after")


def test_a_send_refused_after_a_rolled_back_transaction_raises_the_brokers_error(
    secured: BrokerHandle, opened: list[Connection], unique_name: str
) -> None:
    """RabbitMQ answers a transactional SEND only at COMMIT, and never after ABORT (raw control: BEGIN, SEND
    receipt:s1, ABORT receipt:a1, SEND receipt:s2 gets a1 and s2 only). Its refusal of a later send names no
    receipt, so the refused frame is the oldest one still waiting: the rolled-back send must not be that one,
    or the refused send hears ConnectionLostException instead of the broker's JMSSecurityException."""
    connection = _connect(opened, _url(secured, tls=False), "limited", LIMITED_PASSWORD)
    transacted = connection.createSession(True, Session.SESSION_TRANSACTED)
    transacted.createProducer(transacted.createQueue(f"allowed.{unique_name}")).send(
        transacted.createTextMessage("rolled back")
    )
    transacted.rollback()
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(f"denied.{unique_name}"))
    with pytest.raises(JMSSecurityException):
        producer.send(session.createTextMessage("not allowed"))


def test_the_asyncio_api_raises_the_brokers_error_after_a_rolled_back_transaction(
    secured: BrokerHandle, unique_name: str
) -> None:
    """The asyncio session forgets the rolled-back sends' receipts too (see the threaded test above)."""

    async def body() -> None:
        async with await aio.ConnectionFactory(_url(secured, tls=False)).createConnection(
            "limited", LIMITED_PASSWORD
        ) as connection:
            transacted = await connection.createSession(True, Session.SESSION_TRANSACTED)
            await transacted.createProducer(transacted.createQueue(f"allowed.{unique_name}")).send(
                transacted.createTextMessage("rolled back")
            )
            await transacted.rollback()
            session = await connection.createSession()
            producer = session.createProducer(session.createQueue(f"denied.{unique_name}"))
            with pytest.raises(JMSSecurityException):
                await producer.send(session.createTextMessage("not allowed"))

    asyncio.run(asyncio.wait_for(body(), 60))


def test_refused_non_persistent_send_reaches_the_exception_listener_and_the_next_send(
    secured: BrokerHandle, broker_kind: str, opened: list[Connection], unique_name: str
) -> None:
    """A NON_PERSISTENT send does not wait for its receipt (issue #21): the broker's refusal comes later, to
    the ExceptionListener, and the producer's next send raises it with the same JMS class. RabbitMQ closes
    the connection with the refusal (deviation usable-after-authorization-error): the refused send learns
    its error when the connection goes, so the test waits for the loss to be reported there."""
    connection = _connect(opened, _url(secured, tls=False), "limited", LIMITED_PASSWORD)
    reported: list[JMSException] = []
    settled = threading.Event()

    def on_exception(exc: JMSException) -> None:
        reported.append(exc)
        closes_connection = broker_kind == "rabbitmq"
        if (
            isinstance(exc, ConnectionLostException)
            if closes_connection
            else isinstance(exc, JMSSecurityException)
        ):
            settled.set()

    connection.setExceptionListener(on_exception)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(f"denied.{unique_name}"))
    producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
    producer.send(session.createTextMessage("not allowed"))  # returns before the broker answers
    assert settled.wait(RECEIVE_MS / 1000), f"the refusal was not reported: {reported}"
    assert any(isinstance(exc, JMSSecurityException) for exc in reported), reported
    with pytest.raises(
        JMSSecurityException, match="earlier NON_PERSISTENT send of this producer was refused"
    ):
        producer.send(session.createTextMessage("after the refusal"))


def test_subscribe_where_not_permitted_raises_on_create_consumer(
    secured: BrokerHandle, broker_kind: str, opened: list[Connection], unique_name: str
) -> None:
    connection = _connect(opened, _url(secured, tls=False), "limited", LIMITED_PASSWORD)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(JMSSecurityException):
        session.createConsumer(session.createQueue(f"denied.{unique_name}"))
    with expected("usable-after-authorization-error", broker_kind):
        _assert_still_usable(connection, f"allowed.{unique_name}.after")


def _assert_still_usable(connection: Connection, queue_name: str) -> None:
    try:
        _round_trip(connection, queue_name)
    except (ConnectionLostException, JMSException) as exc:
        raise AssertionError(f"the connection is no longer usable: {exc}") from exc


# -- credentials never leak -----------------------------------------------------------------------------


def test_credentials_never_in_logs_reprs_or_errors(
    secured: BrokerHandle,
    certificates: tuple[TLSMaterial, TLSMaterial],
    opened: list[Connection],
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    good, other = certificates
    texts: list[str] = []
    plain_with_creds = _url(secured, tls=False).replace("://", f"://limited:{LIMITED_PASSWORD}@")
    factory = ConnectionFactory(plain_with_creds)
    connection = factory.createConnection()
    opened.append(connection)
    connection.start()
    _round_trip(connection, f"allowed.{unique_name}")
    texts += [repr(factory), str(factory), repr(connection), str(connection)]
    tls_connection = _connect(
        opened, _url(secured, ssl_ca_file=str(good.ca_file)), secured.user, secured.password
    )
    texts += [repr(tls_connection), str(tls_connection)]
    failures: list[Callable[[], object]] = [
        lambda: _connect(opened, _url(secured, tls=False), "limited", WRONG_PASSWORD),
        lambda: _connect(opened, _url(secured, ssl_ca_file=str(other.ca_file)), "limited", LIMITED_PASSWORD),
        lambda: _connect(opened, f"{secured.kind}://127.0.0.1:1", "limited", LIMITED_PASSWORD),
    ]
    for attempt in failures:
        with pytest.raises(JMSException) as raised:
            attempt()
        error: BaseException | None = raised.value
        while error is not None:
            texts += [str(error), repr(error)]
            error = error.__cause__ or error.__context__
    texts.append(caplog.text)
    texts += [str(record.args) for record in caplog.records]
    assert any("CONNECT" in record.getMessage() for record in caplog.records), (
        "jmslike's DEBUG log of CONNECT was not captured"
    )
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


# -- hostile input from the application and from other producers ----------------------------------------


@pytest.mark.parametrize("name", ["a\nb", "a\rb", "a\x00b", "x\nreceipt:evil", "tab\there", "\x7f"])
def test_destination_names_with_control_characters_are_refused(connection: Connection, name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    for make in (session.createQueue, session.createTopic):
        with pytest.raises(InvalidDestinationException, match="control characters"):
            make(name)


def test_selector_text_cannot_escape_into_other_headers(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    # Outside a string literal, a line break followed by header syntax is not a selector.
    with pytest.raises(InvalidSelectorException):
        session.createConsumer(topic, "color = 'red'\nselector:1 = 1")
    with pytest.raises(InvalidSelectorException):
        session.createConsumer(topic, "color = 'red'\x00MESSAGE")
    # Inside a string literal it is just text: it reaches the broker intact and selects exactly that value.
    hostile_value = "red\nselector:TRUE\\c:\x01"
    consumer = session.createConsumer(topic, "color = '" + hostile_value + "'")
    producer = session.createProducer(topic)
    for color in ("red", "TRUE", hostile_value):
        message = session.createTextMessage(color)
        message.setStringProperty("color", color)
        producer.send(message)
    got = consumer.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == hostile_value
    assert consumer.receive(1000) is None


def test_object_message_never_unpickles_what_it_receives(
    broker: Any, connection: Connection, unique_name: str, tmp_path: Path
) -> None:
    """Another producer sends a pickle that would create a file when unpickled: jmslike refuses to
    read it (no pickle serializer exists; JSON cannot run code) and the file never appears."""
    stomp = pytest.importorskip("stomp")
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Exploit(str(marker)))
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    raw = stomp.Connection12([(broker.host, broker.port)], vhost="/" if broker.kind == "rabbitmq" else None)
    raw.connect(broker.user, broker.password, wait=True)
    try:
        # Artemis's acceptor has no /queue/ prefix and needs the routing type (else: a MULTICAST address).
        artemis = broker.kind == "artemis"
        for serializer in ("pickle", "json"):
            raw.send(
                unique_name if artemis else f"/queue/{unique_name}",
                payload,
                headers={
                    "jmslike-type": "object",
                    "jmslike-serializer": serializer,
                    "persistent": "true",
                    **({"destination-type": "ANYCAST"} if artemis else {}),
                },
            )
    finally:
        raw.disconnect()
    for _ in range(2):
        got = consumer.receive(RECEIVE_MS)
        assert isinstance(got, ObjectMessage)
        with pytest.raises(MessageFormatException):
            got.getObject()
    assert not marker.exists()


class _Exploit:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def test_tls_carries_large_and_many_messages(
    secured: BrokerHandle,
    certificates: tuple[TLSMaterial, TLSMaterial],
    opened: list[Connection],
    unique_name: str,
) -> None:
    url = _url(secured, ssl_ca_file=str(certificates[0].ca_file))
    connection = _connect(opened, url, secured.user, secured.password)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(f"allowed.{unique_name}")
    consumer = session.createConsumer(queue)
    producer = session.createProducer(queue)
    big = "x" * (2 * 1024 * 1024)
    producer.send(session.createTextMessage(big))
    for i in range(200):
        producer.send(session.createTextMessage(str(i)))
    got = consumer.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == big
    for i in range(200):
        got = consumer.receive(RECEIVE_MS)
        assert isinstance(got, TextMessage) and got.getText() == str(i)


def test_tls_connection_recovers_after_a_network_drop(
    secured: BrokerHandle,
    certificates: tuple[TLSMaterial, TLSMaterial],
    opened: list[Connection],
    unique_name: str,
) -> None:
    """Reconnection makes a fresh TLS session (verified again), through our TCP fault proxy."""
    from jmslike.conformance.proxy import FaultProxy

    tls_port = getattr(secured, "tls_port", None)
    assert tls_port is not None
    with FaultProxy("127.0.0.1", tls_port) as proxy:
        url = (
            f"{secured.kind}+ssl://localhost:{proxy.port}?ssl_ca_file={certificates[0].ca_file}"
            "&reconnect=true&reconnect_attempts=30&heartbeat_ms=1000"
        )
        connection = _connect(opened, url, secured.user, secured.password)
        session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
        queue = session.createQueue(f"allowed.{unique_name}")
        consumer = session.createConsumer(queue)
        # The producer is a plain connection that the drop does not touch.
        publisher = _connect(opened, _url(secured, tls=False), secured.user, secured.password)
        publish = publisher.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = publish.createProducer(publish.createQueue(f"allowed.{unique_name}"))
        producer.send(publish.createTextMessage("before"))
        got = consumer.receive(RECEIVE_MS)
        assert isinstance(got, TextMessage) and got.getText() == "before"
        got.acknowledge()
        assert proxy.drop() >= 1
        producer.send(publish.createTextMessage("after"))
        got = consumer.receive(RECEIVE_MS * 3)  # waits through the reconnection
        assert isinstance(got, TextMessage) and got.getText() == "after"
        got.acknowledge()


@pytest.mark.parametrize("kind_options", [{"tls_need_client_auth": True}], ids=["need-client-auth"])
def test_broker_demanding_a_client_certificate(
    broker_kind: str,
    certificates: tuple[TLSMaterial, TLSMaterial],
    opened: list[Connection],
    unique_name: str,
    kind_options: dict[str, Any],
) -> None:
    """The launchers' ``tls_need_client_auth``: no certificate, no connection; ours, a working one."""
    good = certificates[0]
    options = {"tls": good, **kind_options}
    if broker_kind == "rabbitmq":
        options["management"] = False
    elif broker_kind != "activemq":
        pytest.skip(f"no local TLS launcher for {broker_kind}")
    try:
        handle = create(broker_kind, "process", **options)
    except LauncherUnavailableError as exc:
        pytest.skip(exc.reason)
    try:
        handle.start()
        with pytest.raises(JMSSecurityException, match="TLS"):
            _connect(opened, _url(handle, ssl_ca_file=str(good.ca_file)), handle.user, handle.password)
        url = _url(
            handle,
            ssl_ca_file=str(good.ca_file),
            ssl_cert_file=str(good.client_cert),
            ssl_key_file=str(good.client_key),
        )
        _round_trip(_connect(opened, url, handle.user, handle.password), f"allowed.{unique_name}")
    finally:
        for connection in opened:
            with contextlib.suppress(JMSException):
                connection.close()
        opened.clear()
        handle.close()
