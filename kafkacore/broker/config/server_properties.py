"""The broker's settings from files, so that secrets never sit on the command line (where every
user of the machine reads them in ``/proc/PID/cmdline``).

* :func:`load_properties` reads a ``server.properties`` file in Java's ``Properties`` format,
  with Kafka's setting names: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!``
  comments; a line ending in ``\\`` goes on with the next; ``\\t``, ``\\n``, ``\\uXXXX`` escapes.
* :func:`jaas_settings` reads a JAAS file, the one Kafka is given with
  ``-Djava.security.auth.login.config``: the ``KafkaServer`` section (or
  ``<listener>.KafkaServer`` for one listener) lists login modules with their options;
  ``user_<name>="<password>"`` options declare the SASL users.  They become the per-listener
  settings ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` the broker already reads
  (a ``PlainLoginModule`` for PLAIN, a ``ScramLoginModule`` for the SCRAM mechanisms).

A file with secrets that other users can read is reported (as ssh reports a private key's mode).
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from kafkacore import errors
from kafkacore.network.sasl import parse_jaas_config

log = logging.getLogger(__name__)

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SECTION = re.compile(r"([A-Za-z0-9_.\-]+)\s*\{(.*?)\}\s*;", re.DOTALL)
#: JAAS login modules -> the mechanisms whose users they declare.
_MODULE_MECHANISMS = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}


def _read_private(path: str | os.PathLike[str], what: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise errors.ConfigError(f"{what} {os.fspath(path)!r}: {exc.strerror or exc}") from None
    if mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH) and (
            "password" in text or "user_" in text or "key" in text):
        log.warning("%s %s can be read by other users (mode %o) and may hold secrets: "
                    "chmod 600 it", what, os.fspath(path), stat.S_IMODE(mode))
    return text


def _logical_lines(text: str) -> Iterable[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        # A line continues when it ends in an odd number of backslashes.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        n = text[i + 1]
        if n == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise errors.ConfigError("server.properties: a \\u escape needs four hex digits")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(n, n))
        i += 2
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Java's ``Properties.load`` on ``text``: key -> value (the last one wins)."""
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        # The key ends at the first unescaped '=', ':' or whitespace.
        i = 0
        while i < len(line) and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        key, rest = line[:i], line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        out[_unescape(key)] = _unescape(rest)
    return out


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """The settings of a ``server.properties`` file (a missing file is a ConfigError)."""
    return parse_properties(_read_private(path, "server.properties"))


def parse_jaas_file(text: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """A JAAS file: section name -> [(login module class, options), ...]."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.DOTALL)  # Java-style comments
    sections: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for match in _SECTION.finditer(text):
        entries = []
        for entry in _split_entries(match.group(2)):
            entries.append(parse_jaas_config(entry + ";"))
        sections[match.group(1)] = entries
    if not sections and text.strip():
        raise errors.ConfigError("JAAS file: expected sections like 'KafkaServer { ... };'")
    return sections


def _split_entries(body: str) -> list[str]:
    """The ';'-terminated login module entries of a section (a ';' inside quotes is text)."""
    entries, current, quoted, escaped = [], [], False, False
    for c in body:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c == ";" and not quoted:
            if "".join(current).strip():
                entries.append("".join(current).strip())
            current = []
            continue
        current.append(c)
    if "".join(current).strip():
        raise errors.ConfigError("JAAS file: a login module entry does not end with ';'")
    return entries


def jaas_settings(path: str | os.PathLike[str], listeners: Iterable[str]) -> dict[str, str]:
    """The per-listener ``sasl.jaas.config`` settings the JAAS file at ``path`` declares, for
    the SASL listeners named in ``listeners`` (a ``<listener>.KafkaServer`` section wins over
    ``KafkaServer`` for its listener, as in Kafka)."""
    sections = parse_jaas_file(_read_private(path, "JAAS file"))
    if not any(name == "KafkaServer" or name.endswith(".KafkaServer") for name in sections):
        raise errors.ConfigError(f"JAAS file {os.fspath(path)!r} has no KafkaServer section")
    out: dict[str, str] = {}
    for listener in listeners:
        entries = sections.get(f"{listener.lower()}.KafkaServer", sections.get("KafkaServer"))
        for module, options in entries or ():
            users = {k: v for k, v in options.items() if k.startswith("user_")}
            for mechanism in _MODULE_MECHANISMS.get(module.rsplit(".", 1)[-1], ()):
                inline = " ".join(f'{k}="{_quote(v)}"' for k, v in users.items())
                out[f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"] = (
                    f"{module} required {inline};")
    return out


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
