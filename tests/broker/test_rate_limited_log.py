"""Refusals are WARNINGs, one line per kind per interval: a client sending garbage in a loop
does not fill the broker's log (docs/broker/reactor.rst, "Bad input")."""

from __future__ import annotations

import logging

from reactor_client import closed_by_peer, connect
from waits import wait_until

from kafkacore.broker import Broker
from kafkacore.broker.server_common.rate_limited_log import RateLimitedLog


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_per_kind_per_interval_then_the_count_held_back(caplog):
    clock = ManualClock()
    limited = RateLimitedLog(logging.getLogger("kafkacore.test.limited"), interval_s=10.0,
                             clock=clock)
    with caplog.at_level(logging.DEBUG, logger="kafkacore.test.limited"):
        assert limited.log("refused", "refused %s", "a")
        assert not limited.log("refused", "refused %s", "b")
        assert not limited.log("refused", "refused %s", "c")
        assert limited.log("closed", "closed %s", "x")  # another kind has its own interval
        clock.now += 10.0
        assert limited.log("refused", "refused %s", "d")
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert lines == [
        (logging.WARNING, "refused a"),
        (logging.DEBUG, "refused b"),  # held back from WARNING, still there for debugging
        (logging.DEBUG, "refused c"),
        (logging.WARNING, "closed x"),
        (logging.WARNING, "refused d (2 more refused since the last such line)"),
    ]


def test_a_client_sending_garbage_in_a_loop_gets_few_warnings(caplog):
    """Fifty connections closed for bad frames by one broker: every close is logged, but at
    most one WARNING per network thread in the interval; the rest at DEBUG."""
    with Broker({"num.network.threads": 2}) as broker, \
            caplog.at_level(logging.DEBUG, logger="kafkacore.broker.network.socket_server"):
        for _ in range(50):
            s = connect(broker)
            s.sendall(b"\x00\x00\x00\x03abc")  # shorter than any request header
            assert closed_by_peer(s)


        def refused():
            return [r for r in caplog.records if "could not parse a request" in r.getMessage()]

        closes = wait_until(lambda: refused() if len(refused()) >= 50 else None,
                            "every close logged")
    assert len(closes) == 50
    warnings = [r for r in closes if r.levelno == logging.WARNING]
    assert 1 <= len(warnings) <= 2  # one per network thread
