"""``ScramSaslServer``: the broker's side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677).

The client's side and the primitives both sides share (the salted password, the keys, the
message attributes) are in :mod:`kafkacore.network.sasl`.  See docs/broker/security.rst.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from typing import Any

from kafkacore import errors
from kafkacore.network.sasl import SCRAM_HASHES, scram_attributes


class ScramSaslServer:
    """The broker's side of one SCRAM exchange (Kafka's ``ScramSaslServer``).

    ``lookup(user)`` returns ``(salt, iterations, stored_key, server_key)`` or ``None``; the
    server never sees the password, only what RFC 5802 says to store.
    """

    def __init__(self, name: str, lookup: Callable[[str], Any]) -> None:
        self._hash = SCRAM_HASHES[name]
        self._lookup = lookup
        self._state = "initial"
        self.username: str | None = None

    def evaluate_response(self, response: bytes) -> bytes:
        """The next challenge; raises SaslAuthenticationFailedError on a bad proof."""
        text = response.decode()
        if self._state == "initial":
            bare = text.split(",", 2)[2]
            attrs = scram_attributes(bare.encode())
            self.username = attrs["n"].replace("=2C", ",").replace("=3D", "=")
            creds = self._lookup(self.username)
            if creds is None:
                raise errors.SaslAuthenticationFailedError("unknown user")
            self._salt, self._iterations, self._stored, self._server_key = creds
            self._nonce = attrs["r"] + base64.b64encode(os.urandom(18)).decode()
            self._first = (
                f"r={self._nonce},s={base64.b64encode(self._salt).decode()},i={self._iterations}"
            )
            self._client_first_bare = bare
            self._state = "first_sent"
            return self._first.encode()
        attrs = scram_attributes(response)
        without_proof = text[: text.rindex(",p=")]
        if attrs.get("r") != self._nonce:
            raise errors.SaslAuthenticationFailedError("invalid nonce")
        auth_message = f"{self._client_first_bare},{self._first},{without_proof}"
        signature = hmac.new(self._stored, auth_message.encode(), self._hash).digest()
        proof = base64.b64decode(attrs.get("p", ""))
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), self._stored):
            raise errors.SaslAuthenticationFailedError("invalid credentials")
        self._state = "complete"
        server_signature = hmac.new(self._server_key, auth_message.encode(), self._hash).digest()
        return b"v=" + base64.b64encode(server_signature)

    @property
    def complete(self) -> bool:
        return self._state == "complete"
