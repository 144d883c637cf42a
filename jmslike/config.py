"""Connection configuration: the URL a user writes, parsed once into frozen dataclasses.

URL first (``activemq://host:61613``, ``rabbitmq+ssl://h1:61614,h2:61614?heartbeat_ms=5000``): the scheme
picks the adapter, a comma list of hosts is a failover list, and every query key is documented in
:data:`QUERY_KEYS`, or by the adapter that declares it (``Adapter.url_options``: options of one
broker). An unknown key is an error rather than silently ignored, because a typo in a reliability setting
is exactly the kind of mistake that only shows up in production.
Secrets (user, password, key password) never appear in ``repr`` or logs.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

# AdapterOption and ConfigurationError live where the registry can reach them without this module (which
# asks the registry for the adapters' options); imported as X as X so they stay part of this module's API.
from jmslike.contract import AdapterOption as AdapterOption
from jmslike.exceptions import ConfigurationError as ConfigurationError
from jmslike.registry import adapter_url_options


@dataclass(frozen=True)
class Credentials:
    """User name and password; the password is kept out of ``repr`` so it never reaches a log."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"Credentials(user={self.user!r}, password={'***' if self.password else None})"


@dataclass(frozen=True)
class TLSOptions:
    """TLS settings of a ``+ssl`` URL. The broker's certificate is always verified (against ``ca_file``
    or the system CAs); ``check_hostname=False`` only drops the host-name match, for brokers reached by
    an address their certificate does not name."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True


@dataclass(frozen=True)
class ConnectionConfig:
    """Everything needed to open a connection; built by :func:`parse_url`."""

    scheme: str
    hosts: tuple[tuple[str, int], ...]
    ssl: bool = False
    tls: TLSOptions = TLSOptions()
    credentials: Credentials = Credentials()
    vhost: str | None = None
    heartbeat_ms: int = 10_000
    connect_timeout_ms: int = 10_000
    receipt_timeout_ms: int = 30_000
    prefetch: int = 1000
    #: Bytes of message bodies the connection's consumers may hold undelivered before its wire stops
    #: reading (jmslike.flow); 0 = no byte bound, only ``prefetch``.
    buffer_bytes: int = 64 * 1024 * 1024
    #: 1024 sends and 4 MiB: with 256 and 1 MiB a producer streaming asynchronous sends waited for the window every
    #: few dozen sends, and paid for each wait (docs/performance.md, "A send window of 1024").
    send_window: int = 1024
    send_window_bytes: int = 4 * 1024 * 1024
    force_sync_send: bool = False
    #: How long the threaded API may hold a frame sent without waiting, to write it with those after it (µs;
    #: jmslike.aio holds it to the end of the loop's turn; 0 = off in both).
    send_coalesce_us: int = 1000
    reconnect: bool = False
    reconnect_attempts: int = 10
    reconnect_delay_ms: int = 200
    reconnect_max_delay_ms: int = 5_000
    management_url: str | None = None
    #: The options the scheme's adapter declares (``Adapter.url_options``), every one present, parsed.
    adapter_options: tuple[tuple[str, object], ...] = ()
    no_durable_topics: tuple[str, ...] = ()
    #: Largest frame (headers + body) accepted from the broker; a bigger one drops the connection.
    max_frame_bytes: int = 100 * 1024 * 1024
    #: Largest header block accepted from the broker.
    max_header_bytes: int = 1024 * 1024

    @property
    def adapter_name(self) -> str:
        return self.scheme

    def option(self, name: str) -> object:
        """The value of an option the adapter declared (its default when the URL does not give it)."""
        for key, value in self.adapter_options:
            if key == name:
                return value
        raise KeyError(f"{self.scheme} adapter declares no URL option {name!r}")

    def with_credentials(self, user: str | None, password: str | None) -> ConnectionConfig:
        """Credentials given to ``createConnection`` override those in the URL."""
        if user is None and password is None:
            return self
        return dataclasses.replace(self, credentials=Credentials(user, password))

    def describe(self, hosts: Sequence[tuple[str, int]] | None = None) -> str:
        """A safe one-line description for logs and errors (never credentials): the URL's hosts, or ``hosts``
        (the one a connection reached)."""
        listed = ",".join(
            f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in (self.hosts if hosts is None else hosts)
        )
        return f"{self.scheme}{'+ssl' if self.ssl else ''}://{listed}"


def parse_bool(value: str) -> bool:
    """A URL option's true/false (also 1/0, yes/no, on/off)."""
    lowered = value.lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _frame_limit(value: str) -> int:
    number = int(value)
    if number < 1024:
        raise ValueError(f"expected a byte count >= 1024, got {value!r}")
    return number


def parse_count(value: str) -> int:
    """A URL option's whole number >= 0."""
    number = int(value)
    if number < 0:
        raise ValueError(f"expected a number >= 0, got {value!r}")
    return number


#: Ceiling of ``send_coalesce_us``: a frame held for coalescing while nobody waits is late by up to this much,
#: so it must stay short.
MAX_SEND_COALESCE_US = 10_000


def _coalesce_us(value: str) -> int:
    number = parse_count(value)
    if number > MAX_SEND_COALESCE_US:
        raise ValueError(f"expected at most {MAX_SEND_COALESCE_US} (10 ms), got {value!r}")
    return number


def _names(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


# key -> (field name, parser, meaning); the README's table of query keys is this dict.
QUERY_KEYS: dict[str, tuple[str, object, str]] = {
    "heartbeat_ms": ("heartbeat_ms", parse_count, "STOMP heart-beat in both directions, 0 = off"),
    "connect_timeout_ms": ("connect_timeout_ms", parse_count, "how long CONNECT may take"),
    "receipt_timeout_ms": ("receipt_timeout_ms", parse_count, "how long a send/ack waits for a receipt"),
    "prefetch": ("prefetch", parse_count, "messages the broker may push ahead per consumer"),
    "buffer_bytes": (
        "buffer_bytes",
        parse_count,
        "bytes of message bodies a connection's consumers may hold undelivered before jmslike stops reading "
        "(0 = no byte bound)",
    ),
    "send_window": (
        "send_window",
        parse_count,
        "asynchronous sends (completion listener, NON_PERSISTENT) awaiting their receipt, per session",
    ),
    "send_window_bytes": (
        "send_window_bytes",
        parse_count,
        "bytes of message bodies of asynchronous sends awaiting their receipt, per session (0 = no bound)",
    ),
    "force_sync_send": (
        "force_sync_send",
        parse_bool,
        "every send waits for its receipt, NON_PERSISTENT ones outside a transaction too",
    ),
    "send_coalesce_us": (
        "send_coalesce_us",
        _coalesce_us,
        "how long the threaded API may hold an unwaited send to write it with the ones after it (jmslike.aio: "
        "until the end of the loop's turn); 0 = write each at once",
    ),
    "reconnect": ("reconnect", parse_bool, "reconnect and re-subscribe after a lost connection"),
    "reconnect_attempts": ("reconnect_attempts", parse_count, "attempts before giving up"),
    "reconnect_delay_ms": ("reconnect_delay_ms", parse_count, "first back-off delay (doubles)"),
    "reconnect_max_delay_ms": ("reconnect_max_delay_ms", parse_count, "back-off ceiling"),
    "vhost": ("vhost", str, "STOMP host header (RabbitMQ virtual host)"),
    "management_url": ("management_url", str, "RabbitMQ management API (default http://HOST:15672)"),
    "no_durable_topics": (
        "no_durable_topics",
        _names,
        "topics that refuse durable subscriptions: comma list of names, or prefixes ending in *",
    ),
    "max_frame_bytes": (
        "max_frame_bytes",
        _frame_limit,
        "largest frame (headers + body) accepted from the broker; a bigger one drops the connection",
    ),
    "max_header_bytes": (
        "max_header_bytes",
        _frame_limit,
        "largest frame header block accepted from the broker; a bigger one drops the connection",
    ),
    "ssl_ca_file": ("ca_file", str, "PEM file of CAs to trust (TLS)"),
    "ssl_cert_file": ("cert_file", str, "client certificate, PEM (TLS)"),
    "ssl_key_file": ("key_file", str, "client private key, PEM (TLS)"),
    "ssl_check_hostname": (
        "check_hostname",
        parse_bool,
        "TLS: the broker certificate must name the URL's host (default true; the certificate itself is always verified)",
    ),
}
_TLS_FIELDS = {"ca_file", "cert_file", "key_file", "check_hostname"}


def parse_url(
    url: str,
    known_schemes: tuple[str, ...] | None = None,
    adapter_options: Mapping[str, Mapping[str, AdapterOption]] | None = None,
) -> ConnectionConfig:
    """Parse a jmslike URL; raise :class:`ConfigurationError` saying exactly what is wrong.

    ``adapter_options`` (scheme -> the options its adapter declares) defaults to the installed adapters'."""
    if not isinstance(url, str) or "://" not in url:
        raise ConfigurationError(
            f"cannot read connection URL {url!r}: expected SCHEME://HOST:PORT such as activemq://127.0.0.1:61613"
        )
    scheme_part, rest = url.split("://", 1)
    ssl = scheme_part.endswith("+ssl")
    scheme = scheme_part[: -len("+ssl")] if ssl else scheme_part
    if known_schemes is not None and scheme not in known_schemes:
        raise ConfigurationError(
            f"unknown broker scheme {scheme!r} in URL; known: {', '.join(sorted(known_schemes))} "
            "(add '+ssl' for TLS)"
        )
    authority, _, query = rest.partition("?")
    credentials = Credentials()
    if "@" in authority:
        userinfo, authority = authority.rsplit("@", 1)
        user, _, password = userinfo.partition(":")
        credentials = Credentials(unquote(user) or None, unquote(password) or None)
    hosts = tuple(_parse_host(part, url_scheme=scheme) for part in authority.split(",") if part.strip())
    if not hosts:
        raise ConfigurationError(f"connection URL for {scheme} names no host; expected {scheme}://HOST:PORT")
    declared = adapter_url_options() if adapter_options is None else adapter_options
    own = declared.get(scheme, {})
    values: dict[str, object] = {}
    tls_values: dict[str, object] = {}
    chosen: dict[str, object] = {name: option.default for name, option in own.items()}
    for key, raw in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key in own:
            chosen[key] = _parse_option(key, raw, own[key].parse)
            continue
        owners = sorted(other for other, options in declared.items() if key in options)
        if owners:
            # Elsewhere the option would silently do nothing, and whoever set it expects what it promises.
            raise ConfigurationError(
                f"URL option {key} is for {', '.join(o + '://' for o in owners)} URLs only, not {scheme}://"
            )
        if key not in QUERY_KEYS:
            known = sorted({*QUERY_KEYS, *own})
            near = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise ConfigurationError(f"unknown URL option {key!r}; {hint}known options: {', '.join(known)}")
        field_name, parser, _ = QUERY_KEYS[key]
        (tls_values if field_name in _TLS_FIELDS else values)[field_name] = _parse_option(key, raw, parser)
    if tls_values and not ssl:
        raise ConfigurationError(
            f"TLS options {sorted(tls_values)} given for a plain connection; use {scheme}+ssl://"
        )
    return ConnectionConfig(
        scheme=scheme,
        hosts=hosts,
        ssl=ssl,
        tls=TLSOptions(**tls_values),  # type: ignore[arg-type]
        credentials=credentials,
        adapter_options=tuple(sorted(chosen.items())),
        **values,  # type: ignore[arg-type]
    )


def _parse_option(key: str, raw: str, parser: object) -> object:
    try:
        return parser(raw)  # type: ignore[operator]
    except ValueError as exc:
        raise ConfigurationError(f"URL option {key}={raw!r} is invalid: {exc}") from exc


def _parse_host(part: str, url_scheme: str) -> tuple[str, int]:
    part = part.strip()
    if part.startswith("["):
        host, _, port_text = part[1:].partition("]:")
    else:
        host, _, port_text = part.rpartition(":")
    if not host or not port_text:
        raise ConfigurationError(f"host {part!r} in {url_scheme} URL needs HOST:PORT")
    try:
        port = int(port_text)
    except ValueError as exc:
        raise ConfigurationError(f"port {port_text!r} of host {host!r} is not a number") from exc
    if not 0 < port < 65536:
        raise ConfigurationError(f"port {port} of host {host!r} is outside 1-65535")
    return host, port
