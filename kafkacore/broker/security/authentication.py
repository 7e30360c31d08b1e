"""The broker's side of TLS and SASL (Kafka's ``SslFactory``, ``CredentialCache`` and
``SaslServerAuthenticator``).

* :func:`create_server_ssl_context` builds the ``ssl.SSLContext`` of the SSL and SASL_SSL
  listeners from Kafka's ``ssl.*`` settings (PEM stores only, KIP-651).
* :class:`CredentialCache` holds what the broker knows of each SASL user: for SCRAM the salted
  credential of RFC 5802 (salt, iterations, StoredKey, ServerKey), for PLAIN a salted PBKDF2
  hash.  The passwords from the config are hashed at start-up and not kept.
* :class:`SaslServerAuthenticator` runs one connection's exchange inside its processor thread:
  SaslHandshake names the mechanism, SaslAuthenticate carries its tokens, and the session
  lifetime of KIP-368 (``connections.max.reauth.ms``) is told to the client at the end.

See docs/broker/security.rst.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkacore import errors
from kafkacore.broker.config.kafka_config import BrokerConfig, EndPoint, parse_protocol_map
from kafkacore.broker.security.scram_sasl_server import ScramSaslServer
from kafkacore.errors import Errors
from kafkacore.network.sasl import (
    SCRAM_HASHES,
    PlainMechanism,
    SaslMechanism,
    ScramMechanism,
    parse_jaas_config,
    scram_keys,
    scram_salted_password,
)
from kafkacore.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

SERVER_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: Kafka's ScramMechanism.minIterations, what ``kafka-configs`` uses by default.
SCRAM_ITERATIONS = 4096
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


# -- TLS -----------------------------------------------------------------------------------------


def create_server_ssl_context(config: BrokerConfig) -> ssl.SSLContext:
    """The SSLContext of the TLS listeners; a missing or bad store is a ConfigError naming it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p.strip() for p in config["ssl.enabled.protocols"].split(",") if p.strip()]
    versions = [_PROTOCOLS[p] for p in enabled if p in _PROTOCOLS]
    if not versions:
        raise errors.ConfigError(
            f"ssl.enabled.protocols: none of {enabled} is one of {sorted(_PROTOCOLS)}")
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    # No renegotiation (TLS 1.2): a client could make the broker redo the costly part at will;
    # Kafka's SslTransportLayer refuses it too.
    ctx.options |= ssl.OP_NO_RENEGOTIATION
    password = config["ssl.key.password"] or None
    location, chain, key = (config["ssl.keystore.location"],
                            config["ssl.keystore.certificate.chain"], config["ssl.keystore.key"])
    try:
        if chain and key:
            # PEM text in the settings; load_cert_chain reads files only: a private (0600)
            # temporary file, removed at once.
            fd, path = tempfile.mkstemp(suffix=".pem")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(chain.strip() + "\n" + str(key).strip() + "\n")
                ctx.load_cert_chain(path, password=password)
            finally:
                os.unlink(path)
        elif location:
            ctx.load_cert_chain(location, keyfile=config["ssl.key.location"] or None,
                                password=password)
        else:
            raise errors.ConfigError(
                "a TLS listener needs a keystore: ssl.keystore.location (PEM), or "
                "ssl.keystore.certificate.chain and ssl.keystore.key")
    except (OSError, ssl.SSLError) as exc:
        raise errors.ConfigError(f"ssl.keystore: cannot load the key and certificate: {exc}") \
            from None
    client_auth = config["ssl.client.auth"]
    if client_auth != "none":
        try:
            if config["ssl.truststore.certificates"]:
                ctx.load_verify_locations(cadata=config["ssl.truststore.certificates"])
            elif config["ssl.truststore.location"]:
                ctx.load_verify_locations(cafile=config["ssl.truststore.location"])
            else:
                raise errors.ConfigError(
                    f"ssl.client.auth={client_auth} needs ssl.truststore.location or "
                    "ssl.truststore.certificates (the CAs of the client certificates)")
        except (OSError, ssl.SSLError) as exc:
            raise errors.ConfigError(f"ssl.truststore: cannot load the certificates: {exc}") \
                from None
        # "requested": a client may send none, but one it sends must be valid (Java's
        # SSLEngine.setWantClientAuth); "required": no certificate, no connection.
        ctx.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


# -- credentials -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScramCredential:
    """What RFC 5802 says a server stores (Kafka's ``ScramCredential``): never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations})"


@dataclass(frozen=True)
class PlainCredential:
    """A salted PBKDF2-SHA-256 hash of a PLAIN user's password."""

    salt: bytes
    hashed: bytes

    def matches(self, password: str) -> bool:
        candidate = hashlib.pbkdf2_hmac("sha256", password.encode(), self.salt, SCRAM_ITERATIONS)
        return hmac.compare_digest(candidate, self.hashed)

    def __repr__(self) -> str:
        return "PlainCredential()"


def scram_credential(mechanism: str, password: str,
                     iterations: int = SCRAM_ITERATIONS) -> ScramCredential:
    salt = os.urandom(24)
    salted = scram_salted_password(SCRAM_HASHES[mechanism], password, salt, iterations)
    _, stored_key, server_key = scram_keys(SCRAM_HASHES[mechanism], salted)
    return ScramCredential(salt, stored_key, server_key, iterations)


def plain_credential(password: str) -> PlainCredential:
    salt = os.urandom(16)
    return PlainCredential(
        salt, hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS))


class CredentialCache:
    """mechanism -> user -> credential, for one listener (Kafka's ``CredentialCache``).

    Users come from ``sasl.users`` (``user:password,...``, every mechanism) and from Kafka's
    per-listener JAAS setting ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` with
    ``user_<name>="<password>"`` options (what Kafka's ``PlainLoginModule`` reads).
    """

    def __init__(self, config: BrokerConfig, listener: str, mechanisms: list[str]) -> None:
        self._credentials: dict[str, dict[str, Any]] = {m: {} for m in mechanisms}
        shared = parse_users(config["sasl.users"])
        for mechanism in mechanisms:
            users = dict(shared)
            jaas = config.get(f"listener.name.{listener.lower()}.{mechanism.lower()}"
                              ".sasl.jaas.config")
            if jaas:
                _, options = parse_jaas_config(str(jaas))
                users.update({k[5:]: v for k, v in options.items() if k.startswith("user_")})
            for user, password in users.items():
                self._credentials[mechanism][user] = (
                    plain_credential(password) if mechanism == "PLAIN"
                    else scram_credential(mechanism, password))

    def get(self, mechanism: str, user: str) -> Any:
        return self._credentials.get(mechanism, {}).get(user)

    def users(self, mechanism: str) -> list[str]:
        return sorted(self._credentials.get(mechanism, {}))


def parse_users(text: str) -> dict[str, str]:
    """``sasl.users``: ``user:password,user:password`` (a password ends at the next comma).

    Errors never quote the text: it holds passwords.
    """
    out = {}
    for i, part in enumerate(str(text).split(",")):
        if not part.strip():
            continue
        user, sep, password = part.strip().partition(":")
        if not sep or not user or not password:
            raise errors.ConfigError(f"sasl.users: entry {i + 1} is not user:password")
        out[user] = password
    return out


# -- the SASL exchange ---------------------------------------------------------------------------


class SaslState(enum.Enum):
    """Kafka's ``SaslServerAuthenticator.SaslState``, the ones a v1 handshake goes through."""

    HANDSHAKE_OR_VERSIONS_REQUEST = "handshake-or-versions"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    REAUTH_AUTHENTICATE = "reauth-authenticate"
    FAILED = "failed"


class Outcome(enum.Enum):
    CONTINUE = "continue"  #: answer, keep the connection (more tokens come)
    AUTHENTICATED = "authenticated"  #: answer; the connection may now send any request
    FAILED = "failed"  #: answer, then close the connection


class SaslServerAuthenticator:
    """One connection's SASL exchange, run by its processor thread (the exchange is short and
    a SCRAM step is a few HMACs: the salted hashing happened at start-up).

    :meth:`handle` takes a decoded SaslHandshake or SaslAuthenticate request and returns the
    response body and what to do with the connection.  After success the session lives
    ``connections.max.reauth.ms`` (KIP-368) if the client speaks SaslAuthenticate v1 or later;
    a SaslHandshake on an authenticated connection starts a re-authentication, which must use
    the same mechanism and user.
    """

    def __init__(self, credentials: CredentialCache, mechanisms: list[str],
                 max_reauth_ms: int) -> None:
        self.credentials = credentials
        self.mechanisms = mechanisms
        self.max_reauth_ms = max_reauth_ms
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self.mechanism: str | None = None
        self.principal: str | None = None  #: the authenticated user ("User:" + it in Kafka)
        #: time.monotonic() after which the session is over (None: it never ends).
        self.session_expires_at: float | None = None
        self.reauthentications = 0
        self._scram: ScramSaslServer | None = None
        self._pending_mechanism: str | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.COMPLETE

    def session_expired(self, now: float) -> bool:
        return self.session_expires_at is not None and now >= self.session_expires_at

    def handle(self, api_key: int, version: int, body: dict[str, Any]) -> tuple[dict[str, Any], Outcome]:
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(version, body["mechanism"])
        return self._authenticate(version, body["auth_bytes"] or b"")

    def _handshake(self, version: int, mechanism: str) -> tuple[dict[str, Any], Outcome]:
        offered = {"mechanisms": list(self.mechanisms)}
        if self.state is SaslState.COMPLETE:
            # KIP-368: a handshake on an authenticated connection starts a re-authentication.
            if mechanism != self.mechanism:
                self.state = SaslState.FAILED
                return {"error_code": Errors.UNSUPPORTED_SASL_MECHANISM, **offered}, Outcome.FAILED
            self.state = SaslState.REAUTH_AUTHENTICATE
        elif self.state is not SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
            self.state = SaslState.FAILED
            return {"error_code": Errors.ILLEGAL_SASL_STATE, **offered}, Outcome.FAILED
        elif version < 1:
            # v0 sends the tokens as raw frames (before KIP-152); this broker speaks only v1.
            self.state = SaslState.FAILED
            return {"error_code": Errors.UNSUPPORTED_VERSION, **offered}, Outcome.FAILED
        elif mechanism not in self.mechanisms:
            self.state = SaslState.FAILED
            return {"error_code": Errors.UNSUPPORTED_SASL_MECHANISM, **offered}, Outcome.FAILED
        else:
            self.state = SaslState.AUTHENTICATE
        self._pending_mechanism = mechanism
        self._scram = None
        return {"error_code": Errors.NONE, **offered}, Outcome.CONTINUE

    def _authenticate(self, version: int, token: bytes) -> tuple[dict[str, Any], Outcome]:
        if self.state not in (SaslState.AUTHENTICATE, SaslState.REAUTH_AUTHENTICATE):
            self.state = SaslState.FAILED
            return _auth_response(Errors.ILLEGAL_SASL_STATE, "SaslAuthenticate before "
                                  "SaslHandshake or after authentication"), Outcome.FAILED
        mechanism = self._pending_mechanism
        if mechanism is None:
            raise errors.IllegalStateError(
                "SaslAuthenticate after a handshake that chose no mechanism")
        try:
            if mechanism == "PLAIN":
                user, challenge = self._plain(token), b""
            else:
                if self._scram is None:
                    self._scram = ScramSaslServer(mechanism, self._scram_lookup(mechanism))
                challenge = self._scram.evaluate_response(token)
                if not self._scram.complete:
                    return _auth_response(Errors.NONE, None, challenge), Outcome.CONTINUE
                user = self._scram.username or ""
        except errors.SaslAuthenticationFailedError:
            return self._fail(mechanism)
        except (ValueError, KeyError, IndexError, UnicodeDecodeError):  # a malformed token
            return self._fail(mechanism)
        if self.state is SaslState.REAUTH_AUTHENTICATE and user != self.principal:
            self.state = SaslState.FAILED
            return _auth_response(Errors.SASL_AUTHENTICATION_FAILED, "Cannot change principals "
                                  "during re-authentication"), Outcome.FAILED
        if self.state is SaslState.REAUTH_AUTHENTICATE:
            self.reauthentications += 1
        self.state = SaslState.COMPLETE
        self.mechanism, self.principal = mechanism, user
        lifetime = 0
        # Only a client that reads the lifetime (SaslAuthenticate v1+) is held to it, as Kafka.
        if self.max_reauth_ms > 0 and version >= 1:
            lifetime = self.max_reauth_ms
            self.session_expires_at = time.monotonic() + lifetime / 1000.0
        else:
            self.session_expires_at = None
        response = _auth_response(Errors.NONE, None, challenge)
        response["session_lifetime_ms"] = lifetime
        return response, Outcome.AUTHENTICATED

    def _fail(self, mechanism: str) -> tuple[dict[str, Any], Outcome]:
        self.state = SaslState.FAILED
        # The same words for an unknown user and a wrong password: telling them apart would
        # tell an attacker which user names exist.
        return _auth_response(
            Errors.SASL_AUTHENTICATION_FAILED,
            f"Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}"), Outcome.FAILED

    def _plain(self, token: bytes) -> str:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise errors.SaslAuthenticationFailedError("PLAIN: expected authzid NUL user NUL pw")
        authzid, user, password = (p.decode() for p in parts)
        if authzid and authzid != user:
            raise errors.SaslAuthenticationFailedError("PLAIN: authorization id is not the user")
        credential = self.credentials.get("PLAIN", user)
        if credential is None or not credential.matches(password):
            raise errors.SaslAuthenticationFailedError("invalid credentials")
        return user

    def _scram_lookup(self, mechanism: str) -> Any:
        def lookup(user: str) -> tuple[bytes, int, bytes, bytes] | None:
            c = self.credentials.get(mechanism, user)
            return None if c is None else (c.salt, c.iterations, c.stored_key, c.server_key)

        return lookup


def _auth_response(code: int, message: str | None, auth_bytes: bytes = b"") -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "auth_bytes": auth_bytes,
            "session_lifetime_ms": 0}


class ListenerSecurity:
    """What one listener needs to secure its connections: a TLS context and/or SASL users."""

    def __init__(self, config: BrokerConfig, endpoint: EndPoint,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.endpoint = endpoint
        self.ssl_context = ssl_context if endpoint.uses_tls else None
        self.mechanisms: list[str] = []
        self.credentials: CredentialCache | None = None
        self.max_reauth_ms: int = config["connections.max.reauth.ms"]
        if endpoint.uses_sasl:
            # Kafka's per-listener override first: listener.name.<name>.sasl.enabled.mechanisms.
            enabled = config.get(f"listener.name.{endpoint.name.lower()}.sasl.enabled.mechanisms")
            if enabled is None:
                enabled = config["sasl.enabled.mechanisms"]
            names = [m.strip().upper() for m in str(enabled).split(",") if m.strip()]
            unknown = [m for m in names if m not in SERVER_MECHANISMS]
            if unknown or not names:
                raise errors.ConfigError(
                    f"sasl.enabled.mechanisms: this broker offers {', '.join(SERVER_MECHANISMS)};"
                    f" got {', '.join(unknown) or 'none'}")
            self.mechanisms = names
            self.credentials = CredentialCache(config, endpoint.name, names)

    def new_authenticator(self) -> SaslServerAuthenticator | None:
        if self.credentials is None:
            return None
        return SaslServerAuthenticator(self.credentials, self.mechanisms, self.max_reauth_ms)


def build_listener_security(config: BrokerConfig) -> dict[str, ListenerSecurity | None]:
    """listener name -> its security (None for PLAINTEXT); a bad setting raises ConfigError
    here, when the broker is made, before any port is bound."""
    tls = any(e.uses_tls for e in config.listeners)
    ssl_context = create_server_ssl_context(config) if tls else None
    return {
        e.name: None if e.security_protocol == "PLAINTEXT"
        else ListenerSecurity(config, e, ssl_context)
        for e in config.listeners
    }


#: RFC 2253's short names, as Java's ``X500Principal.getName()`` writes them; other attributes
#: keep the name Python's ``ssl`` module gives them.
_RFC2253_NAMES = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
                  "localityName": "L", "stateOrProvinceName": "ST", "countryName": "C",
                  "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}


def certificate_principal(certificate: dict[str, Any] | None) -> str | None:
    """``User:<subject>`` for a verified client certificate (Kafka's default principal of an
    SSL connection: the subject in RFC 2253 form, ``CN=client-1,O=example``), or None."""
    if not certificate or not certificate.get("subject"):
        return None
    parts = []
    for rdn in reversed(certificate["subject"]):  # RFC 2253: the most specific part first
        parts.append("+".join(f"{_RFC2253_NAMES.get(k, k)}={_rfc2253_escape(v)}"
                              for k, v in rdn))
    return "User:" + ",".join(parts)


def _rfc2253_escape(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def inter_broker_sasl(config: BrokerConfig) -> Callable[[], SaslMechanism] | None:
    """What a broker's clients of other brokers authenticate with: the SASL mechanism
    ``sasl.mechanism.inter.broker.protocol`` and the ``username``/``password`` of the
    inter-broker listener's JAAS setting (Kafka's
    ``listener.name.<listener>.<mechanism>.sasl.jaas.config``).  None on a listener without
    SASL.  A SASL listener without broker credentials is a ConfigError: brokers would be
    refused by one another."""
    endpoint = config.inter_broker_listener
    return _broker_sasl(config, "inter.broker.listener.name", endpoint.name,
                        endpoint.security_protocol, "sasl.mechanism.inter.broker.protocol")


def controller_sasl(config: BrokerConfig) -> Callable[[], SaslMechanism] | None:
    """What a broker authenticates to the controller with: the protocol of the listener
    ``controller.listener.names`` names (``listener.security.protocol.map``), the mechanism
    ``sasl.mechanism.controller.protocol``, and that listener's JAAS ``username``/``password``,
    as Kafka's brokers.  None: PLAINTEXT (no ``controller.listener.names``)."""
    name = config["controller.listener.names"].split(",")[0].strip().upper()
    if not name:
        return None
    protocol = parse_protocol_map(config["listener.security.protocol.map"]).get(name)
    if protocol is None:
        raise errors.ConfigError(f"controller.listener.names: {name} is not in "
                                 "listener.security.protocol.map")
    return _broker_sasl(config, "controller.listener.names", name, protocol,
                        "sasl.mechanism.controller.protocol")


def _broker_sasl(config: BrokerConfig, setting: str, listener: str, protocol: str,
                 mechanism_setting: str) -> Callable[[], SaslMechanism] | None:
    if protocol in ("SSL", "SASL_SSL"):
        raise errors.ConfigError(
            f"{setting}: listener {listener} uses TLS; a broker's own clients speak PLAINTEXT "
            "and SASL_PLAINTEXT only")
    if protocol != "SASL_PLAINTEXT":
        return None
    mechanism = config[mechanism_setting].strip().upper()
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    _, options = parse_jaas_config(str(config.get(key) or "x required;"))
    username, password = options.get("username"), options.get("password")
    if mechanism not in SERVER_MECHANISMS or not username or not password:
        raise errors.ConfigError(
            f"listener {listener} ({setting}) uses SASL: set {key} with username and "
            f"password ({mechanism_setting} is one of {', '.join(SERVER_MECHANISMS)})")
    if mechanism == "PLAIN":
        return lambda: PlainMechanism(username, password)
    return lambda: ScramMechanism(mechanism, username, password)


__all__ = [
    "CredentialCache",
    "ListenerSecurity",
    "Outcome",
    "PlainCredential",
    "SaslServerAuthenticator",
    "SaslState",
    "ScramCredential",
    "build_listener_security",
    "certificate_principal",
    "controller_sasl",
    "create_server_ssl_context",
    "inter_broker_sasl",
    "parse_users",
]
