"""TLS for broker connections: an ``ssl.SSLContext`` from Java's ``ssl.*`` settings (PEM only).

Java's ``DefaultSslEngineFactory`` builds an ``SSLEngine`` from key and trust stores; with
``ssl.keystore.type=PEM`` / ``ssl.truststore.type=PEM`` (KIP-651) those are PEM files or PEM text
in the settings themselves, which is what Python's ``ssl`` module reads too.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from typing import Any

from kafkacore import errors

_PROTOCOLS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def create_ssl_context(config: Any) -> ssl.SSLContext:
    """The client's ``SSLContext``; a bad file or key is a ConfigError naming the setting."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    enabled = [p.strip() for p in config["ssl.enabled.protocols"].split(",") if p.strip()]
    versions = [_PROTOCOLS[p] for p in enabled if p in _PROTOCOLS]
    if not versions:
        raise errors.ConfigError(
            f"ssl.enabled.protocols: none of {enabled} is one of {sorted(_PROTOCOLS)}"
        )
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    # ssl.endpoint.identification.algorithm: "https" checks the broker's host name (Java's
    # default since Kafka 2.0); an empty value turns only that check off, not the chain check.
    ctx.check_hostname = config["ssl.endpoint.identification.algorithm"].lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    location, certificates = (
        config["ssl.truststore.location"],
        config["ssl.truststore.certificates"],
    )
    try:
        if certificates:
            ctx.load_verify_locations(cadata=certificates)
        elif location:
            ctx.load_verify_locations(cafile=location)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (OSError, ssl.SSLError) as exc:
        raise errors.ConfigError(f"ssl.truststore: cannot load the certificates: {exc}") from None
    _load_keystore(ctx, config)
    return ctx


def _load_keystore(ctx: ssl.SSLContext, config: Any) -> None:
    password = config["ssl.key.password"]
    location = config["ssl.keystore.location"]
    key, chain = config["ssl.keystore.key"], config["ssl.keystore.certificate.chain"]
    try:
        if key and chain:
            # PEM text in the settings: load_cert_chain reads files only, so write a private
            # temporary file (mode 0600) and remove it at once.
            fd, path = tempfile.mkstemp(suffix=".pem")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(chain.strip() + "\n" + key.strip() + "\n")
                ctx.load_cert_chain(path, password=password)
            finally:
                os.unlink(path)
        elif location:
            key_location = config["ssl.key.location"] or None
            ctx.load_cert_chain(location, keyfile=key_location, password=password)
    except (OSError, ssl.SSLError) as exc:
        # Never the password; the library's message names the file or "bad decrypt".
        raise errors.ConfigError(
            f"ssl.keystore: cannot load the key and certificate: {exc}"
        ) from None


def describe_ssl_error(exc: BaseException) -> str:
    """A sentence naming why a handshake failed (untrusted, expired, host name, not TLS)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        code = exc.verify_code
        if code == 10:
            return f"the broker's certificate has expired ({exc.verify_message})"
        if code in (2, 7, 18, 19, 20, 21):
            return f"the broker's certificate is not trusted ({exc.verify_message})"
        if code in (62, 64):
            return f"host name mismatch: {exc.verify_message}"
        return f"certificate verification failed: {exc.verify_message}"
    reason = getattr(exc, "reason", None) or str(exc)
    if reason in ("WRONG_VERSION_NUMBER", "UNEXPECTED_RECORD", "RECORD_LAYER_FAILURE") or (
        "wrong version number" in str(exc)
    ):
        return f"the broker did not answer in TLS (is this a PLAINTEXT port?): {reason}"
    return f"TLS handshake failed: {reason}"
