"""Pure parts of the security work: URL keys for TLS and frame limits, launcher renderings, secrets."""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import xml.dom.minidom
from pathlib import Path

import pytest

from jmslike.adapters.stomp_socket import tls_context
from jmslike.config import ConfigurationError, parse_url
from jmslike.conformance.brokers.activemq import (
    ActiveMQConfig,
    ActiveMQPermission,
    ActiveMQUser,
    render_activemq_xml,
)
from jmslike.conformance.brokers.rabbitmq import (
    RabbitMQConfig,
    RabbitMQPermission,
    RabbitMQUser,
    rabbitmq_password_hash,
    render_definitions,
    render_rabbitmq_conf,
)
from jmslike.exceptions import JMSSecurityException


def test_tls_keys() -> None:
    config = parse_url("rabbitmq+ssl://h:61614?ssl_ca_file=/ca.pem&ssl_check_hostname=false")
    assert config.ssl and config.tls.ca_file == "/ca.pem" and config.tls.check_hostname is False
    assert parse_url("rabbitmq+ssl://h:61614").tls.check_hostname is True
    with pytest.raises(ConfigurationError, match=r"\+ssl"):
        parse_url("rabbitmq://h:61613?ssl_check_hostname=false")


def test_frame_limit_keys() -> None:
    config = parse_url("activemq://h:1?max_frame_bytes=65536&max_header_bytes=4096")
    assert (config.max_frame_bytes, config.max_header_bytes) == (65536, 4096)
    defaults = parse_url("activemq://h:1")
    assert defaults.max_frame_bytes == 100 * 1024 * 1024 and defaults.max_header_bytes == 1024 * 1024
    for bad in ("0", "100", "-5", "lots"):
        with pytest.raises(ConfigurationError, match="max_frame_bytes"):
            parse_url(f"activemq://h:1?max_frame_bytes={bad}")


def test_tls_context_verifies_always_and_host_name_by_default(tmp_path: Path) -> None:
    strict = tls_context(parse_url("activemq+ssl://h:1"))
    assert strict.verify_mode == ssl.CERT_REQUIRED and strict.check_hostname
    relaxed = tls_context(parse_url("activemq+ssl://h:1?ssl_check_hostname=false"))
    assert relaxed.verify_mode == ssl.CERT_REQUIRED and not relaxed.check_hostname
    with pytest.raises(JMSSecurityException, match=r"missing\.pem"):
        tls_context(parse_url(f"activemq+ssl://h:1?ssl_ca_file={tmp_path / 'missing.pem'}"))


def test_activemq_tls_and_authorization_render_as_valid_xml(tmp_path: Path) -> None:
    from jmslike.conformance.brokers.tls import TLSMaterial

    material = TLSMaterial(
        directory=tmp_path,
        ca_file=tmp_path / "ca.pem",
        broker_cert=tmp_path / "b.pem",
        broker_key=tmp_path / "b.key",
        client_cert=tmp_path / "c.pem",
        client_key=tmp_path / "c.key",
        broker_keystore=tmp_path / "b.p12",
        truststore=tmp_path / "t.p12",
        names=("localhost",),
    )
    config = ActiveMQConfig(
        stomp_port=1,
        data_dir="/d",
        tls=material,
        tls_port=2,
        tls_need_client_auth=True,
        users=(ActiveMQUser("u", "p&<\"'", ("g",)),),
        authorization=(ActiveMQPermission("allowed.>", read=("g",), write=("g",)),),
    )
    text = render_activemq_xml(config)
    dom = xml.dom.minidom.parseString(text)
    connectors = {
        c.getAttribute("name"): c.getAttribute("uri") for c in dom.getElementsByTagName("transportConnector")
    }
    assert (
        connectors["stomp+ssl"].startswith("stomp+ssl://127.0.0.1:2?")
        and "needClientAuth=true" in connectors["stomp+ssl"]
    )
    entries = dom.getElementsByTagName("authorizationEntry")
    assert entries[0].getAttribute("queue") == "allowed.>" and entries[0].getAttribute("write") == "g"
    assert not entries[0].hasAttribute("admin")
    assert dom.getElementsByTagName("authenticationUser")[0].getAttribute("password") == "p&<\"'"
    inner = [e for e in dom.getElementsByTagName("sslContext") if e.hasAttribute("keyStore")]
    assert inner[0].getAttribute("keyStore") == f"file:{tmp_path / 'b.p12'}"


def test_rabbitmq_tls_and_definitions() -> None:
    conf = render_rabbitmq_conf(
        RabbitMQConfig(stomp_port=1, amqp_port=2, tls_port=3, tls_dir="/t", definitions_file="/d.json")
    )
    assert "stomp.listeners.ssl.1 = 127.0.0.1:3" in conf
    assert "ssl_options.cacertfile = /t/ca.pem" in conf and "ssl_options.verify = verify_peer" in conf
    assert "ssl_options.fail_if_no_peer_cert = false" in conf
    assert "load_definitions = /d.json" in conf
    user = RabbitMQUser(
        "u", "Secret-pa55-9q", permissions=(RabbitMQPermission("/v", configure="^a", write="^b", read="^c"),)
    )
    definitions = json.loads(render_definitions([user]))
    assert definitions["permissions"] == [
        {"user": "u", "vhost": "/v", "configure": "^a", "write": "^b", "read": "^c"}
    ]
    assert {v["name"] for v in definitions["vhosts"]} == {"/", "/v"}
    assert "Secret-pa55-9q" not in json.dumps(definitions)
    assert "Secret-pa55-9q" not in repr(user)


def test_rabbitmq_password_hash_is_salted_sha256() -> None:
    encoded = rabbitmq_password_hash("secret", salt=b"\x01\x02\x03\x04")
    raw = base64.b64decode(encoded)
    assert raw[:4] == b"\x01\x02\x03\x04"
    assert raw[4:] == hashlib.sha256(b"\x01\x02\x03\x04secret").digest()
