"""Compile and run ``JmsPeer.java``: a real Java JMS client for tests, ActiveMQ's (OpenWire) or Artemis's (core).

The Java program sits next to this module and depends on the JMS API alone; a :class:`JavaClient` says which
factory class it builds and which jars it compiles and runs with: :func:`activemq_client` (the jars Debian
installs in ``/usr/share/java``, ``$JMSLIKE_JAVA_LIB`` overrides the folder) or :func:`artemis_client` (the
``lib/`` of the Artemis distribution ``ARTEMIS_HOME`` names: the broker's own classpath holds its JMS 2.0
client and everything that client loads). :func:`unavailable_reason` says why a client cannot work here (no
JDK, missing jars), so tests can skip with the reason. :class:`JavaPeer` runs one command per JVM, each with a
subprocess timeout, and returns the JSON line the program printed. See ``JmsPeer.java`` for the message spec
and the description format.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

SOURCE: Final = Path(__file__).with_name("JmsPeer.java")
MAIN_CLASS: Final = "JmsPeer"
JAR_DIR: Final = Path(os.environ.get("JMSLIKE_JAVA_LIB", "/usr/share/java"))

#: What JmsPeer needs at compile and run time with ActiveMQ's client (javax.jms, the client and what it loads).
REQUIRED_JARS: Final = (
    "activemq-client.jar",
    "geronimo-jms_1.1_spec.jar",
    "hawtbuf.jar",
    "slf4j-api.jar",
    "geronimo-j2ee-management-1.1-spec.jar",
)
#: Used when present: an SLF4J binding that silences "no binding" warnings on stderr.
OPTIONAL_JARS: Final = ("slf4j-nop.jar",)

#: Time a JVM needs on top of the command's own wait (start-up, connecting, closing).
JVM_OVERHEAD_S: Final = 30.0
COMPILE_TIMEOUT_S: Final = 120.0


class JavaPeerError(RuntimeError):
    """A Java command failed or printed something that is not one JSON object; carries its output."""


@dataclass(frozen=True)
class JavaClient:
    """A Java JMS client for JmsPeer: the connection factory class it builds from a URL, and its jars."""

    name: str
    factory_class: str
    jars: tuple[Path, ...]
    #: Why the client's jars are not usable here (None when they are).
    missing: str | None = None


def activemq_client(jar_dir: Path = JAR_DIR) -> JavaClient:
    """ActiveMQ Classic's Java client over OpenWire, from Debian's jars."""
    missing_jars = [jar for jar in REQUIRED_JARS if not (jar_dir / jar).is_file()]
    missing = None
    if missing_jars:
        missing = (
            f"Java interop needs the ActiveMQ client jars; missing in {jar_dir}: {', '.join(missing_jars)} "
            "(apt-get install activemq, or set JMSLIKE_JAVA_LIB to a folder holding them)"
        )
    jars = [jar_dir / jar for jar in REQUIRED_JARS] + [
        jar_dir / jar for jar in OPTIONAL_JARS if (jar_dir / jar).is_file()
    ]
    return JavaClient("activemq", "org.apache.activemq.ActiveMQConnectionFactory", tuple(jars), missing)


def artemis_client(home: Path) -> JavaClient:
    """Artemis's JMS 2.0 client over the core protocol, from the distribution's ``lib/``."""
    jars = tuple(sorted((home / "lib").glob("*.jar")))
    missing = None
    if not any(jar.name.startswith("artemis-jms-client-") for jar in jars):
        missing = f"Java interop on Artemis needs {home}/lib/artemis-jms-client-*.jar (ARTEMIS_HOME={home})"
    return JavaClient(
        "artemis", "org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory", jars, missing
    )


def _tool(name: str) -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).is_file():
        return str(Path(java_home) / "bin" / name)
    return shutil.which(name)


def unavailable_reason(client: JavaClient | None = None) -> str | None:
    """Why the Java peer cannot be built and run here with ``client`` (default ActiveMQ's), or None."""
    missing_tools = [name for name in ("java", "javac") if _tool(name) is None]
    if missing_tools:
        return (
            f"Java interop needs a JDK: {' and '.join(missing_tools)} not found on PATH or in $JAVA_HOME "
            "(apt-get install default-jdk-headless)"
        )
    return (client or activemq_client()).missing


def compile_peer(build_dir: Path, client: JavaClient | None = None) -> str:
    """Compile JmsPeer.java into ``build_dir``; return the classpath that runs it with ``client``.

    Raises :class:`JavaPeerError` (with javac's output) when compilation fails; call
    :func:`unavailable_reason` first to tell "cannot run here" from "broken"."""
    javac = _tool("javac")
    if javac is None:
        raise JavaPeerError("javac not found")
    jars = [str(jar) for jar in (client or activemq_client()).jars]
    build_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [javac, "-encoding", "UTF-8", "-cp", os.pathsep.join(jars), "-d", str(build_dir), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=COMPILE_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise JavaPeerError(f"javac failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return os.pathsep.join([str(build_dir), *jars])


def _parse(argv: Sequence[str], result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    described = f"`{' '.join(argv[-4:])}` (exit {result.returncode})\nstdout: {result.stdout}\nstderr: {result.stderr}"
    if result.returncode != 0:
        raise JavaPeerError(f"the Java peer failed: {described}")
    lines = result.stdout.strip().splitlines()
    try:
        parsed = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError as error:
        raise JavaPeerError(f"the Java peer printed no JSON: {described}") from error
    if not isinstance(parsed, dict):
        raise JavaPeerError(f"the Java peer printed no JSON object: {described}")
    return parsed


class RunningCommand:
    """A Java command started in the background (a requester waiting for its reply)."""

    def __init__(self, argv: list[str], timeout_s: float, env: Mapping[str, str]) -> None:
        self._argv = argv
        self._timeout_s = timeout_s
        self._process = subprocess.Popen(
            argv,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def result(self) -> dict[str, Any]:
        """Wait (at most the command's timeout) for the JSON the command prints."""
        try:
            stdout, stderr = self._process.communicate(timeout=self._timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        return _parse(
            self._argv, subprocess.CompletedProcess(self._argv, self._process.returncode, stdout, stderr)
        )

    def kill(self) -> None:
        """Stop the command if it still runs (cleanup after a failed test)."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.communicate()


@dataclass(frozen=True)
class JavaPeer:
    """Runs JmsPeer commands against one broker's Java-client port (``tcp://host:port``, OpenWire or core)."""

    classpath: str
    openwire_url: str
    factory_class: str = "org.apache.activemq.ActiveMQConnectionFactory"
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    def _env(self) -> dict[str, str]:
        """The child's environment: the factory and the account (never on the command line)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("JMSPEER_")}
        env["JMSPEER_FACTORY"] = self.factory_class
        if self.user is not None:
            env["JMSPEER_USER"] = self.user
            env["JMSPEER_PASSWORD"] = self.password or ""
        return env

    def _argv(self, *args: str) -> list[str]:
        java = _tool("java")
        if java is None:
            raise JavaPeerError("java not found")
        return [java, "-cp", self.classpath, MAIN_CLASS, *args]

    def _run(self, args: Sequence[str], wait_ms: int = 0, stdin: str | None = None) -> dict[str, Any]:
        argv = self._argv(*args)
        result = subprocess.run(
            argv,
            input=stdin,
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=wait_ms / 1000 + JVM_OVERHEAD_S,
            check=False,
        )
        return _parse(argv, result)

    def send(self, destination: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        """Send one message; returns ``messageId``, ``timestamp``, ``destination``, ``replyTo`` as Java saw them."""
        return self._run(["send", self.openwire_url, destination, "-"], stdin=json.dumps(spec))

    def receive(
        self, destination: str, timeout_ms: int, *, selector: str | None = None, reads: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Receive one message and describe it (``{"received": false}`` after ``timeout_ms``).

        ``reads`` are ``"name:type"`` pairs read with Java's typed getters (under ``"reads"``)."""
        args = ["receive", self.openwire_url, destination, str(timeout_ms)]
        if selector is not None:
            args.append(f"--selector={selector}")
        if reads:
            args.append(f"--read={','.join(reads)}")
        return self._run(args, wait_ms=timeout_ms)

    def reply(self, destination: str, timeout_ms: int, correlate: str) -> dict[str, Any]:
        """Answer one request from ``destination`` (``correlate``: ``message-id`` or ``correlation-id``)."""
        return self._run(
            ["reply", self.openwire_url, destination, str(timeout_ms), correlate], wait_ms=timeout_ms
        )

    def start_request(self, destination: str, spec: Mapping[str, Any], timeout_ms: int) -> RunningCommand:
        """Send a request (``spec["replyTo"]``) in the background; ``.result()`` has request and reply."""
        argv = self._argv("request", self.openwire_url, destination, str(timeout_ms), json.dumps(spec))
        return RunningCommand(argv, timeout_ms / 1000 + JVM_OVERHEAD_S, self._env())
