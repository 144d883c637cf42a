"""Which brokers are installed here, and installing the missing ones.

Owns ``python -m jmslike.conformance.brokers ensure KIND...``: :func:`plan_install` decides (purely,
from facts gathered by :func:`gather_facts`) what to do for each kind -- nothing, ``apt-get install``
(as root on Debian/Ubuntu), or a message that says exactly what to install or which launcher to use
(Artemis has no Debian package). :func:`ensure` carries the plan out.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from jmslike.conformance.brokers.activemq import find_activemq_home, find_java
from jmslike.conformance.brokers.artemis import check_artemis_home, find_artemis_home
from jmslike.conformance.brokers.base import BrokerKind, BrokerNotInstalledError
from jmslike.conformance.brokers.rabbitmq import find_rabbitmq_server

logger = logging.getLogger(__name__)

APT_PACKAGES: Final[Mapping[BrokerKind, tuple[str, ...]]] = {
    "activemq": ("activemq",),
    "rabbitmq": ("rabbitmq-server",),
}
ARTEMIS_MESSAGE: Final = (
    "artemis: ActiveMQ Artemis is not packaged for Debian/Ubuntu and cannot be installed by apt-get. "
    "Set ARTEMIS_HOME to an unpacked Artemis distribution (the process launcher then runs it), or use "
    "--broker-launcher docker (image apache/activemq-artemis, needs a Docker engine) or "
    "--broker-launcher external --broker-url artemis=artemis://HOST:61613 (a broker you run yourself)."
)


@dataclass(frozen=True)
class Facts:
    """What :func:`plan_install` needs to know about this machine."""

    installed: Mapping[BrokerKind, bool]
    is_root: bool
    has_apt: bool


@dataclass(frozen=True)
class InstallPlan:
    """``apt_packages`` to install, and a message per kind (already there / what to do)."""

    apt_packages: tuple[str, ...]
    messages: Mapping[BrokerKind, str]
    ok: bool


def plan_install(kinds: Sequence[BrokerKind], facts: Facts) -> InstallPlan:
    """Decide what ``ensure`` does for ``kinds`` (pure)."""
    packages: list[str] = []
    messages: dict[BrokerKind, str] = {}
    ok = True
    for kind in kinds:
        if kind == "artemis":
            if facts.installed.get(kind, False):
                messages[kind] = "artemis: the distribution ARTEMIS_HOME names (the process launcher runs it)"
            else:
                messages[kind] = ARTEMIS_MESSAGE
                ok = False
            continue
        if facts.installed.get(kind, False):
            messages[kind] = f"{kind}: installed"
            continue
        pkgs = APT_PACKAGES[kind]
        if facts.has_apt and facts.is_root:
            packages.extend(pkgs)
            messages[kind] = f"{kind}: installing with apt-get install -y {' '.join(pkgs)}"
        else:
            why = "not root" if facts.has_apt else "no apt-get on this machine"
            messages[kind] = (
                f"{kind}: not installed and cannot install it here ({why}). Run as root: "
                f"`apt-get update && apt-get install -y {' '.join(pkgs)}` (Debian/Ubuntu), or install "
                f"{kind} another way (ACTIVEMQ_HOME / JMSLIKE_RABBITMQ_SERVER point the launcher at it), "
                "or use --broker-launcher docker or external"
            )
            ok = False
    return InstallPlan(apt_packages=tuple(packages), messages=messages, ok=ok)


def is_installed(kind: BrokerKind) -> bool:
    try:
        if kind == "activemq":
            find_activemq_home()
            find_java()
        elif kind == "rabbitmq":
            find_rabbitmq_server()
        else:
            home = find_artemis_home()
            if home is None:
                return False
            check_artemis_home(home)
    except BrokerNotInstalledError:
        return False
    return True


def gather_facts(kinds: Sequence[BrokerKind]) -> Facts:
    debian_like = Path("/etc/debian_version").exists()
    return Facts(
        installed={kind: is_installed(kind) for kind in kinds},
        is_root=os.geteuid() == 0,
        has_apt=debian_like and shutil.which("apt-get") is not None,
    )


def ensure(kinds: Sequence[BrokerKind]) -> tuple[bool, list[str]]:
    """Install what is missing when possible. Returns (everything usable?, messages for the user)."""
    plan = plan_install(kinds, gather_facts(kinds))
    messages = [plan.messages[k] for k in kinds]
    if not plan.apt_packages:
        return plan.ok, messages
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # Packages must not start their system services (a system RabbitMQ would hold epmd and 5672):
    # the standard policy-rc.d "deny" answer, only while we install and only if none exists.
    policy = Path("/usr/sbin/policy-rc.d")
    added_policy = not policy.exists()
    if added_policy:
        policy.write_text("#!/bin/sh\n# temporary, written by jmslike ensure\nexit 101\n")
        policy.chmod(0o755)
    try:
        for argv in (
            ["apt-get", "update"],
            ["apt-get", "install", "-y", *plan.apt_packages],
        ):
            logger.info("running %s", " ".join(argv))
            result = subprocess.run(argv, env=env, check=False)
            if result.returncode != 0:
                messages.append(f"`{' '.join(argv)}` failed with exit code {result.returncode}")
                return False, messages
    finally:
        if added_policy:
            policy.unlink(missing_ok=True)
    still_missing = [k for k in kinds if k != "artemis" and not is_installed(k)]
    if still_missing:
        messages.append(f"still not usable after apt-get: {', '.join(still_missing)}")
        return False, messages
    messages.append(f"installed: {' '.join(plan.apt_packages)}")
    return plan.ok, messages
