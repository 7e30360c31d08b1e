"""Network faults, as the client sees them (not error codes a broker sent).

They are subclasses of the broker error classes that Java's Sender maps them to, so the code that
decides "retry or fail" treats them like the codes: a broken connection is ``NETWORK_EXCEPTION``
(13, retriable, and an *invalid metadata* error: the leader may have moved, refresh metadata), a
request without an answer is ``REQUEST_TIMED_OUT`` (7, retriable).  A broker that supports none of
our versions of an API gives ``kafkacore.errors.UnsupportedVersionError`` (35) directly.
"""

from __future__ import annotations

from kafkacore import errors


class DisconnectError(errors.NetworkError):
    """The connection closed, broke or could not be opened before the response arrived."""

    def __init__(self, error_message: str | None = None, *args: object) -> None:
        super().__init__(error_message, *args)


class ConnectionSetupTimeoutError(DisconnectError):
    """Connecting (TCP, then ApiVersions) took longer than ``socket.connection.setup.timeout.ms``."""


class CorrelationIdMismatchError(DisconnectError):
    """A response carried a correlation id other than the oldest in-flight request's.

    Responses come back in order on a connection, so the byte stream is out of step: the client
    closes the connection and fails everything in flight on it.
    """


class RequestTimeoutError(errors.RequestTimedOutError):
    """No response within ``request.timeout.ms``: the client closed the connection.

    Java's ``NetworkClient`` does the same: it cannot skip one response on a connection (responses
    come in order), so a late request costs the whole connection and everything in flight on it.
    """


__all__ = [
    "ConnectionSetupTimeoutError",
    "CorrelationIdMismatchError",
    "DisconnectError",
    "RequestTimeoutError",
]


class SslAuthenticationError(errors.AuthenticationError):
    """The TLS handshake failed (Java ``SslAuthenticationException``): the message names why.

    An untrusted or expired certificate, a host name the certificate does not name, or a port
    that does not speak TLS: retrying cannot help, so the client treats it as fatal.
    No broker sends it (it has no error code), so it reads as its message alone.
    """

    def __str__(self) -> str:
        return f"SSL handshake failed: {self.error_message}"


__all__ += ["SslAuthenticationError"]


class SecurityProtocolMismatchError(errors.AuthenticationError):
    """The listener speaks another ``security.protocol`` than the client: a plaintext client
    at a TLS or SASL listener, a TLS client without SASL at a SASL_SSL one.  ``wanted`` is
    the protocol (or protocols) the listener wants.  Fatal, like a refused login: no retry
    would get through."""

    def __init__(self, error_message: str | None = None, *args: object,
                 wanted: str = "") -> None:
        super().__init__(error_message, *args)
        self.wanted = wanted

    def __str__(self) -> str:
        return f"wrong security.protocol: {self.error_message}"


__all__ += ["SecurityProtocolMismatchError"]
