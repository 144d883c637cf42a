"""ActiveMQ Classic as a local process: generated configuration and the launcher.

Owns everything specific to running ActiveMQ Classic from an installed distribution (Debian's
``/usr/share/activemq`` or ``$ACTIVEMQ_HOME``) without its init script:

* :class:`ActiveMQConfig` and :func:`render_activemq_xml` -- a pure rendering of ``activemq.xml``
  (KahaDB under the private data dir, one STOMP connector on loopback, no JMX, no scheduler) with
  hooks for later work: extra connectors (TLS), ``persistJMSRedelivered``, destination policies,
  plugins, users, raw XML.
* :func:`render_log4j_properties` -- console logging (log4j 1.x, which Debian ships, and log4j2, which
  upstream tarballs ship); the launcher captures the JVM's stdout/stderr in ``DIR/data/activemq.log``,
  so JVM errors that happen before logging starts are in the same file.
* TLS (``tls=`` a :class:`~.tls.TLSMaterial`): a ``stomp+ssl`` connector on ``tls_port`` with the
  broker's PKCS#12 key store and the CA as trust store (``tls_need_client_auth=True`` makes clients
  present a certificate signed by it); authorization (``authorization=`` :class:`ActiveMQPermission`
  entries, rendered as an ``authorizationPlugin`` map; needs ``users``).
* :class:`ActiveMQBroker` -- the handle: ``java -jar activemq.jar start xbean:file:...`` in its own
  session; graceful stop is SIGTERM to the JVM (its shutdown hook stops the broker), kill is SIGKILL.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Final
from xml.sax.saxutils import quoteattr

from jmslike.conformance.brokers.base import DEFAULT_CREDENTIALS, BrokerNotInstalledError
from jmslike.conformance.brokers.ports import LOOPBACK, free_port
from jmslike.conformance.brokers.process import BrokerProcess, LocalBroker, RunAs
from jmslike.conformance.brokers.tls import TLSMaterial

logger = logging.getLogger(__name__)

#: Where an ActiveMQ distribution is looked for when neither an argument nor $ACTIVEMQ_HOME says.
DEFAULT_HOMES: Final = ("/usr/share/activemq", "/opt/activemq", "/opt/apache-activemq")

#: STOMP transport options: synchronous socket close (the ActiveMQ docs recommend it for STOMP, where
#: clients connect and disconnect often; it also frees sockets promptly when tests restart brokers).
DEFAULT_STOMP_OPTIONS: Final[Mapping[str, str]] = {"transport.closeAsync": "false"}

#: Where ``xstream=True`` looks for XStream and what it needs (Debian: libxstream-java, libjettison-java,
#: libxpp3-java), each as alternatives in order of preference. ActiveMQ's STOMP ``JmsFrameTranslator``
#: (MapMessages for jmslike's ``activemq_map_transformation``) needs them; Debian's broker lacks them.
XSTREAM_JAR_DIR: Final = Path("/usr/share/java")
XSTREAM_JARS: Final[tuple[tuple[str, ...], ...]] = (
    ("xstream.jar",),
    ("jettison.jar",),
    ("xpp3-min.jar", "xpp3.jar"),
)


@dataclass(frozen=True)
class TransportConnector:
    """An extra ``<transportConnector>`` (e.g. ``stomp+ssl://127.0.0.1:PORT`` or OpenWire for Java)."""

    name: str
    uri: str


@dataclass(frozen=True)
class ActiveMQUser:
    """A user of the ``simpleAuthenticationPlugin``."""

    username: str
    password: str = field(repr=False)
    groups: tuple[str, ...] = ("users",)


@dataclass(frozen=True)
class ActiveMQPermission:
    """One ``<authorizationEntry>``: which groups may read, write and create (admin) destinations
    matching ``destination`` (ActiveMQ wildcards ``.``, ``*``, ``>``). A destination no entry matches is
    closed to everyone; the entries matching a destination add up."""

    destination: str
    topic: bool = False
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    admin: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActiveMQConfig:
    """Everything :func:`render_activemq_xml` needs. Snippet fields are inserted verbatim."""

    stomp_port: int
    data_dir: str
    host: str = LOOPBACK
    broker_name: str = "jmslike"
    stomp_options: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_STOMP_OPTIONS))
    extra_connectors: tuple[TransportConnector, ...] = ()
    #: Extra or overriding attributes of ``<broker>`` (e.g. ``{"advisorySupport": "false"}``).
    broker_attributes: Mapping[str, str] = field(default_factory=dict)
    #: ``<policyEntry queue=">" persistJMSRedelivered="true"/>``: redelivery flag survives restarts.
    persist_jms_redelivered: bool = False
    #: Raw ``<policyEntry .../>`` elements.
    policy_entries_xml: str = ""
    #: Raw plugin elements inside ``<plugins>``.
    plugins_xml: str = ""
    #: Users for a ``simpleAuthenticationPlugin``; empty means no authentication (any login works).
    users: tuple[ActiveMQUser, ...] = ()
    #: Raw elements appended inside ``<broker>``.
    extra_broker_xml: str = ""
    #: TLS material for a ``stomp+ssl`` connector on ``tls_port`` (both or neither).
    tls: TLSMaterial | None = None
    tls_port: int | None = None
    #: The ``stomp+ssl`` connector demands a client certificate signed by the test CA.
    tls_need_client_auth: bool = False
    #: Authorization entries; empty means every authenticated user may do everything.
    authorization: tuple[ActiveMQPermission, ...] = ()
    memory_percent_of_heap: int = 70
    store_limit: str = "2 gb"
    temp_limit: str = "1 gb"


def _uri_with_options(base: str, options: Mapping[str, str]) -> str:
    if not options:
        return base
    return base + "?" + "&".join(f"{k}={v}" for k, v in options.items())


def stomp_uri(config: ActiveMQConfig) -> str:
    """The STOMP connector URI, e.g. ``stomp://127.0.0.1:61613?transport.closeAsync=false``."""
    return _uri_with_options(f"stomp://{config.host}:{config.stomp_port}", config.stomp_options)


def render_activemq_xml(config: ActiveMQConfig) -> str:
    """A complete ``activemq.xml`` for ``config`` (pure: no I/O)."""
    data = config.data_dir.rstrip("/")
    attributes: dict[str, str] = {
        "brokerName": config.broker_name,
        "dataDirectory": data,
        "useJmx": "false",
        "persistent": "true",
        "schedulerSupport": "true",  # JMS 2.0 delivery delay (AMQ_SCHEDULED_DELAY)
        "useShutdownHook": "true",
    }
    attributes.update(config.broker_attributes)
    attr_text = "".join(f"\n        {k}={quoteattr(v)}" for k, v in attributes.items())

    connectors = [TransportConnector("stomp", stomp_uri(config)), *config.extra_connectors]
    ssl_context = ""
    if config.tls is not None and config.tls_port is not None:
        ssl_options = dict(config.stomp_options)
        # A client certificate, when presented, must be signed by the test CA; needClientAuth demands one.
        ssl_options["needClientAuth" if config.tls_need_client_auth else "wantClientAuth"] = "true"
        uri = _uri_with_options(f"stomp+ssl://{config.host}:{config.tls_port}", ssl_options)
        connectors.append(TransportConnector("stomp+ssl", uri))
        tls = config.tls
        ssl_context = (
            "    <sslContext>\n"
            f'      <sslContext keyStore={quoteattr("file:" + str(tls.broker_keystore))} keyStoreType="pkcs12"\n'
            f"        keyStorePassword={quoteattr(tls.store_password)}\n"
            f'        trustStore={quoteattr("file:" + str(tls.truststore))} trustStoreType="pkcs12"\n'
            f"        trustStorePassword={quoteattr(tls.store_password)}/>\n"
            "    </sslContext>\n"
        )
    connector_lines = "\n".join(
        f"      <transportConnector name={quoteattr(c.name)} uri={quoteattr(c.uri)}/>" for c in connectors
    )

    policy_entries: list[str] = []
    if config.persist_jms_redelivered:
        policy_entries.append('<policyEntry queue=">" persistJMSRedelivered="true"/>')
    if config.policy_entries_xml.strip():
        policy_entries.append(config.policy_entries_xml.strip())
    policy_block = ""
    if policy_entries:
        entries = "\n".join(f"          {e}" for e in policy_entries)
        policy_block = (
            "    <destinationPolicy>\n      <policyMap>\n        <policyEntries>\n"
            f"{entries}\n"
            "        </policyEntries>\n      </policyMap>\n    </destinationPolicy>\n"
        )

    plugins: list[str] = []
    if config.users:
        users = "\n".join(
            f"            <authenticationUser username={quoteattr(u.username)} "
            f"password={quoteattr(u.password)} groups={quoteattr(','.join(u.groups))}/>"
            for u in config.users
        )
        plugins.append(
            '        <simpleAuthenticationPlugin anonymousAccessAllowed="false">\n'
            f"          <users>\n{users}\n          </users>\n"
            "        </simpleAuthenticationPlugin>"
        )
    if config.authorization:
        plugins.append(render_authorization(config))
    if config.plugins_xml.strip():
        plugins.append("        " + config.plugins_xml.strip())
    plugins_block = "    <plugins>\n" + "\n".join(plugins) + "\n    </plugins>\n" if plugins else ""

    extra = f"    {config.extra_broker_xml.strip()}\n" if config.extra_broker_xml.strip() else ""

    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by jmslike.conformance.brokers.activemq; rewritten at every start. -->
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans
         http://www.springframework.org/schema/beans/spring-beans.xsd
         http://activemq.apache.org/schema/core
         http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core"{attr_text}>
{policy_block}    <persistenceAdapter>
      <kahaDB directory={quoteattr(data + "/kahadb")}/>
    </persistenceAdapter>
    <systemUsage>
      <systemUsage>
        <memoryUsage><memoryUsage percentOfJvmHeap="{config.memory_percent_of_heap}"/></memoryUsage>
        <storeUsage><storeUsage limit={quoteattr(config.store_limit)}/></storeUsage>
        <tempUsage><tempUsage limit={quoteattr(config.temp_limit)}/></tempUsage>
      </systemUsage>
    </systemUsage>
{plugins_block}{ssl_context}    <transportConnectors>
{connector_lines}
    </transportConnectors>
{extra}  </broker>
</beans>
"""


def render_authorization(config: ActiveMQConfig) -> str:
    """The ``<authorizationPlugin>`` for ``config.authorization`` (pure). Every group of every user may
    use advisory topics and temporary destinations, which ActiveMQ's own machinery needs."""
    everyone = ",".join(sorted({g for u in config.users for g in u.groups})) or "users"
    entries: list[str] = []
    for perm in config.authorization:
        attributes = {("topic" if perm.topic else "queue"): perm.destination}
        for what, groups in (("read", perm.read), ("write", perm.write), ("admin", perm.admin)):
            if groups:
                attributes[what] = ",".join(groups)
        entries.append(
            "<authorizationEntry " + " ".join(f"{k}={quoteattr(v)}" for k, v in attributes.items()) + "/>"
        )
    entries.append(
        f'<authorizationEntry topic="ActiveMQ.Advisory.>" read="{everyone}" write="{everyone}" admin="{everyone}"/>'
    )
    lines = "\n".join(f"                {e}" for e in entries)
    return (
        "        <authorizationPlugin>\n          <map>\n            <authorizationMap>\n"
        f"              <authorizationEntries>\n{lines}\n              </authorizationEntries>\n"
        "              <tempDestinationAuthorizationEntry>\n"
        f'                <tempDestinationAuthorizationEntry read="{everyone}" write="{everyone}" admin="{everyone}"/>\n'
        "              </tempDestinationAuthorizationEntry>\n"
        "            </authorizationMap>\n          </map>\n        </authorizationPlugin>"
    )


_LOG_PATTERN = "%d{ISO8601} | %-5p | %m | %c | %t%n"
_QUIET_LOGGERS = ("org.apache.activemq.spring", "org.springframework", "org.apache.xbean")


def render_log4j_properties() -> str:
    """log4j 1.x configuration (Debian's ActiveMQ uses slf4j-log4j12): everything to the console."""
    lines = [
        "# Generated by jmslike: the launcher captures stdout in DIR/data/activemq.log",
        "log4j.rootLogger=INFO, stdout",
        *(f"log4j.logger.{name}=WARN" for name in _QUIET_LOGGERS),
        "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.stdout.layout.ConversionPattern={_LOG_PATTERN}",
    ]
    return "\n".join(lines) + "\n"


def render_log4j2_properties() -> str:
    """log4j2 configuration (upstream ActiveMQ tarballs): everything to the console."""
    lines = [
        "# Generated by jmslike: the launcher captures stdout in DIR/data/activemq.log",
        "rootLogger.level=INFO",
        "rootLogger.appenderRef.console.ref=Console",
        "appender.console.type=Console",
        "appender.console.name=Console",
        "appender.console.layout.type=PatternLayout",
        f"appender.console.layout.pattern={_LOG_PATTERN}",
    ]
    for i, name in enumerate(_QUIET_LOGGERS):
        lines += [f"logger.q{i}.name={name}", f"logger.q{i}.level=WARN"]
    return "\n".join(lines) + "\n"


def find_activemq_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The ActiveMQ distribution to run: ``explicit``, else ``$ACTIVEMQ_HOME``, else a known place.

    An explicit directory (argument or environment) is authoritative: no fallback when it is wrong.
    """
    candidates: list[tuple[Path, str]]
    if explicit is not None:
        candidates = [(Path(explicit), "the activemq_home argument")]
    elif os.environ.get("ACTIVEMQ_HOME"):
        candidates = [(Path(os.environ["ACTIVEMQ_HOME"]), "$ACTIVEMQ_HOME")]
    else:
        candidates = [(Path(p), "default location") for p in DEFAULT_HOMES]
    for home, _source in candidates:
        if (home / "bin" / "activemq.jar").is_file():
            return home
    looked = ", ".join(f"{home} ({source})" for home, source in candidates)
    raise BrokerNotInstalledError(
        f"activemq: ActiveMQ Classic is not installed: no bin/activemq.jar in {looked}. "
        "Install it with `python -m jmslike.conformance.brokers ensure activemq` "
        "(apt-get install activemq, as root on Debian/Ubuntu), set ACTIVEMQ_HOME to an unpacked "
        "distribution, or use --broker-launcher docker/external"
    )


def find_java(explicit: str | None = None) -> str:
    """The ``java`` executable: ``explicit``, ``$JAVA_HOME/bin/java`` or ``java`` on PATH."""
    if explicit:
        return explicit
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise BrokerNotInstalledError(
            "activemq: no Java runtime: `java` is not on PATH and JAVA_HOME is not set "
            "(apt-get install default-jre-headless)"
        )
    return found


def find_xstream_jars(jar_dir: Path = XSTREAM_JAR_DIR) -> list[Path]:
    """The jars ``xstream=True`` adds to the broker classpath, or BrokerNotInstalledError saying which
    are missing (so tests that need them skip with the reason)."""
    found: list[Path] = []
    missing: list[str] = []
    for alternatives in XSTREAM_JARS:
        present = [jar_dir / name for name in alternatives if (jar_dir / name).is_file()]
        if present:
            found.append(present[0])
        else:
            missing.append(" or ".join(alternatives))
    if missing:
        raise BrokerNotInstalledError(
            f"activemq: xstream=True needs {', '.join(missing)} in {jar_dir} "
            "(apt-get install libxstream-java libjettison-java libxpp3-java)"
        )
    return found


def activemq_command(
    *, java: str, home: Path, base_dir: Path, heap_mb: int, jvm_args: Sequence[str] = ()
) -> list[str]:
    """argv starting the broker in the foreground with config from ``base_dir/conf`` (pure)."""
    conf = base_dir / "conf"
    data = base_dir / "data"
    return [
        java,
        f"-Xmx{heap_mb}M",
        "-Djava.awt.headless=true",
        "-XX:+ExitOnOutOfMemoryError",
        f"-Djava.io.tmpdir={base_dir / 'tmp'}",
        f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
        f"-Dlog4j2.configurationFile=file:{conf / 'log4j2.properties'}",
        f"-Dactivemq.home={home}",
        f"-Dactivemq.base={base_dir}",
        f"-Dactivemq.conf={conf}",
        f"-Dactivemq.data={data}",
        *jvm_args,
        "-jar",
        str(home / "bin" / "activemq.jar"),
        "start",
        f"xbean:file:{conf / 'activemq.xml'}",
    ]


_CONFIG_OPTIONS: Final = frozenset(f.name for f in fields(ActiveMQConfig)) - {"stomp_port", "data_dir"}


class ActiveMQBroker(LocalBroker):
    """ActiveMQ Classic run from a local distribution. See :func:`launch` for typical use.

    ``config_options`` are extra :class:`ActiveMQConfig` fields (``persist_jms_redelivered=True``,
    ``users=(...)``, ``plugins_xml=...``); ``port`` and ``data_dir`` default to a free port and a
    temp dir, both kept across restarts.

    XStream, Jettison and XPP3 from :data:`XSTREAM_JAR_DIR` go on the broker classpath (``-Dactivemq.classpath``,
    so do not pass that property in ``jvm_args`` as well) whenever they are installed, as users run ActiveMQ:
    STOMP clients that ask for a ``transformation`` (jmslike's ``activemq_map_transformation``, MapMessages with
    Java peers) need them, and a broker without XStream answers such a client by dropping the connection.
    ``xstream=True`` demands them (missing jars raise BrokerNotInstalledError at start); ``xstream=False`` leaves
    them out.
    """

    start_timeout_s = 60.0

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        activemq_home: str | os.PathLike[str] | None = None,
        java: str | None = None,
        heap_mb: int = 512,
        jvm_args: Sequence[str] = (),
        xstream: bool | None = None,
        user: str | None = None,
        password: str | None = None,
        start_timeout_s: float | None = None,
        **config_options: object,
    ) -> None:
        unknown = sorted(set(config_options) - _CONFIG_OPTIONS)
        if unknown:
            raise TypeError(
                f"ActiveMQBroker: unknown option(s) {', '.join(unknown)}; "
                f"ActiveMQConfig options are {', '.join(sorted(_CONFIG_OPTIONS))}"
            )
        default_user, default_password = DEFAULT_CREDENTIALS["activemq"]
        users = config_options.get("users")
        if user is None and isinstance(users, tuple) and users and isinstance(users[0], ActiveMQUser):
            # With authentication on, the handle's account is the first configured user.
            default_user, default_password = users[0].username, users[0].password
        super().__init__(
            "activemq",
            port=port if port is not None else free_port(),
            user=user or default_user,
            password=password or default_password,
            data_dir=data_dir,
            start_timeout_s=start_timeout_s,
        )
        self._home_arg = activemq_home
        self._java_arg = java
        self.heap_mb = heap_mb
        self.jvm_args = tuple(jvm_args)
        self.xstream = xstream
        self._xstream_jars: list[Path] = []
        if config_options.get("tls") is not None and config_options.get("tls_port") is None:
            config_options["tls_port"] = free_port()
        self.config = ActiveMQConfig(
            stomp_port=self.port,
            data_dir=str(self.base_dir / "data"),
            **config_options,  # type: ignore[arg-type]
        )

    def _check_installation(self) -> None:
        self._home = find_activemq_home(self._home_arg)
        self._java = find_java(self._java_arg)
        self._xstream_jars = []
        if self.xstream is not False:
            try:
                self._xstream_jars = find_xstream_jars()
            except BrokerNotInstalledError:
                if self.xstream:
                    raise
                logger.info("activemq: XStream is not installed; STOMP transformations will be refused")

    @property
    def tls_port(self) -> int | None:
        """Port of the ``stomp+ssl`` connector (None without ``tls=``)."""
        return self.config.tls_port if self.config.tls is not None else None

    def _ports(self) -> dict[str, int]:
        return {"stomp": self.port, **self._client_ports()}

    def _client_ports(self) -> dict[str, int]:
        ports: dict[str, int] = {}
        if self.tls_port is not None:
            ports["stomp+ssl"] = self.tls_port
        for connector in self.config.extra_connectors:
            port_text = connector.uri.split("?", 1)[0].rsplit(":", 1)[-1]
            if port_text.isdigit():
                ports[connector.name] = int(port_text)
        return ports

    def _prepare(self) -> None:
        for sub in ("conf", "data", "tmp"):
            (self.base_dir / sub).mkdir(parents=True, exist_ok=True)
        conf = self.base_dir / "conf"
        (conf / "activemq.xml").write_text(render_activemq_xml(self.config))
        (conf / "log4j.properties").write_text(render_log4j_properties())
        (conf / "log4j2.properties").write_text(render_log4j2_properties())

    def _command(self) -> tuple[list[str], dict[str, str], RunAs | None]:
        argv = activemq_command(
            java=self._java,
            home=self._home,
            base_dir=self.base_dir,
            heap_mb=self.heap_mb,
            jvm_args=self._jvm_args(),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVEMQ_")}
        return argv, env, None

    def _jvm_args(self) -> tuple[str, ...]:
        if not self._xstream_jars:
            return self.jvm_args
        classpath = os.pathsep.join(str(jar) for jar in self._xstream_jars)
        return (f"-Dactivemq.classpath={classpath}", *self.jvm_args)

    def _console_log(self) -> Path:
        return self.base_dir / "data" / "activemq.log"

    def _log_files(self) -> list[Path]:
        return [self._console_log()]

    def _request_graceful_stop(self, proc: BrokerProcess, timeout_s: float) -> None:
        # The JVM runs the broker's shutdown hook on SIGTERM (a clean KahaDB close).
        proc.popen.terminate()
