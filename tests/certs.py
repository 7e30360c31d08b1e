"""Throwaway certificates for the TLS tests, made with ``cryptography`` (never committed keys)."""

from __future__ import annotations

import datetime
import ipaddress
import pathlib
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class Pki:
    ca: pathlib.Path  # the CA certificate (the client's truststore)
    cert: pathlib.Path  # the broker's certificate
    key: pathlib.Path  # the broker's key
    client_cert: pathlib.Path | None = None  # a client certificate the CA signed (mutual TLS)
    client_key: pathlib.Path | None = None


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_pki(
    directory: pathlib.Path,
    *,
    hosts: tuple[str, ...] = ("localhost", "127.0.0.1"),
    expired: bool = False,
    prefix: str = "",
    client_cn: str | None = None,
) -> Pki:
    """A CA and a broker certificate it signed, valid for ``hosts`` (or expired yesterday);
    with ``client_cn`` also a client certificate of that name (for ``ssl.client.auth``)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kafkacore test CA"))
        .issuer_name(_name("kafkacore test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=2))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    start = now - datetime.timedelta(days=2)
    end = now - datetime.timedelta(days=1) if expired else now + datetime.timedelta(days=2)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(
        directory / f"{prefix}ca.pem",
        directory / f"{prefix}cert.pem",
        directory / f"{prefix}key.pem",
    )
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    pki.key.chmod(0o600)
    if client_cn is not None:
        client_key = ec.generate_private_key(ec.SECP256R1())
        client_cert = (
            x509.CertificateBuilder()
            .subject_name(_name(client_cn))
            .issuer_name(ca_cert.subject)
            .public_key(client_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        pki.client_cert = directory / f"{prefix}client-cert.pem"
        pki.client_key = directory / f"{prefix}client-key.pem"
        pki.client_cert.write_bytes(client_cert.public_bytes(serialization.Encoding.PEM))
        pki.client_key.write_bytes(
            client_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        pki.client_key.chmod(0o600)
    return pki
