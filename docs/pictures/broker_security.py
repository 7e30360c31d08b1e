"""A connection's states on our broker's secured listeners: TLS handshake, SASL, re-authentication."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)


def _states(out_dir):
    fig, ax = _boxes.figure(14.2, 6.2)
    b, a = _boxes.box, _boxes.arrow

    def label(x, y, text):
        ax.text(x, y, text, fontsize=8, color="#333333")

    ax.text(0.2, 5.85, "One connection, inside its Processor's select() loop (never blocking it)",
            fontsize=11, weight="bold")
    b(ax, 0.2, 4.4, 1.8, 0.8, "accepted\n(the listener's\nAcceptor)", "wire", 8)
    b(ax, 3.0, 4.4, 2.3, 0.8, "TLS handshake\ndo_handshake():\nwant READ / WRITE", "thread", 8)
    a(ax, 2.0, 4.8, 3.0, 4.8)
    label(2.05, 4.95, "SSL,\nSASL_SSL")
    label(0.2, 3.9, "SASL_PLAINTEXT:\nstraight to SASL")
    b(ax, 6.5, 4.4, 2.6, 0.8, "HANDSHAKE_OR_\nVERSIONS_REQUEST\n(ApiVersions ok)", "python", 8)
    a(ax, 5.3, 4.8, 6.5, 4.8)
    label(5.5, 4.95, "done")
    b(ax, 10.6, 4.4, 2.4, 0.8, "AUTHENTICATE\nSaslAuthenticate\ntokens", "python", 8)
    a(ax, 9.1, 4.8, 10.6, 4.8)
    label(9.2, 4.95, "SaslHandshake")
    b(ax, 10.6, 2.3, 2.4, 0.9, "COMPLETE\nany request until\nconnections.\nmax.reauth.ms", "python", 7)
    a(ax, 11.8, 4.4, 11.8, 3.2)
    label(11.9, 3.7, "proof ok")
    b(ax, 6.5, 2.3, 2.6, 0.9, "REAUTH_AUTHENTICATE\nsame mechanism,\nsame user", "python", 8)
    a(ax, 10.6, 2.95, 9.1, 2.95)
    label(9.2, 3.05, "SaslHandshake")
    a(ax, 9.1, 2.5, 10.6, 2.5)
    label(9.4, 2.2, "proof ok")
    b(ax, 3.0, 2.3, 2.3, 0.9, "PLAINTEXT / SSL:\nany request once\nTLS is done", "python", 8)
    a(ax, 4.15, 4.4, 4.15, 3.2)
    label(4.25, 3.7, "SSL")
    b(ax, 6.5, 0.5, 7.4, 0.9,
      "FAILED: answer SASL_AUTHENTICATION_FAILED (58), mute,\n"
      "close after connection.failed.authentication.delay.ms", "wire", 8)
    a(ax, 13.0, 4.6, 13.7, 1.4)
    label(13.45, 3.3, "bad\nproof")
    a(ax, 7.8, 2.3, 7.8, 1.4)
    label(7.9, 1.75, "another user")
    b(ax, 0.2, 0.5, 4.9, 0.9,
      "closed at once, reason logged: bad TLS, a request\n"
      "before authentication, an expired session", "wire", 8)
    a(ax, 3.2, 4.4, 1.6, 1.4)
    label(0.9, 2.6, "alert /\nnot TLS")
    _boxes.save(fig, out_dir / "broker_security.png")


def draw(out_dir):
    _states(pathlib.Path(out_dir))
