"""Patterns from the network, compiled by RE2, as Kafka compiles them with RE2/J.

RE2 matches in time linear in the subject whatever the pattern, so a client's pattern (a consumer
group's ``SubscribedTopicRegex``, ListTransactions' ``TransactionalIdPattern``) cannot hold a
request thread by backtracking, as one could with Python's ``re``.
"""

from __future__ import annotations

import functools
from typing import Any

try:
    import re2
except ImportError as exc:  # the broker extra brings it
    raise ImportError("kafkacore's broker matches client patterns with RE2: "
                      "pip install 'kafkacore[broker]' (google-re2)") from exc

#: What :func:`compile_regex` raises for a pattern RE2 does not take (lookarounds,
#: backreferences, a syntax error); its first argument says why, in bytes.
RegexError = re2.error

# Errors are raised, not also written to stderr.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@functools.lru_cache(maxsize=1024)  # bounded: clients send their patterns at every change
def compile_regex(pattern: str) -> Any:
    """``pattern`` compiled by RE2; :data:`RegexError` (or ``UnicodeError``) if it is none."""
    return re2.compile(pattern, options=_RE2_OPTIONS)
