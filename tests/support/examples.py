"""How many examples a Hypothesis test draws, by the tier that runs it (TESTING.md).

``HYPOTHESIS_PROFILE=full`` (the default, and Python 3.12's tox environment) draws every test's
own count; ``quick`` (the other interpreters) a fifth of it, at least 10: the same properties
checked on every interpreter, in full once per CI run.
"""

from __future__ import annotations

import os

PROFILES = ("full", "quick")
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "full")
if PROFILE not in PROFILES:
    raise ValueError(f"HYPOTHESIS_PROFILE must be one of {PROFILES}, got {PROFILE!r}")


def examples(n: int) -> int:
    """``max_examples`` for a test that draws ``n`` on the full tier."""
    return n if PROFILE == "full" else max(10, n // 5)
