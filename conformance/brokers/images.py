"""Local broker images built from Debian packages, for machines that reach no image registry.

Owns ``python -m jmslike.conformance.brokers images``. The base image is a ``debootstrap --variant=minbase``
Debian (the same release as this machine) imported with ``docker import``; each broker image is one of the
Dockerfiles in ``dockerfiles/`` built on it with ``--network host`` (apt reaches Debian's mirror as the host
does). Artemis, which no registry we reach has, is copied from ``ARTEMIS_HOME`` into its build context.

Every tag carries a digest of what went into the image (Dockerfile, base tag, Artemis's file list and sizes), so
a second run finds its images and builds nothing, and a changed Dockerfile gets a new tag. The docker launcher
asks :func:`local_image` whether a kind has a local image; with one it runs the broker on the host's network.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Final

from jmslike.conformance.brokers.artemis import ARTEMIS_HOME_REASON, check_artemis_home, find_artemis_home
from jmslike.conformance.brokers.base import BrokerKind, BrokerNotInstalledError, LauncherUnavailableError

logger = logging.getLogger(__name__)

IMAGE_REPOSITORY: Final = "jmslike"
BASE_RELEASE: Final = "bookworm"
MIRROR: Final = "http://deb.debian.org/debian"
#: Labels every image and container of ours carries, for listing and cleanup.
LABEL: Final = "org.jmslike.launcher"

# Services never start inside an image build; the sources match a stock Debian install of the release.
_POLICY_RC_D: Final = "#!/bin/sh\n# jmslike image: no service starts while packages are installed\nexit 101\n"
_SOURCES: Final = (
    f"deb {MIRROR} {BASE_RELEASE} main\n"
    f"deb {MIRROR} {BASE_RELEASE}-updates main\n"
    f"deb http://deb.debian.org/debian-security {BASE_RELEASE}-security main\n"
)


def dockerfile(kind: BrokerKind) -> str:
    """The Dockerfile of ``kind`` shipped with jmslike."""
    return (
        resources.files("jmslike.conformance.brokers").joinpath(f"dockerfiles/{kind}.Dockerfile").read_text()
    )


def base_tag() -> str:
    """Tag of the debootstrap base image (its recipe is the release and the files written into it)."""
    digest = hashlib.sha256(f"{BASE_RELEASE}\n{_POLICY_RC_D}{_SOURCES}".encode()).hexdigest()[:12]
    return f"{IMAGE_REPOSITORY}/debian-base:{BASE_RELEASE}-{digest}"


def _artemis_fingerprint(home: Path) -> str:
    """Relative path and size of every file of the distribution: changes when Artemis is replaced."""
    entries = sorted(
        f"{path.relative_to(home)}:{path.stat().st_size}" for path in home.rglob("*") if path.is_file()
    )
    return "\n".join(entries)


def image_tag(kind: BrokerKind, artemis_home: Path | None = None) -> str:
    """``jmslike/KIND:DIGEST`` of what the image is built from (pure but for reading Artemis's file list)."""
    recipe = f"{base_tag()}\n{dockerfile(kind)}"
    if kind == "artemis":
        if artemis_home is None:
            raise LauncherUnavailableError(ARTEMIS_HOME_REASON)
        recipe += _artemis_fingerprint(artemis_home)
    return f"{IMAGE_REPOSITORY}/{kind}:{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def _has_image(client: Any, tag: str) -> bool:
    try:
        client.images.get(tag)
    except Exception as exc:
        if type(exc).__name__ == "ImageNotFound":
            return False
        raise
    return True


def local_image(client: Any, kind: BrokerKind) -> str | None:
    """The tag of ``kind``'s local image when it has been built on this engine, else None."""
    home = find_artemis_home() if kind == "artemis" else None
    if kind == "artemis" and home is None:
        return None
    tag = image_tag(kind, home)
    return tag if _has_image(client, tag) else None


def build_base(client: Any, log: Callable[[str], None]) -> str:
    """The debootstrap base image (built when missing: needs root, ``debootstrap`` and Debian's mirror)."""
    tag = base_tag()
    if _has_image(client, tag):
        log(f"base image {tag}: present")
        return tag
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise BrokerNotInstalledError(
            "images: debootstrap is not installed (apt-get install debootstrap); it builds the base image"
        )
    if os.geteuid() != 0:
        raise BrokerNotInstalledError("images: building the base image with debootstrap needs root")
    with tempfile.TemporaryDirectory(prefix="jmslike-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"base image {tag}: debootstrap --variant=minbase {BASE_RELEASE} (about a minute)")
        result = subprocess.run(
            [debootstrap, "--variant=minbase", BASE_RELEASE, str(rootfs), MIRROR],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise BrokerNotInstalledError(
                f"images: debootstrap failed (exit {result.returncode}): {(result.stderr or result.stdout)[-2000:]}"
            )
        (rootfs / "usr/sbin/policy-rc.d").write_text(_POLICY_RC_D)
        (rootfs / "usr/sbin/policy-rc.d").chmod(0o755)
        (rootfs / "etc/apt/sources.list").write_text(_SOURCES)
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, mode="w") as tar:
            tar.add(rootfs, arcname=".")
        repository, _, version = tag.partition(":")
        client.api.import_image_from_file(
            str(archive), repository=repository, tag=version, changes=[f"LABEL {LABEL}=image"]
        )
    log(f"base image {tag}: imported")
    return tag


def _context(kind: BrokerKind, artemis_home: Path | None) -> bytes:
    """The build context as a tar: the Dockerfile, and for Artemis the distribution as ``artemis/``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = dockerfile(kind).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        if kind == "artemis" and artemis_home is not None:
            tar.add(artemis_home, arcname="artemis")
    return buffer.getvalue()


def build_image(client: Any, kind: BrokerKind, *, log: Callable[[str], None], rebuild: bool = False) -> str:
    """Build ``kind``'s image unless the current one is there; returns its tag."""
    home = find_artemis_home() if kind == "artemis" else None
    if kind == "artemis":
        if home is None:
            raise LauncherUnavailableError(ARTEMIS_HOME_REASON)
        check_artemis_home(home)
    tag = image_tag(kind, home)
    if not rebuild and _has_image(client, tag):
        log(f"{kind} image {tag}: present")
        return tag
    base = build_base(client, log)
    log(f"{kind} image {tag}: building")
    try:
        client.images.build(
            fileobj=io.BytesIO(_context(kind, home)),
            custom_context=True,
            tag=tag,
            buildargs={"BASE": base},
            network_mode="host",
            labels={LABEL: "image", "org.jmslike.kind": kind},
            rm=True,
            forcerm=True,
        )
    except Exception as exc:
        build_log = "".join(str(chunk.get("stream", "")) for chunk in getattr(exc, "build_log", []) or [])
        raise BrokerNotInstalledError(f"images: building {tag} failed: {exc}\n{build_log[-3000:]}") from exc
    log(f"{kind} image {tag}: built")
    return tag


def build_images(
    client: Any, kinds: Iterable[BrokerKind], *, log: Callable[[str], None], rebuild: bool = False
) -> dict[BrokerKind, str]:
    """Build every kind's image; Artemis without ARTEMIS_HOME is left out with the reason logged."""
    built: dict[BrokerKind, str] = {}
    for kind in kinds:
        try:
            built[kind] = build_image(client, kind, log=log, rebuild=rebuild)
        except LauncherUnavailableError as exc:
            log(f"{kind}: skipped -- {exc.reason}")
    return built
