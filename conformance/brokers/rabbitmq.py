"""RabbitMQ (with its STOMP plugin) as a local process: generated configuration and the launcher.

Owns everything specific to running an installed RabbitMQ server privately:

* :class:`RabbitMQConfig`, :func:`render_rabbitmq_conf`, :func:`render_enabled_plugins` and
  :func:`rabbitmq_environment` -- pure renderings of ``rabbitmq.conf`` (STOMP, AMQP and management
  listeners on loopback, ``loopback_users = none``), the enabled-plugins file and the ``RABBITMQ_*``
  environment that points every file RabbitMQ writes into the private directory.
* TLS (``tls=`` a :class:`~.tls.TLSMaterial`): ``stomp.listeners.ssl`` on ``tls_port`` with
  ``ssl_options`` (the PEM files are copied into the private directory, which the broker user owns;
  client certificates are verified when presented, demanded with ``tls_need_client_auth=True``).
* Users and permissions (``users=`` :class:`RabbitMQUser` entries with per-vhost configure/write/read
  regexes): a definitions file loaded at boot (``load_definitions``), with salted SHA-256 password
  hashes as RabbitMQ computes them; the handle's own user stays an administrator with full rights.
* :class:`RabbitMQBroker` -- the handle. It runs the server script under ``/usr/lib/rabbitmq/bin``
  directly (not Debian's ``/usr/sbin`` wrapper, which would ``su`` and send output to
  ``/var/log/rabbitmq``), as the ``rabbitmq`` user when we are root, with ``HOME`` in the private
  directory (its own Erlang cookie) and its own ``epmd`` on a private port (``ERL_EPMD_PORT``), so
  nothing is shared with a system RabbitMQ and nothing outlives the handle. The script starts the
  Erlang VM as a child; its pid (from the pid file) is what ``kill()`` SIGKILLs. Graceful stop is
  ``rabbitmqctl -n NODE stop``.
"""

from __future__ import annotations

import base64
import contextlib
import grp
import hashlib
import json
import logging
import os
import pwd
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from jmslike.conformance.brokers.base import DEFAULT_CREDENTIALS, BrokerNotInstalledError
from jmslike.conformance.brokers.ports import LOOPBACK, free_port, port_accepts
from jmslike.conformance.brokers.process import (
    BrokerProcess,
    LocalBroker,
    RunAs,
    child_pids,
)
from jmslike.conformance.brokers.tls import TLSMaterial

logger = logging.getLogger(__name__)

#: Where the real server script is looked for (Debian first; /usr/sbin/rabbitmq-server there is a
#: wrapper that switches user with `su`, which we avoid).
DEFAULT_SERVER_SCRIPTS: Final = (
    "/usr/lib/rabbitmq/bin/rabbitmq-server",
    "/usr/local/sbin/rabbitmq-server",
    "/opt/rabbitmq/sbin/rabbitmq-server",
)
SERVER_ENV_VAR: Final = "JMSLIKE_RABBITMQ_SERVER"
DEFAULT_PLUGINS: Final = ("rabbitmq_stomp",)
MANAGEMENT_PLUGIN: Final = "rabbitmq_management"


@dataclass(frozen=True)
class RabbitMQPermission:
    """``rabbitmqctl set_permissions``: regexes over resource names (queues, exchanges; the default
    exchange is ``amq.default``). STOMP SEND to ``/queue/q`` needs configure on ``q`` (declare) and write
    on ``amq.default``; SUBSCRIBE needs configure and read on ``q``."""

    vhost: str = "/"
    configure: str = ".*"
    write: str = ".*"
    read: str = ".*"


@dataclass(frozen=True)
class RabbitMQUser:
    """A user created at boot from the definitions file."""

    name: str
    password: str = field(repr=False)
    tags: tuple[str, ...] = ()
    permissions: tuple[RabbitMQPermission, ...] = (RabbitMQPermission(),)


def rabbitmq_password_hash(password: str, salt: bytes | None = None) -> str:
    """RabbitMQ's ``rabbit_password_hashing_sha256``: base64(salt + sha256(salt + password))."""
    salt = secrets.token_bytes(4) if salt is None else salt
    return base64.b64encode(salt + hashlib.sha256(salt + password.encode()).digest()).decode()


def render_definitions(users: Sequence[RabbitMQUser]) -> str:
    """A definitions file (JSON) creating ``users``, their vhosts and permissions (pure but for salts)."""
    vhosts = sorted({p.vhost for u in users for p in u.permissions} | {"/"})
    return json.dumps(
        {
            "users": [
                {
                    "name": u.name,
                    "password_hash": rabbitmq_password_hash(u.password),
                    "hashing_algorithm": "rabbit_password_hashing_sha256",
                    "tags": ",".join(u.tags),
                }
                for u in users
            ],
            "vhosts": [{"name": v} for v in vhosts],
            "permissions": [
                {"user": u.name, "vhost": p.vhost, "configure": p.configure, "write": p.write, "read": p.read}
                for u in users
                for p in u.permissions
            ],
        },
        indent=2,
    )


@dataclass(frozen=True)
class RabbitMQConfig:
    """Everything :func:`render_rabbitmq_conf` and :func:`render_enabled_plugins` need."""

    stomp_port: int
    amqp_port: int
    management_port: int | None = None  # None: management plugin off
    host: str = LOOPBACK
    plugins: tuple[str, ...] = ()  # in addition to rabbitmq_stomp (and management when enabled)
    log_level: str = "info"
    disk_free_limit: str = "50MB"
    #: Raw ``rabbitmq.conf`` lines appended at the end.
    extra_config: str = ""
    #: TLS listener: port and the directory the broker reads ``ca.pem``/``broker.pem``/``broker.key`` from.
    tls_port: int | None = None
    tls_dir: str | None = None
    tls_need_client_auth: bool = False
    #: Definitions file loaded at boot (users, vhosts, permissions).
    definitions_file: str | None = None


def render_rabbitmq_conf(config: RabbitMQConfig) -> str:
    """``rabbitmq.conf`` (new-style sysctl format) for ``config`` (pure)."""
    lines = [
        "# Generated by jmslike.conformance.brokers.rabbitmq; rewritten at every start.",
        f"listeners.tcp.default = {config.host}:{config.amqp_port}",
        f"stomp.listeners.tcp.1 = {config.host}:{config.stomp_port}",
        "loopback_users = none",
        # The launcher captures stdout for boot errors only; the log proper is log/rabbit.log.
        "log.console = false",
        f"log.file.level = {config.log_level}",
        f"disk_free_limit.absolute = {config.disk_free_limit}",
    ]
    if config.management_port is not None:
        lines += [
            f"management.tcp.port = {config.management_port}",
            f"management.tcp.ip = {config.host}",
        ]
    if config.tls_port is not None and config.tls_dir is not None:
        tls_dir = config.tls_dir.rstrip("/")
        lines += [
            f"stomp.listeners.ssl.1 = {config.host}:{config.tls_port}",
            f"ssl_options.cacertfile = {tls_dir}/ca.pem",
            f"ssl_options.certfile = {tls_dir}/broker.pem",
            f"ssl_options.keyfile = {tls_dir}/broker.key",
            "ssl_options.verify = verify_peer",
            f"ssl_options.fail_if_no_peer_cert = {'true' if config.tls_need_client_auth else 'false'}",
        ]
    if config.definitions_file is not None:
        lines.append(f"load_definitions = {config.definitions_file}")
    if config.extra_config.strip():
        lines.append(config.extra_config.strip())
    return "\n".join(lines) + "\n"


def enabled_plugins(config: RabbitMQConfig) -> list[str]:
    plugins = list(DEFAULT_PLUGINS)
    if config.management_port is not None:
        plugins.append(MANAGEMENT_PLUGIN)
    plugins += [p for p in config.plugins if p not in plugins]
    return plugins


def render_enabled_plugins(config: RabbitMQConfig) -> str:
    """The enabled-plugins file: an Erlang list term, e.g. ``[rabbitmq_stomp,rabbitmq_management].``"""
    return "[" + ",".join(enabled_plugins(config)) + "].\n"


_APP_KEYS: Final = ("applications", "included_applications", "optional_applications")


def plugin_closure(
    plugins_dir: Path, enabled: Sequence[str], erlang_apps: Collection[str]
) -> list[Path] | None:
    """The directories under ``plugins_dir`` that ``enabled`` plugins need: ``rabbit`` and its prelaunch, the
    plugins, and what each ``ebin/APP.app`` lists as applications, transitively (an application that is neither
    here nor one of ``erlang_apps``, Erlang's own, ends the search). None when that cannot be worked out (a
    packed ``.ez`` plugin, two versions of one, something missing, an ``.app`` without its ``applications``): the
    caller then keeps RabbitMQ's whole directory.

    Why: RabbitMQ 3.10's prelaunch reads the configuration schema of every application in its plugins
    directory (``rabbit_prelaunch_conf:find_cuttlefish_schemas``, 22 schemas in Debian's 70 plugins) and its
    boot is CPU-bound here. With ``RABBITMQ_PLUGINS_DIR`` naming links to only these (27 with management) the
    same broker with the same plugins boots about a quarter faster (median 10.8 against 14.2 s;
    docs/launchers.md). ``ERL_LIBS`` still names RabbitMQ's own directory, so no module becomes unloadable."""
    apps: dict[str, Path] = {}
    for entry in plugins_dir.iterdir():
        if entry.suffix == ".ez":
            return None  # a packed plugin: its .app cannot be read here, so the whole directory is used
        if entry.is_dir():
            name = entry.name.split("-", 1)[0]  # RabbitMQ's own reading: the name ends at the first "-"
            if name in apps:
                return None  # two versions of one plugin: which RabbitMQ takes is its business
            apps[name] = entry
    wanted: list[str] = ["rabbit", "rabbitmq_prelaunch", *enabled]
    needed: dict[str, Path] = {}
    while wanted:
        app = wanted.pop()
        if app in needed:
            continue
        directory = apps.get(app)
        if directory is None:
            if app in erlang_apps:
                continue  # kernel, ssl, mnesia, ...: Erlang's own library, not a plugin
            return None  # neither a plugin here nor Erlang's: let RabbitMQ use its own directory, unchanged
        needed[app] = directory
        try:
            text = (directory / "ebin" / f"{app}.app").read_text()
        except OSError:
            return None
        if not re.search(r"\{\s*applications\s*,", text):
            return None  # not the .app shape this reads: do not guess "no dependencies"
        for key in _APP_KEYS:
            listed = re.search(r"\{\s*" + key + r"\s*,\s*\[([^\]]*)\]", text)
            if listed:
                wanted += [a.strip().strip("'") for a in listed.group(1).split(",") if a.strip()]
    return sorted(needed.values())


def erlang_applications() -> frozenset[str]:
    """The applications of the Erlang installation ``erl`` on PATH belongs to (its ``lib/NAME-VERSION``)."""
    erl = shutil.which("erl")
    if erl is None:
        return frozenset()
    lib = Path(erl).resolve().parent.parent / "lib"
    with contextlib.suppress(OSError):
        return frozenset(entry.name.split("-", 1)[0] for entry in lib.iterdir() if entry.is_dir())
    return frozenset()


def find_plugins_dir(server_script: Path) -> Path | None:
    """RabbitMQ's own plugins directory beside its ``sbin`` (Debian links ``/usr/lib/rabbitmq/bin`` there)."""
    plugins = server_script.resolve().parent.parent / "plugins"
    return plugins if plugins.is_dir() else None


_DIST_ON_LOOPBACK: Final = "-kernel inet_dist_use_interface {" + LOOPBACK.replace(".", ",") + "}"


def rabbitmq_environment(
    *, base_dir: Path, node_name: str, dist_port: int, epmd_port: int, amqp_port: int
) -> dict[str, str]:
    """The ``RABBITMQ_*``/``ERL_*`` variables that keep every file and port private (pure)."""
    conf = base_dir / "conf"
    log = base_dir / "log"
    return {
        "HOME": str(base_dir / "home"),
        "RABBITMQ_NODENAME": node_name,
        "RABBITMQ_NODE_IP_ADDRESS": LOOPBACK,
        "RABBITMQ_NODE_PORT": str(amqp_port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_MNESIA_BASE": str(base_dir / "mnesia"),
        "RABBITMQ_LOG_BASE": str(log),
        "RABBITMQ_LOGS": str(log / "rabbit.log"),
        "RABBITMQ_CONFIG_FILE": str(conf / "rabbitmq.conf"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(conf / "advanced.config"),
        "RABBITMQ_CONF_ENV_FILE": str(conf / "rabbitmq-env.conf"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(conf / "enabled_plugins"),
        "RABBITMQ_PID_FILE": str(base_dir / "rabbit.pid"),
        "ERL_EPMD_PORT": str(epmd_port),
        "ERL_EPMD_ADDRESS": LOOPBACK,
        # Erlang distribution listens on every interface unless told otherwise (seen: 0.0.0.0 on the dist port);
        # the node and rabbitmqctl's own node stay on loopback like every other port of ours.
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": _DIST_ON_LOOPBACK,
        "RABBITMQ_CTL_ERL_ARGS": _DIST_ON_LOOPBACK,
        "ERL_CRASH_DUMP": str(log / "erl_crash.dump"),
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
    }


def find_rabbitmq_server(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The RabbitMQ server script: ``explicit``, ``$JMSLIKE_RABBITMQ_SERVER`` or a known place.

    An explicit path (argument or environment) is authoritative: no fallback when it is wrong.
    """
    if explicit is not None:
        candidates = [(Path(explicit), "the rabbitmq_server argument")]
    elif os.environ.get(SERVER_ENV_VAR):
        candidates = [(Path(os.environ[SERVER_ENV_VAR]), f"${SERVER_ENV_VAR}")]
    else:
        candidates = [(Path(p), "default location") for p in DEFAULT_SERVER_SCRIPTS]
        on_path = shutil.which("rabbitmq-server")
        if on_path is not None:
            candidates.append((Path(on_path).resolve(), "PATH"))
    for script, _source in candidates:
        if script.is_file() and (script.parent / "rabbitmqctl").exists():
            return script
    looked = ", ".join(f"{script} ({source})" for script, source in candidates)
    raise BrokerNotInstalledError(
        f"rabbitmq: RabbitMQ is not installed: no rabbitmq-server script (with rabbitmqctl beside it) "
        f"at {looked}. Install it with `python -m jmslike.conformance.brokers ensure rabbitmq` "
        f"(apt-get install rabbitmq-server, as root on Debian/Ubuntu), set {SERVER_ENV_VAR} to the "
        "server script of an unpacked distribution, or use --broker-launcher docker/external"
    )


def _run_as() -> RunAs | None:
    """Root runs the broker as ``rabbitmq`` (as Debian does); anyone else runs it as themselves."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("rabbitmq")
    except KeyError:
        return None
    return RunAs(user=entry.pw_name, group=grp.getgrgid(entry.pw_gid).gr_name)


def _chown_tree(root: Path, run_as: RunAs) -> None:
    """Give ``root`` and what is in it to the broker's user; links are changed themselves, never what they
    point to (the plugin links point into the system's RabbitMQ)."""
    uid, gid = pwd.getpwnam(run_as.user).pw_uid, grp.getgrnam(run_as.group).gr_gid
    os.chown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


class RabbitMQBroker(LocalBroker):
    """RabbitMQ with the STOMP plugin (and, by default, the management plugin) run locally.

    ``management=False`` drops the management plugin (graceful stops get ~5 s faster: RabbitMQ 3.10's
    management agent waits 5 s when the node stops). ``management_port``, ``amqp_port`` and the
    Erlang ports default to free ports; all are kept across restarts.
    """

    start_timeout_s = 90.0

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        rabbitmq_server: str | os.PathLike[str] | None = None,
        management: bool = True,
        management_port: int | None = None,
        amqp_port: int | None = None,
        plugins: Sequence[str] = (),
        extra_config: str = "",
        log_level: str = "info",
        node_name: str | None = None,
        user: str | None = None,
        password: str | None = None,
        start_timeout_s: float | None = None,
        tls: TLSMaterial | None = None,
        tls_port: int | None = None,
        tls_need_client_auth: bool = False,
        users: Sequence[RabbitMQUser] = (),
    ) -> None:
        default_user, default_password = DEFAULT_CREDENTIALS["rabbitmq"]
        super().__init__(
            "rabbitmq",
            port=port if port is not None else free_port(),
            user=user or default_user,
            password=password or default_password,
            data_dir=data_dir,
            start_timeout_s=start_timeout_s,
        )
        self._server_arg = rabbitmq_server
        self.amqp_port = amqp_port if amqp_port is not None else free_port()
        if management:
            self.management_port = management_port if management_port is not None else free_port()
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.node_name = node_name or f"jmslike-{secrets.token_hex(4)}@localhost"
        self.tls = tls
        self.tls_port: int | None = None
        if tls is not None:
            self.tls_port = tls_port if tls_port is not None else free_port()
        self.users = tuple(users)
        self.config = RabbitMQConfig(
            stomp_port=self.port,
            amqp_port=self.amqp_port,
            management_port=self.management_port,
            plugins=tuple(plugins),
            extra_config=extra_config,
            log_level=log_level,
            tls_port=self.tls_port,
            tls_dir=str(self.base_dir / "conf" / "tls") if tls is not None else None,
            tls_need_client_auth=tls_need_client_auth,
            definitions_file=str(self.base_dir / "conf" / "definitions.json") if self.users else None,
        )
        self._epmd: subprocess.Popen[bytes] | None = None
        self._run_as = _run_as()
        self._plugins_dir: Path | None = (
            None  # links to the plugins it needs (_link_plugins), else RabbitMQ's own
        )

    # -- LocalBroker hooks ------------------------------------------------------------------------

    def _check_installation(self) -> None:
        self._server = find_rabbitmq_server(self._server_arg)
        self._ctl = self._server.parent / "rabbitmqctl"
        epmd = shutil.which("epmd")
        if epmd is None:
            erlang_epmd = sorted(Path("/usr/lib/erlang").glob("erts-*/bin/epmd"))
            if not erlang_epmd:
                raise BrokerNotInstalledError(
                    "rabbitmq: Erlang's `epmd` was not found on PATH or under /usr/lib/erlang "
                    "(apt-get install erlang-base)"
                )
            epmd = str(erlang_epmd[-1])
        self._epmd_path = epmd

    def _client_ports(self) -> dict[str, int]:
        ports: dict[str, int] = {}
        if self.tls_port is not None:
            ports["stomp+ssl"] = self.tls_port
        if self.management_port is not None:
            ports["management"] = self.management_port
        return ports

    def _ports(self) -> dict[str, int]:
        ports = {"stomp": self.port, "amqp": self.amqp_port, "erlang distribution": self.dist_port}
        ports.update(self._client_ports())
        if self._epmd is None or self._epmd.poll() is not None:
            ports["epmd"] = self.epmd_port
        return ports

    def _prepare(self) -> None:
        for sub in ("conf", "home", "mnesia", "log"):
            (self.base_dir / sub).mkdir(parents=True, exist_ok=True)
        conf = self.base_dir / "conf"
        (conf / "rabbitmq.conf").write_text(render_rabbitmq_conf(self.config))
        (conf / "enabled_plugins").write_text(render_enabled_plugins(self.config))
        (conf / "rabbitmq-env.conf").write_text("# empty: the launcher sets everything in the environment\n")
        if self.tls is not None:
            tls_dir = conf / "tls"
            tls_dir.mkdir(exist_ok=True)
            for source, name in (
                (self.tls.ca_file, "ca.pem"),
                (self.tls.broker_cert, "broker.pem"),
                (self.tls.broker_key, "broker.key"),
            ):
                shutil.copyfile(source, tls_dir / name)
            (tls_dir / "broker.key").chmod(0o600)
        if self.users:
            # The handle's own account stays an administrator: the readiness probe and the tests log in with it.
            admin = RabbitMQUser(self.user, self.password, tags=("administrator",))
            users = [admin, *(u for u in self.users if u.name != self.user)]
            definitions = conf / "definitions.json"
            definitions.write_text(render_definitions(users))
            definitions.chmod(0o600)
        self._link_plugins()
        cookie = self.base_dir / "home" / ".erlang.cookie"
        if not cookie.exists():
            cookie.write_text(secrets.token_hex(16).upper())
        cookie.chmod(0o400)
        self.base_dir.chmod(0o750)
        if self._run_as is not None:
            _chown_tree(self.base_dir, self._run_as)

    def _link_plugins(self) -> None:
        """A fresh ``plugins-*`` directory in the private directory, of links to the plugins this broker starts and
        what they need (:func:`plugin_closure`), for ``RABBITMQ_PLUGINS_DIR``; none (RabbitMQ's own directory is
        used) when they cannot be worked out or linked. Made anew at each start, so a half-made one is never used."""
        for old in self.base_dir.glob("plugins-*"):
            shutil.rmtree(old, ignore_errors=True)
        self._plugins_dir = None
        source = find_plugins_dir(self._server)
        needed = (
            plugin_closure(source, enabled_plugins(self.config), erlang_applications())
            if source is not None
            else None
        )
        if needed is None:
            logger.info("rabbitmq: starting with every plugin of %s listed (slower boot)", source)
            return
        linked = self.base_dir / f"plugins-{secrets.token_hex(4)}"
        try:
            linked.mkdir()
            for directory in needed:
                (linked / directory.name).symlink_to(directory)
        except OSError as exc:
            logger.info("rabbitmq: could not link its plugins (%s); starting with all of %s", exc, source)
            shutil.rmtree(linked, ignore_errors=True)
            return
        self._plugins_dir = linked

    def _environment(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("RABBITMQ_", "ERL_", "LC_")) and k not in ("HOME", "LANG")
        }
        env.update(
            rabbitmq_environment(
                base_dir=self.base_dir,
                node_name=self.node_name,
                dist_port=self.dist_port,
                epmd_port=self.epmd_port,
                amqp_port=self.amqp_port,
            )
        )
        if self._plugins_dir is not None:
            env["RABBITMQ_PLUGINS_DIR"] = str(self._plugins_dir)
        return env

    def _command(self) -> tuple[list[str], dict[str, str], RunAs | None]:
        return [str(self._server)], self._environment(), self._run_as

    def _console_log(self) -> Path:
        return self.base_dir / "log" / "console.log"

    def _log_files(self) -> list[Path]:
        return [self._console_log(), self.base_dir / "log" / "rabbit.log"]

    def _before_spawn(self) -> None:
        if self._epmd is not None and self._epmd.poll() is None:
            return
        # Our own epmd on a private port: otherwise the VM would start a shared `epmd -daemon` that
        # outlives every broker. It must listen before the VM starts, or the VM starts its own.
        self._epmd = subprocess.Popen(
            [self._epmd_path, "-port", str(self.epmd_port), "-address", LOOPBACK],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10.0
        while not port_accepts(LOOPBACK, self.epmd_port, timeout_s=0.5):
            if self._epmd.poll() is not None or time.monotonic() > deadline:
                self._stop_epmd()
                raise BrokerNotInstalledError(
                    f"rabbitmq: could not start epmd on port {self.epmd_port} ({self._epmd_path})"
                )
            time.sleep(0.02)

    def _on_ready(self, proc: BrokerProcess) -> None:
        proc.broker_pid = self._find_vm_pid(proc)

    def _find_vm_pid(self, proc: BrokerProcess) -> int:
        pid_file = self.base_dir / "rabbit.pid"
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text().strip())
            if pid in child_pids(proc.popen.pid):
                return pid
        for pid in child_pids(proc.popen.pid):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().startswith("beam"):
                    return pid
        logger.warning("rabbitmq: could not find the Erlang VM pid; kill() will hit the wrapper script")
        return proc.popen.pid

    def ctl(self, *args: str, timeout_s: float = 30.0) -> str:
        """Run ``rabbitmqctl -n NODE ARGS...`` against this broker (as its user, in its environment) and return
        its stdout; RuntimeError with the output when it fails. Asks the running node directly: unlike the
        management API's statistics, ``list_queues`` counts are current."""
        run_as = self._run_as
        result = subprocess.run(
            [str(self._ctl), "-n", self.node_name, *args],
            env=self._environment(),
            cwd=self.base_dir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            user=run_as.user if run_as else None,
            group=run_as.group if run_as else None,
            extra_groups=[] if run_as else None,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"rabbitmqctl {args[0] if args else ''} exited with {result.returncode}: "
                f"{(result.stderr or result.stdout)[-300:]}"
            )
        return result.stdout

    def _request_graceful_stop(self, proc: BrokerProcess, timeout_s: float) -> None:
        self.ctl("stop", timeout_s=timeout_s)

    def _after_stop(self) -> None:
        self._stop_epmd()

    def _stop_epmd(self) -> None:
        epmd, self._epmd = self._epmd, None
        if epmd is not None:
            epmd.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                epmd.wait(timeout=5)

    def _emergency_helpers_cleanup(self) -> None:
        epmd = self._epmd
        if epmd is not None:
            with contextlib.suppress(OSError):
                epmd.kill()
