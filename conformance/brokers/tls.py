"""Throw-away certificates for TLS tests: a CA, a broker certificate it signs, a client certificate.

Owns generating the key material the launchers give a broker's TLS listener (``tls=`` option of
:class:`~.activemq.ActiveMQBroker` and :class:`~.rabbitmq.RabbitMQBroker`) and the files a client
points ``ssl_ca_file`` / ``ssl_cert_file`` / ``ssl_key_file`` at:

* PEM files for Python clients and RabbitMQ (``ca.pem``, ``broker.pem`` + ``broker.key``,
  ``client.pem`` + ``client.key``);
* PKCS#12 stores for Java (ActiveMQ): ``broker.p12`` (the broker's key and certificate) and
  ``truststore.p12`` (the CA, as a Java trust store, so a broker asking for client certificates
  accepts ours).

Uses the ``cryptography`` package (a test dependency); nothing here is shipped for production use:
the keys are unencrypted on disk, 2048-bit RSA, valid for a week.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

#: Password of the PKCS#12 stores (Java insists on one). Not a secret: the files are throw-away.
STORE_PASSWORD = "jmslike-test"


@dataclass(frozen=True)
class TLSMaterial:
    """Paths of one generated set. ``names`` are what the broker certificate is valid for."""

    directory: Path
    ca_file: Path
    broker_cert: Path
    broker_key: Path
    client_cert: Path
    client_key: Path
    broker_keystore: Path
    truststore: Path
    names: tuple[str, ...]
    store_password: str = field(default=STORE_PASSWORD, repr=False)


def generate(
    directory: str | Path,
    *,
    names: tuple[str, ...] = ("localhost", "127.0.0.1"),
    ca_name: str = "jmslike test CA",
) -> TLSMaterial:
    """Write a CA, a broker certificate for ``names`` (DNS names and IP addresses) and a client
    certificate into ``directory`` (created) and return their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def _name(common_name: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=7)

    def key() -> rsa.RSAPrivateKey:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    ca_key = key()
    ca_subject = _name(ca_name)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_subject)
        .issuer_name(ca_subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(
        common_name: str, usage: x509.ObjectIdentifier, alt: list[x509.GeneralName]
    ) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
        leaf_key = key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(ca_cert.subject)
            .public_key(leaf_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if alt:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        return leaf_key, builder.sign(ca_key, hashes.SHA256())

    alt_names: list[x509.GeneralName] = []
    for name in names:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt_names.append(x509.DNSName(name))
    broker_key, broker_cert = leaf(names[0], ExtendedKeyUsageOID.SERVER_AUTH, alt_names)
    client_key, client_cert = leaf("jmslike test client", ExtendedKeyUsageOID.CLIENT_AUTH, [])

    def pem_key(k: rsa.RSAPrivateKey) -> bytes:
        return k.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    material = TLSMaterial(
        directory=out,
        ca_file=out / "ca.pem",
        broker_cert=out / "broker.pem",
        broker_key=out / "broker.key",
        client_cert=out / "client.pem",
        client_key=out / "client.key",
        broker_keystore=out / "broker.p12",
        truststore=out / "truststore.p12",
        names=names,
    )
    material.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    material.broker_cert.write_bytes(broker_cert.public_bytes(serialization.Encoding.PEM))
    material.broker_key.write_bytes(pem_key(broker_key))
    material.client_cert.write_bytes(client_cert.public_bytes(serialization.Encoding.PEM))
    material.client_key.write_bytes(pem_key(client_key))
    password = STORE_PASSWORD.encode()
    material.broker_keystore.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"broker", broker_key, broker_cert, [ca_cert], serialization.BestAvailableEncryption(password)
        )
    )
    material.truststore.write_bytes(
        pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(ca_cert, b"ca")], serialization.BestAvailableEncryption(password)
        )
    )
    for path in (material.broker_key, material.client_key):
        path.chmod(0o600)
    return material
