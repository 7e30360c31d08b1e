"""``RateLimitedLog``: one warning per interval for each kind of event, with a count of the rest.

A client that misbehaves in a loop (bad frames, wrong passwords, too many connections) must not
fill the broker's log or spend its CPU formatting the same line: Kafka's network threads log such
refusals at WARNING, and we keep each kind to one line per ``interval_s``, saying how many were
held back since the last one (those go to DEBUG, so nothing is hidden from a debugging reader).
Owned by one thread (each network thread has its own): no lock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

#: Kafka's network threads' rate: one line per kind every ten seconds.
DEFAULT_INTERVAL_S = 10.0


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, level: int = logging.WARNING,
                 interval_s: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.level = level
        self.interval_s = interval_s
        self._clock = clock
        self._next_at: dict[str, float] = {}  #: kind -> when its next line may be written
        self._held: dict[str, int] = {}  #: kind -> events held back since its last line

    def log(self, kind: str, msg: str, *args: object) -> bool:
        """Log ``msg % args`` at the set level if ``kind`` has not been logged in the interval
        (returns True), else at DEBUG, counted for the next line (returns False)."""
        now = self._clock()
        if now < self._next_at.get(kind, float("-inf")):
            self._held[kind] = self._held.get(kind, 0) + 1
            self.logger.debug(msg, *args)
            return False
        self._next_at[kind] = now + self.interval_s
        held = self._held.pop(kind, 0)
        if held:
            msg += " (%d more %s since the last such line)"
            args = (*args, held, kind)
        self.logger.log(self.level, msg, *args)
        return True


__all__ = ["DEFAULT_INTERVAL_S", "RateLimitedLog"]
