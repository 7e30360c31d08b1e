"""SASL mechanisms on the client side: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

Java's ``SaslClientAuthenticator`` drives a ``javax.security.sasl.SaslClient``: the client sends
SaslHandshake (which mechanism), then one SaslAuthenticate request per token the mechanism makes,
until the mechanism is complete.  Here a mechanism is a small object with the same two steps:
:meth:`SaslMechanism.initial_response` and :meth:`SaslMechanism.evaluate_challenge`.

Secrets are kept out of ``repr`` and of every error message: a mechanism's ``repr`` names the
mechanism and the user only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from typing import Any

from kafkacore import errors

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class SaslMechanism:
    """One authentication exchange (Java ``SaslClient``)."""

    name = ""

    def initial_response(self) -> bytes:
        raise NotImplementedError

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """The next token to send, or ``None`` when the exchange is complete."""
        raise NotImplementedError

    @property
    def complete(self) -> bool:
        raise NotImplementedError


class PlainMechanism(SaslMechanism):
    """RFC 4616: one message, ``authzid NUL authcid NUL password``."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        self._password = password
        self._sent = False

    def initial_response(self) -> bytes:
        self._sent = True
        return b"\0" + self.username.encode() + b"\0" + self._password.encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        return None

    @property
    def complete(self) -> bool:
        return self._sent

    def __repr__(self) -> str:
        return f"PlainMechanism(username={self.username!r})"


SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def _saslname(name: str) -> str:
    # RFC 5802 5.1: "," and "=" in a user name are escaped.
    return name.replace("=", "=3D").replace(",", "=2C")


def scram_attributes(message: bytes) -> dict[str, str]:
    """The ``x=value`` attributes of one SCRAM message (RFC 5802 section 5.1)."""
    out = {}
    for part in message.decode().split(","):
        if len(part) >= 2 and part[1] == "=":
            out[part[0]] = part[2:]
    return out


def scram_salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(): PBKDF2 with HMAC of the mechanism's hash (also what a server stores)."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


def scram_keys(hash_name: str, salted: bytes) -> tuple[bytes, bytes, bytes]:
    """(ClientKey, StoredKey, ServerKey) from a salted password (RFC 5802 section 3)."""
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hash_name).digest()
    return client_key, stored_key, server_key


class ScramMechanism(SaslMechanism):
    """RFC 5802 / RFC 7677 SCRAM, the client's three steps (Java ``ScramSaslClient``).

    client-first ``n,,n=user,r=cnonce`` -> server-first ``r=nonce,s=salt,i=iterations`` ->
    client-final ``c=biws,r=nonce,p=proof`` -> server-final ``v=signature`` (checked: the server
    proves that it knows the password too).
    """

    MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations

    def __init__(self, name: str, username: str, password: str, nonce: str | None = None) -> None:
        self.name = name
        self.username = username
        self._password = password
        self._hash = SCRAM_HASHES[name]
        self._nonce = nonce or base64.b64encode(os.urandom(24)).decode()
        self._state = "initial"
        self._client_first_bare = ""
        self._server_signature = b""

    def initial_response(self) -> bytes:
        self._client_first_bare = f"n={_saslname(self.username)},r={self._nonce}"
        self._state = "first_sent"
        return ("n,," + self._client_first_bare).encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._state == "first_sent":
            return self._client_final(challenge)
        if self._state == "final_sent":
            attrs = scram_attributes(challenge)
            if "e" in attrs:
                raise errors.SaslAuthenticationFailedError(f"SCRAM: server error {attrs['e']}")
            signature = base64.b64decode(attrs.get("v", ""))
            if not hmac.compare_digest(signature, self._server_signature):
                raise errors.SaslAuthenticationFailedError("SCRAM: invalid server signature")
            self._state = "complete"
            return None
        raise errors.IllegalSaslStateError(f"SCRAM: unexpected challenge in state {self._state}")

    def _client_final(self, server_first: bytes) -> bytes:
        attrs = scram_attributes(server_first)
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s"), attrs.get("i")
        if not nonce.startswith(self._nonce) or salt is None or iterations is None:
            raise errors.SaslAuthenticationFailedError("SCRAM: invalid server-first message")
        rounds = int(iterations)
        if rounds < self.MIN_ITERATIONS:
            raise errors.SaslAuthenticationFailedError(
                f"SCRAM: {rounds} iterations is fewer than the minimum {self.MIN_ITERATIONS}"
            )
        salted = scram_salted_password(self._hash, self._password, base64.b64decode(salt), rounds)
        client_key, stored_key, server_key = scram_keys(self._hash, salted)
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first.decode()},{without_proof}"
        signature = hmac.new(stored_key, auth_message.encode(), self._hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = hmac.new(server_key, auth_message.encode(), self._hash).digest()
        self._state = "final_sent"
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def __repr__(self) -> str:
        return f"ScramMechanism({self.name}, username={self.username!r})"


class OAuthBearerMechanism(SaslMechanism):
    """RFC 7628 as Kafka uses it (KIP-255): ``n,,\\x01auth=Bearer <token>\\x01\\x01``.

    The token comes from a callback, asked anew on every (re-)authentication, as confluent-kafka's
    ``oauth_cb``: it returns ``(token, expiry_seconds)`` or just the token.
    """

    name = "OAUTHBEARER"

    def __init__(self, token_provider: Callable[[Any], Any], config_string: str | None) -> None:
        self._provider = token_provider
        self._config = config_string
        self._state = "initial"

    def initial_response(self) -> bytes:
        token = self._provider(self._config)
        if isinstance(token, tuple):
            token = token[0]
        if not isinstance(token, str) or not token:
            raise errors.SaslAuthenticationFailedError(
                "OAUTHBEARER: the token callback gave no token"
            )
        self._state = "sent"
        return f"n,,\x01auth=Bearer {token}\x01\x01".encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if challenge:
            # An error report from the server (RFC 7628 3.2.2): answer with a lone 0x01 so it
            # can finish with its failure; its content is JSON without secrets.
            self._state = "failed"
            return b"\x01"
        self._state = "complete"
        return None

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def __repr__(self) -> str:
        return "OAuthBearerMechanism()"


# -- sasl.jaas.config ------------------------------------------------------------------------------

_JAAS = re.compile(
    r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s+(.*?)\s*;?\s*$", re.S
)
_OPTION = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+?))(?=\s|;|$)')


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """Java's JAAS line: ``<LoginModule class> required key="value" ...;`` -> (class, options).

    The error message never quotes the text: it holds the password.
    """
    match = _JAAS.match(text)
    if match is None:
        raise errors.ConfigError(
            "sasl.jaas.config: expected '<LoginModule> required key=\"value\" ...;'"
        )
    options: dict[str, str] = {}
    rest = match.group(3)
    pos = 0
    while pos < len(rest):
        opt = _OPTION.match(rest, pos)
        if opt is None:
            if rest[pos:].strip(" ;\n\t") == "":
                break
            raise errors.ConfigError("sasl.jaas.config: an option is not key=value")
        value = opt.group(2) if opt.group(2) is not None else opt.group(3)
        options[opt.group(1)] = re.sub(r"\\(.)", r"\1", value)
        pos = opt.end()
    return match.group(1), options


def credentials(config: Any) -> tuple[str, str]:
    """(username, password) from sasl.username/sasl.password or sasl.jaas.config."""
    username, password = config["sasl.username"], config["sasl.password"]
    jaas = config["sasl.jaas.config"]
    if jaas:
        _, options = parse_jaas_config(jaas)
        username = options.get("username", username)
        password = options.get("password", password)
    if username is None or password is None:
        raise errors.ConfigError(
            f"sasl.mechanism {config['sasl.mechanism']} needs a user name and a password: set "
            "sasl.jaas.config or sasl.username and sasl.password"
        )
    return username, password


def mechanism_factory(config: Any) -> Callable[[], SaslMechanism]:
    """A function that makes a fresh mechanism for each connection (checked once, here)."""
    name = config["sasl.mechanism"]
    if name == "OAUTHBEARER":
        provider = config["sasl.oauthbearer.token.provider"]
        if provider is None:
            raise errors.ConfigError(
                "sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.token.provider (oauth_cb)"
            )
        extra = config["sasl.oauthbearer.config"]
        return lambda: OAuthBearerMechanism(provider, extra)
    username, password = credentials(config)
    if name == "PLAIN":
        return lambda: PlainMechanism(username, password)
    return lambda: ScramMechanism(name, username, password)


__all__ = [
    "MECHANISMS",
    "OAuthBearerMechanism",
    "PlainMechanism",
    "SaslMechanism",
    "ScramMechanism",
    "SCRAM_HASHES",
    "scram_attributes",
    "credentials",
    "mechanism_factory",
    "parse_jaas_config",
    "scram_keys",
    "scram_salted_password",
]
