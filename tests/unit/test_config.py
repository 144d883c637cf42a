"""Connection URL parsing: what users write, what it means, and the errors that say what to fix."""

from __future__ import annotations

import pytest

from jmslike.config import AdapterOption, ConfigurationError, Credentials, parse_count, parse_url


def test_plain_url() -> None:
    config = parse_url("activemq://127.0.0.1:61613")
    assert config.scheme == "activemq"
    assert config.hosts == (("127.0.0.1", 61613),)
    assert not config.ssl
    assert config.heartbeat_ms == 10_000


def test_ssl_failover_and_options() -> None:
    config = parse_url(
        "rabbitmq+ssl://a.example:61614,b.example:61615?heartbeat_ms=5000&reconnect=true&ssl_ca_file=/ca.pem"
    )
    assert config.scheme == "rabbitmq"
    assert config.ssl
    assert config.hosts == (("a.example", 61614), ("b.example", 61615))
    assert config.heartbeat_ms == 5000
    assert config.reconnect is True
    assert config.tls.ca_file == "/ca.pem"


def test_ipv6_host() -> None:
    assert parse_url("activemq://[::1]:61613").hosts == (("::1", 61613),)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("activemq://h:1?heartbeat=5", "unknown URL option 'heartbeat'"),
        ("activemq://h:1?heartbeat_ms=abc", "heartbeat_ms='abc' is invalid"),
        ("activemq://h:1?heartbeat_ms=-1", "heartbeat_ms='-1' is invalid"),
        ("activemq://h:1?reconnect=maybe", "reconnect='maybe' is invalid"),
        ("activemq://h", "needs HOST:PORT"),
        ("activemq://h:0", "outside 1-65535"),
        ("activemq://h:http", "is not a number"),
        ("activemq://", "names no host"),
        ("localhost:61613", "expected SCHEME://HOST:PORT"),
        ("activemq://h:1?ssl_ca_file=/x", "use activemq+ssl://"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_url(url)
    assert fragment in str(info.value)


def test_unknown_scheme_lists_known_ones() -> None:
    with pytest.raises(ConfigurationError, match="known: activemq, rabbitmq"):
        parse_url("kafka://h:1", known_schemes=("activemq", "rabbitmq"))


def test_credentials_in_url_never_in_repr() -> None:
    config = parse_url("activemq://alice:s3cr%40t@h:1")
    assert config.credentials.user == "alice"
    assert config.credentials.password == "s3cr@t"
    assert "s3cr" not in repr(config)
    assert "s3cr" not in config.describe()
    assert "s3cr" not in repr(Credentials("bob", "hunter2"))


def test_describe_names_the_listed_hosts_or_the_one_reached() -> None:
    """The URL a ConnectionListener is given after a reconnect: the host reached, never credentials."""
    config = parse_url("rabbitmq+ssl://alice:s3cret@a:1,b:2?reconnect=true")
    assert config.describe() == "rabbitmq+ssl://a:1,b:2"
    assert config.describe([("b", 2)]) == "rabbitmq+ssl://b:2"
    assert parse_url("activemq://[::1]:61613").describe() == "activemq://[::1]:61613"  # a URL it would parse


def test_create_connection_credentials_override_url() -> None:
    config = parse_url("activemq://alice:one@h:1").with_credentials("bob", "two")
    assert config.credentials == Credentials("bob", "two")
    assert parse_url("activemq://alice:one@h:1").with_credentials(None, None).credentials.user == "alice"


def test_a_typo_in_a_url_key_suggests_the_near_one() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'heartbeat_ms'"):
        parse_url("activemq://h:1?heartbeat_m=100", known_schemes={"activemq"})


def test_an_adapter_declares_its_own_url_options() -> None:
    """A third-party adapter's options: parsed for its scheme, defaulted when absent, refused elsewhere."""
    declared = {
        "acme": {"acme_lanes": AdapterOption(parse_count, 1, "Acme only: lanes per connection")},
        "activemq": {},
    }
    assert parse_url("acme://h:1?acme_lanes=4", adapter_options=declared).option("acme_lanes") == 4
    assert parse_url("acme://h:1", adapter_options=declared).option("acme_lanes") == 1
    with pytest.raises(ConfigurationError, match="acme:// URLs only, not activemq://"):
        parse_url("activemq://h:1?acme_lanes=4", adapter_options=declared)
    with pytest.raises(ConfigurationError, match="acme_lanes='x' is invalid"):
        parse_url("acme://h:1?acme_lanes=x", adapter_options=declared)
    with pytest.raises(KeyError, match="declares no URL option 'lanes'"):
        parse_url("acme://h:1", adapter_options=declared).option("lanes")
