"""One encoder and one decoder for every message declared in :mod:`kafkacore.protocol.messages`.

The declarations are data; this module turns each into a tree of :class:`Field` objects once
(:func:`compile_message`) and then walks that tree to write or read bytes.  The same walk serves
requests and responses, so the producer (which encodes requests and decodes responses) and a
broker (which decodes requests and encodes responses) share every line of it.

Two encodings live side by side, chosen per version by the declaration's ``flexibleVersions``:

* **classic**: strings and byte arrays carry a signed big-endian length (int16 for strings,
  int32 for bytes and arrays), -1 meaning null;
* **flexible** (KIP-482): lengths are unsigned varints holding length + 1 (0 = null), and every
  structure ends with a *tag buffer*: a count, then (tag, size, bytes) for each tagged field that
  differs from its default.  A reader skips the tags it does not know, which is how new optional
  fields are added without a new version.

Encoding returns a **list of buffers**, not one ``bytes``: the fixed fields go into small
``bytearray`` chunks, and each ``records`` value (the producer's closed record batches) is put in
the list as it is, a ``bytes`` or ``memoryview``, never copied.  The connection hands the list to
``socket.sendmsg``, which gathers the pieces in the kernel.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kafkacore import errors
from kafkacore.protocol.api_keys import ApiKey
from kafkacore.protocol.messages import MESSAGES, REQUEST_HEADER, RESPONSE_HEADER, Declaration


class ProtocolError(errors.KafkaError, ValueError):
    """Bytes that do not decode as the declared message (truncated, bad length, bad UTF-8)."""


Buffer = bytes | bytearray | memoryview

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")
_FIXED = {
    "int8": _INT8,
    "int16": _INT16,
    "uint16": _UINT16,
    "int32": _INT32,
    "uint32": _UINT32,
    "int64": _INT64,
    "float64": _FLOAT64,
}
_ZERO_UUID = uuid.UUID(int=0)
_PRIMITIVES = frozenset(_FIXED) | {"bool", "uuid", "string", "bytes", "records"}


# ---------------------------------------------------------------------------------------------
# Versions and fields
# ---------------------------------------------------------------------------------------------


class Versions:
    """A version range as Kafka writes it: ``"3+"``, ``"0-8"``, ``"5"`` or ``"none"``."""

    __slots__ = ("low", "high")

    def __init__(self, text: str) -> None:
        text = text.strip()
        if text == "none":
            self.low, self.high = 0, -1
        elif text.endswith("+"):
            self.low, self.high = int(text[:-1]), 0x7FFF
        elif "-" in text:
            low, high = text.split("-")
            self.low, self.high = int(low), int(high)
        else:
            self.low = self.high = int(text)

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __repr__(self) -> str:
        return f"Versions({self.low}-{self.high})"


def snake_case(name: str) -> str:
    """Kafka's field name in Python style: ``TopicData`` -> ``topic_data``, ``timeoutMs`` ->
    ``timeout_ms``."""
    out = []
    for i, ch in enumerate(name):
        if (
            ch.isupper()
            and i > 0
            and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower()))
        ):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


class Field:
    """One declared field, compiled: its Python name, type, and the versions that have it."""

    __slots__ = (
        "name",
        "kafka_name",
        "type",
        "is_array",
        "struct",
        "versions",
        "nullable",
        "tagged",
        "tag",
        "default",
        "ignorable",
        "flexible_override",
    )

    def __init__(self, decl: Mapping[str, Any], owner: str) -> None:
        self.kafka_name: str = decl["name"]
        self.name = snake_case(self.kafka_name)
        type_name: str = decl["type"]
        self.is_array = type_name.startswith("[]")
        element = type_name[2:] if self.is_array else type_name
        self.struct: Struct | None = None
        if element in _PRIMITIVES:
            if "fields" in decl:
                raise ValueError(f"{owner}.{self.kafka_name}: a {element} has no fields")
            self.type = element
        else:
            if "fields" not in decl:
                raise ValueError(f"{owner}.{self.kafka_name}: unknown type {element!r}")
            self.type = "struct"
            self.struct = Struct(element, decl["fields"])
        self.versions = Versions(decl["versions"])
        self.nullable = Versions(decl.get("nullableVersions", "none"))
        self.tagged = Versions(decl.get("taggedVersions", "none"))
        self.tag: int | None = decl.get("tag")
        if (self.tag is None) != (self.tagged.high < 0):
            raise ValueError(f"{owner}.{self.kafka_name}: tag and taggedVersions go together")
        self.ignorable: bool = bool(decl.get("ignorable", False))
        override = decl.get("flexibleVersions")
        self.flexible_override = Versions(override) if override is not None else None
        self.default = decl.get("default", _NO_DEFAULT)

    def default_for(self, version: int) -> Any:
        """The value this field has when it is absent (or must have, to be left out)."""
        if self.default is not _NO_DEFAULT:
            return self.default
        if self.is_array:
            return []
        if self.type == "struct":
            if self.struct is None:
                raise errors.IllegalStateError(
                    f"field {self.name}: a struct type without its fields")
            return self.struct.defaults(version)
        return _TYPE_DEFAULTS[self.type]

    def __repr__(self) -> str:
        return f"Field({self.name}, {'[]' if self.is_array else ''}{self.type})"


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


_NO_DEFAULT: Any = _NoDefault()
_TYPE_DEFAULTS: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "uint32": 0,
    "int64": 0,
    "float64": 0.0,
    "bool": False,
    "uuid": _ZERO_UUID,
    "string": "",
    "bytes": b"",
    "records": None,
}


class Struct:
    """A structure: an ordered list of fields (a message body, or an element of an array)."""

    __slots__ = ("name", "fields", "by_name", "_layouts", "_plans")

    def __init__(self, name: str, field_decls: list[Mapping[str, Any]]) -> None:
        self.name = name
        self.fields = tuple(Field(d, name) for d in field_decls)
        self.by_name = {f.name: f for f in self.fields}
        if len(self.by_name) != len(self.fields):
            raise ValueError(f"{name}: two fields with the same name")
        # version -> (fields in the fixed layout, tagged fields by tag, absent fields)
        self._layouts: dict[int, tuple[tuple[Field, ...], dict[int, Field], tuple[Field, ...]]]
        self._layouts = {}
        # (version, compact) -> the compiled encoder/decoder plan (see _Plan).
        self._plans: dict[tuple[int, bool], _Plan] = {}

    def layout(self, version: int) -> tuple[tuple[Field, ...], dict[int, Field], tuple[Field, ...]]:
        """The fields of ``version``: (fixed fields in order, tagged fields by tag, absent)."""
        cached = self._layouts.get(version)
        if cached is None:
            fixed = tuple(
                f for f in self.fields if version in f.versions and version not in f.tagged
            )
            tagged = {
                f.tag: f for f in self.fields if version in f.versions and version in f.tagged
            }
            absent = tuple(f for f in self.fields if version not in f.versions)
            cached = self._layouts[version] = (fixed, dict(sorted(tagged.items())), absent)
        return cached

    def defaults(self, version: int) -> dict[str, Any]:
        fixed, tagged, _ = self.layout(version)
        return {f.name: f.default_for(version) for f in (*fixed, *tagged.values())}

    def plan(self, version: int, compact: bool) -> _Plan:
        """The fields of ``version`` turned into small encode/decode functions, made once."""
        cached = self._plans.get((version, compact))
        if cached is None:
            cached = self._plans[(version, compact)] = _Plan(self, version, compact)
        return cached


class Message:
    """A compiled declaration: a request, a response or a header."""

    __slots__ = ("api_key", "type", "name", "valid", "flexible", "body")

    def __init__(self, decl: Declaration) -> None:
        self.api_key: int | None = decl.get("apiKey")
        self.type: str = decl["type"]
        self.name: str = decl["name"]
        self.valid = Versions(decl["validVersions"])
        self.flexible = Versions(decl.get("flexibleVersions", "none"))
        self.body = Struct(self.name, decl["fields"])

    def check_version(self, version: int) -> None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError(f"{self.name}: version must be an int, got {version!r}")
        if version not in self.valid:
            raise errors.UnsupportedVersionError(
                f"{self.name} has no version {version} (valid: {self.valid.low}-{self.valid.high})"
            )

    def __repr__(self) -> str:
        return f"<Message {self.name}>"


def compile_message(decl: Declaration) -> Message:
    """Turn a declaration (data) into a :class:`Message` the codec can walk."""
    return Message(decl)


#: api key -> compiled request / response messages.
REQUESTS: dict[int, Message] = {}
RESPONSES: dict[int, Message] = {}
for _key, (_request, _response) in MESSAGES.items():
    REQUESTS[_key] = compile_message(_request)
    RESPONSES[_key] = compile_message(_response)
REQUEST_HEADER_MESSAGE = compile_message(REQUEST_HEADER)
RESPONSE_HEADER_MESSAGE = compile_message(RESPONSE_HEADER)


def request_message(api_key: int) -> Message:
    try:
        return REQUESTS[api_key]
    except KeyError:
        raise errors.UnsupportedVersionError(f"api key {api_key} is not declared") from None


def response_message(api_key: int) -> Message:
    try:
        return RESPONSES[api_key]
    except KeyError:
        raise errors.UnsupportedVersionError(f"api key {api_key} is not declared") from None


# ---------------------------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------------------------


class _Writer:
    """Collects the encoded bytes as a list of buffers; ``records`` are added without a copy."""

    __slots__ = ("chunks", "buf")

    def __init__(self) -> None:
        self.chunks: list[Buffer] = []
        self.buf = bytearray()

    def view(self, data: Buffer) -> None:
        # Close the current chunk and put the caller's buffer itself in the list.
        if self.buf:
            self.chunks.append(self.buf)
            self.buf = bytearray()
        self.chunks.append(data)

    def result(self) -> list[Buffer]:
        if self.buf:
            self.chunks.append(self.buf)
            self.buf = bytearray()
        return self.chunks


def _write_uvarint(buf: bytearray, value: int) -> None:
    if 0 <= value < 0x80:  # most are one byte (lengths, tag counts)
        buf.append(value)
        return
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        buf.append((value & 0x7F) | 0x80)
        value >>= 7
    buf.append(value)


def _write_length(w: _Writer, length: int | None, compact: bool, wide: bool) -> None:
    """A length prefix: compact = uvarint(len+1); classic = int16 (strings) or int32; null = -1/0."""
    if compact:
        _write_uvarint(w.buf, 0 if length is None else length + 1)
    elif wide:
        w.buf += _INT32.pack(-1 if length is None else length)
    else:
        w.buf += _INT16.pack(-1 if length is None else length)


# Each field is compiled, once per (version, compact), into a function enc(writer, value) and a
# function dec(reader) -> value.  The declarations stay the only description of the messages;
# the functions only save re-reading them for every field of every message.

Encoder = Callable[[_Writer, Any], None]


def _item_encoder(f: Field, version: int, compact: bool) -> Encoder:
    """enc(writer, value) for one element of ``f`` (the field itself if it is not an array)."""
    t = f.type
    nullable = version in f.nullable
    if t in _FIXED:
        pack = _FIXED[t].pack
        accept = (int, float) if t == "float64" else int

        def enc_fixed(w: _Writer, value: Any) -> None:
            if value.__class__ is bool or not isinstance(value, accept):
                raise TypeError(f"{t} needs an int, got {type(value).__name__}")
            w.buf += pack(value)

        return enc_fixed
    if t == "struct":
        sub = f.struct
        if sub is None:
            raise errors.IllegalStateError(f"field {f.name}: a struct type without its fields")

        # A nullable structure (not an array of them) starts with a marker: -1 null, 1 present.
        marked = nullable and not f.is_array

        def enc_struct(w: _Writer, value: Any) -> None:
            if marked:
                w.buf += _INT8.pack(-1 if value is None else 1)
                if value is None:
                    return
            if value.__class__ is not dict and not isinstance(value, Mapping):
                raise TypeError(f"{sub.name} must be a dict, got {type(value).__name__}")
            _encode_struct(w, sub, value, version, compact)

        return enc_struct
    if t == "string":

        def enc_string(w: _Writer, value: Any) -> None:
            if value is None:
                if not nullable:
                    raise ValueError("null is not allowed in this version")
                _write_length(w, None, compact, False)
                return
            if not isinstance(value, str):
                raise TypeError(f"string needs a str, got {type(value).__name__}")
            data = value.encode("utf-8")
            if not compact and len(data) > 0x7FFF:
                raise ValueError(f"string of {len(data)} bytes is too long (32767 at most)")
            _write_length(w, len(data), compact, False)
            w.buf += data

        return enc_string
    if t == "bytes" or t == "records":
        zero_copy = t == "records"

        def enc_bytes(w: _Writer, value: Any) -> None:
            if value is None:
                if not nullable:
                    raise ValueError("null is not allowed in this version")
                _write_length(w, None, compact, True)
                return
            if not isinstance(value, (bytes, bytearray, memoryview)):
                if zero_copy and hasattr(value, "write_to"):
                    # A region of a file (the broker's FileRecords): its length here, the region
                    # itself in the list, for the network thread to send from the file.
                    _write_length(w, len(value), compact, True)
                    w.view(value)
                    return
                raise TypeError(f"{t} needs a bytes-like object, got {type(value).__name__}")
            view = value if isinstance(value, memoryview) else memoryview(value)
            if view.format != "B" or view.ndim != 1:
                view = view.cast("B")
            _write_length(w, view.nbytes, compact, True)
            if zero_copy:
                w.view(view)  # the batch's own memory goes into the list for sendmsg
            else:
                w.buf += view

        return enc_bytes
    if t == "bool":

        def enc_bool(w: _Writer, value: Any) -> None:
            if value.__class__ is not bool:
                raise TypeError(f"bool needs True or False, got {value!r}")
            w.buf.append(1 if value else 0)

        return enc_bool
    if t == "uuid":

        def enc_uuid(w: _Writer, value: Any) -> None:
            if not isinstance(value, uuid.UUID):
                raise TypeError(f"uuid needs a uuid.UUID, got {type(value).__name__}")
            w.buf += value.bytes

        return enc_uuid
    raise AssertionError(t)  # pragma: no cover - Field() rejects unknown types


def _field_encoder(f: Field, version: int, compact: bool) -> Encoder:
    """enc(writer, value) for field ``f``: arrays get a count, then their elements."""
    item = _item_encoder(f, version, compact)
    if not f.is_array:
        return item
    nullable = version in f.nullable

    def enc_array(w: _Writer, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError("null is not allowed in this version")
            _write_length(w, None, compact, True)
            return
        if value.__class__ is not list and isinstance(value, (str, bytes, Mapping)):
            raise TypeError(f"an array must be a list, got {type(value).__name__}")
        _write_length(w, len(value), compact, True)
        for element in value:
            item(w, element)

    return enc_array


def _encode_value(w: _Writer, f: Field, value: Any, version: int, compact: bool) -> None:
    """Encode one field's value (used for tagged fields and by the docs' pictures)."""
    _field_encoder(f, version, compact)(w, value)


class _Plan:
    """One structure at one version, compiled: what to write or read, in which order."""

    __slots__ = ("fixed_enc", "tagged_enc", "absent", "absent_names", "fixed_dec", "tagged_dec",
                 "tag_defaults")

    def __init__(self, s: Struct, version: int, compact: bool) -> None:
        fixed, tagged, absent = s.layout(version)

        def own_compact(f: Field) -> bool:
            # A per-field flexibleVersions (the request header's client id) overrides.
            return version in f.flexible_override if f.flexible_override is not None else compact

        self.fixed_enc = tuple(
            (f, _field_encoder(f, version, own_compact(f)), f.default_for(version)) for f in fixed
        )
        self.tagged_enc = tuple(
            (tag, f, _field_encoder(f, version, True), f.default_for(version))
            for tag, f in tagged.items()
        )
        self.absent = absent
        self.absent_names = frozenset(f.name for f in absent)
        # Runs of fixed-size numbers (index, error code, offsets, ...) are read with one
        # struct.unpack_from each: a step is (None, names, Struct) for a run, (name, dec) else.
        steps: list[tuple[Any, Any]] = []
        run: list[Field] = []
        for f in (*fixed, None):
            if f is not None and not f.is_array and f.type in _FIXED:
                run.append(f)
                continue
            if len(run) == 1:
                steps.append((run[0].name, _field_decoder(run[0], version, compact)))
            elif run:
                fmt = ">" + "".join(_FIXED[x.type].format[1:] for x in run)
                steps.append((None, (tuple(x.name for x in run), struct.Struct(fmt))))
            run = []
            if f is not None:
                steps.append((f.name, _field_decoder(f, version, own_compact(f))))
        self.fixed_dec = tuple(steps)
        self.tagged_dec = {
            tag: (f.name, _field_decoder(f, version, True)) for tag, f in tagged.items()
        }
        # A tagged field missing from the input has its default; mutable ones are made afresh.
        self.tag_defaults = tuple(
            (f.name, f.default_for(version), isinstance(f.default_for(version), (list, dict)))
            for f in tagged.values()
        )


def _encode_struct(
    w: _Writer, s: Struct, value: Mapping[str, Any], version: int, compact: bool
) -> None:
    plan = s.plan(version, compact)
    by_name = s.by_name
    # (the common case, checked in C: every key is a field, none is absent from this version)
    if not value.keys() <= by_name.keys():
        for key in value:
            if key not in by_name:
                raise ValueError(f"{s.name} has no field {key!r}")
    for f in plan.absent if not plan.absent_names.isdisjoint(value) else ():
        # A value for a field this version lacks may be dropped only if the field is ignorable.
        if f.name in value and not f.ignorable and value[f.name] != f.default_for(version):
            raise errors.UnsupportedVersionError(
                f"{s.name}.{f.name} = {value[f.name]!r} cannot be sent in version {version}"
            )
    for f, enc, default in plan.fixed_enc:
        try:
            enc(w, value.get(f.name, default))
        except (TypeError, ValueError, OverflowError, struct.error) as exc:
            raise _located(exc, s, f, version) from exc
    if compact:
        _encode_tags(w, s, plan, value, version)


def _encode_tags(
    w: _Writer, s: Struct, plan: _Plan, value: Mapping[str, Any], version: int
) -> None:
    if not plan.tagged_enc:  # most structures have no tagged field: an empty tag section
        w.buf.append(0)
        return
    # Only tagged fields that differ from their default are sent, in increasing tag order.
    present = [
        (tag, f, enc, value[f.name])
        for tag, f, enc, default in plan.tagged_enc
        if f.name in value and value[f.name] != default
    ]
    _write_uvarint(w.buf, len(present))
    for tag, f, enc, v in present:
        sub = _Writer()
        try:
            enc(sub, v)
        except (TypeError, ValueError, OverflowError, struct.error) as exc:
            raise _located(exc, s, f, version) from exc
        data = b"".join(sub.result())  # tagged fields are small; a copy is fine here
        _write_uvarint(w.buf, tag)
        _write_uvarint(w.buf, len(data))
        w.buf += data


def _located(exc: Exception, s: Struct, f: Field, version: int) -> Exception:
    if isinstance(exc, errors.KafkaError):
        return exc
    kind = TypeError if isinstance(exc, TypeError) else ValueError
    return kind(f"{s.name}.{f.name} (version {version}): {exc}")


def encode(message: Message, version: int, body: Mapping[str, Any]) -> list[Buffer]:
    """Encode ``body`` (a dict with snake_case keys) as ``message`` of ``version``.

    Missing fields take their default.  Returns a list of buffers whose concatenation is the
    encoding; ``records`` values appear in it uncopied.
    """
    message.check_version(version)
    if body.__class__ is not dict and not isinstance(body, Mapping):
        raise TypeError(f"{message.name} body must be a dict, got {type(body).__name__}")
    w = _Writer()
    _encode_struct(w, message.body, body, version, version in message.flexible)
    return w.result()


def encode_bytes(message: Message, version: int, body: Mapping[str, Any]) -> bytes:
    """:func:`encode`, joined into one ``bytes`` (for tests and small messages)."""
    return b"".join(encode(message, version, body))


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: memoryview, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > self.end:
            raise ProtocolError(
                f"truncated: need {n} bytes at offset {self.pos}, {self.end - self.pos} left"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, packer: struct.Struct) -> Any:
        if self.pos + packer.size > self.end:
            raise ProtocolError(f"truncated: need {packer.size} bytes at offset {self.pos}")
        (value,) = packer.unpack_from(self.data, self.pos)
        self.pos += packer.size
        return value

    def uvarint(self) -> int:
        pos = self.pos
        if pos < self.end:  # most are one byte (lengths, tag counts): read those at once
            b = self.data[pos]
            if not b & 0x80:
                self.pos = pos + 1
                return b
        value = 0
        shift = 0
        while True:
            if self.pos >= self.end:
                raise ProtocolError(f"truncated varint at offset {self.pos}")
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ProtocolError(f"unsigned varint longer than 5 bytes at offset {self.pos}")


def _read_length(r: _Reader, compact: bool, wide: bool) -> int | None:
    if compact:
        n = r.uvarint() - 1
    elif wide:
        n = r.unpack(_INT32)
    else:
        n = r.unpack(_INT16)
    if n < 0:
        if n != -1:
            raise ProtocolError(f"negative length {n} at offset {r.pos}")
        return None
    return n


Decoder = Callable[[_Reader], Any]


def _item_decoder(f: Field, version: int, compact: bool) -> Decoder:
    """dec(reader) -> one element of ``f`` (the field itself if it is not an array)."""
    t = f.type
    nullable = version in f.nullable
    name = f.name
    if t in _FIXED:
        unpack_from = _FIXED[t].unpack_from
        size = _FIXED[t].size

        def dec_fixed(r: _Reader) -> Any:
            pos = r.pos
            if pos + size > r.end:
                raise ProtocolError(f"{name}: truncated, need {size} bytes at offset {pos}")
            r.pos = pos + size
            return unpack_from(r.data, pos)[0]

        return dec_fixed
    if t == "struct":
        sub = f.struct
        if sub is None:
            raise errors.IllegalStateError(f"field {f.name}: a struct type without its fields")

        marked = nullable and not f.is_array

        def dec_struct(r: _Reader) -> Any:
            if marked:
                if r.pos >= r.end:
                    raise ProtocolError(f"{name}: truncated at offset {r.pos}")
                r.pos += 1
                if r.data[r.pos - 1] == 0xFF:  # -1: null
                    return None
            return _decode_struct(r, sub, version, compact)

        return dec_struct
    if t == "string":

        def dec_string(r: _Reader) -> Any:
            n = _read_length(r, compact, False)
            if n is None:
                if not nullable:
                    raise ProtocolError(f"{name}: null string where it is not nullable")
                return None
            try:
                return str(r.take(n), "utf-8")
            except UnicodeDecodeError as exc:
                raise ProtocolError(f"{name}: invalid UTF-8: {exc}") from None

        return dec_string
    if t == "bytes" or t == "records":

        def dec_bytes(r: _Reader) -> Any:
            n = _read_length(r, compact, True)
            if n is None:
                if not nullable:
                    raise ProtocolError(f"{name}: null bytes where they are not nullable")
                return None
            return bytes(r.take(n))

        return dec_bytes
    if t == "bool":
        return lambda r: r.take(1)[0] != 0
    if t == "uuid":
        return lambda r: uuid.UUID(bytes=bytes(r.take(16)))
    raise AssertionError(t)  # pragma: no cover


def _field_decoder(f: Field, version: int, compact: bool) -> Decoder:
    """dec(reader) -> the value of field ``f``; arrays read a count, then their elements."""
    item = _item_decoder(f, version, compact)
    if not f.is_array:
        return item
    nullable = version in f.nullable
    name = f.name

    def dec_array(r: _Reader) -> Any:
        n = _read_length(r, compact, True)
        if n is None:
            if not nullable:
                raise ProtocolError(f"{name}: null array where it is not nullable")
            return None
        if n > r.end - r.pos:  # every element takes at least one byte: refuse absurd counts
            raise ProtocolError(f"{name}: array of {n} elements in {r.end - r.pos} bytes")
        return [item(r) for _ in range(n)]

    return dec_array


def _decode_struct(r: _Reader, s: Struct, version: int, compact: bool) -> dict[str, Any]:
    plan = s.plan(version, compact)
    out: dict[str, Any] = {}
    for name, dec in plan.fixed_dec:
        if name is not None:
            out[name] = dec(r)
            continue
        names, packer = dec  # a run of fixed-size fields, one unpack for all
        pos = r.pos
        if pos + packer.size > r.end:
            raise ProtocolError(f"{s.name}: truncated, need {packer.size} bytes at offset {pos}")
        r.pos = pos + packer.size
        out.update(zip(names, packer.unpack_from(r.data, pos), strict=True))
    if compact:
        for name, default, mutable in plan.tag_defaults:
            out[name] = _fresh(default) if mutable else default
        _decode_tags(r, s, plan, out)
    return out


def _fresh(value: Any) -> Any:
    """A new copy of a default made of dicts and lists (the caller may change what we return)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def _decode_tags(r: _Reader, s: Struct, plan: _Plan, out: dict[str, Any]) -> None:
    count = r.uvarint()
    last = -1
    for _ in range(count):
        tag = r.uvarint()
        size = r.uvarint()
        if tag <= last:
            raise ProtocolError(f"{s.name}: tagged fields out of order ({tag} after {last})")
        last = tag
        start = r.pos
        r.take(size)  # bounds check, and skips the field if we do not know it
        known = plan.tagged_dec.get(tag)
        if known is None:
            continue  # an unknown tag: a newer peer's optional field, skipped on purpose
        name, dec = known
        sub = _Reader(r.data, start, start + size)
        out[name] = dec(sub)
        if sub.pos != sub.end:
            raise ProtocolError(
                f"{s.name}.{name}: tagged field has {sub.end - sub.pos} extra bytes"
            )


def _as_view(data: Buffer) -> memoryview:
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def decode(
    message: Message, version: int, data: Buffer, offset: int = 0
) -> tuple[dict[str, Any], int]:
    """Decode ``message`` of ``version`` from ``data`` at ``offset``; returns (dict, end offset)."""
    message.check_version(version)
    r = _Reader(_as_view(data), offset)
    try:
        body = _decode_struct(r, message.body, version, version in message.flexible)
    except (struct.error, IndexError) as exc:  # pragma: no cover - _Reader checks bounds first
        raise ProtocolError(f"{message.name} v{version}: {exc}") from exc
    return body, r.pos


# ---------------------------------------------------------------------------------------------
# Headers and whole requests/responses
# ---------------------------------------------------------------------------------------------


def request_header_version(api_key: int, api_version: int) -> int:
    """v2 (flexible) for flexible request versions, else v1."""
    return 2 if api_version in request_message(api_key).flexible else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """v1 (with a tag buffer) for flexible response versions, else v0.

    ApiVersions is the exception: its response header is always v0, because a client that sent
    a version the broker does not understand must still be able to read the answer (KIP-511).
    """
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if api_version in response_message(api_key).flexible else 0


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Mapping[str, Any],
) -> list[Buffer]:
    """Header + body of a request, as a list of buffers (without the 4-byte size)."""
    message = request_message(api_key)
    message.check_version(api_version)
    header = {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    chunks = encode(REQUEST_HEADER_MESSAGE, request_header_version(api_key, api_version), header)
    body_chunks = encode(message, api_version, body)
    if chunks and body_chunks and isinstance(body_chunks[0], bytearray):
        chunks[-1] += body_chunks[0]  # merge the header into the first small chunk
        chunks.extend(body_chunks[1:])
    else:
        chunks.extend(body_chunks)
    return chunks


def decode_request(data: Buffer) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The broker's side: read a request's header, then its body.

    Returns (header, body, trailing), ``trailing`` being the number of bytes left after the body.
    Like Kafka's ``RequestContext.parseRequest``, the broker reads what the schema declares and
    ignores what follows: librdkafka writes an all-topics Metadata request with three bytes after
    its body, and refusing those would refuse every confluent-kafka ``list_topics()``.
    """
    view = _as_view(data)
    r = _Reader(view)
    api_key = r.unpack(_INT16)
    api_version = r.unpack(_INT16)
    message = request_message(api_key)
    message.check_version(api_version)
    header, pos = decode(REQUEST_HEADER_MESSAGE, request_header_version(api_key, api_version), view)
    body, pos = decode(message, api_version, view, pos)
    return header, body, len(view) - pos


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: Mapping[str, Any]
) -> list[Buffer]:
    """The broker's side: header + body of a response (without the 4-byte size)."""
    message = response_message(api_key)
    chunks = encode(
        RESPONSE_HEADER_MESSAGE,
        response_header_version(api_key, api_version),
        {"correlation_id": correlation_id},
    )
    return chunks + encode(message, api_version, body)


def decode_response(api_key: int, api_version: int, data: Buffer) -> tuple[int, dict[str, Any]]:
    """Read a response's header and body; returns (correlation id, body).

    Bytes after the body are ignored: a newer broker may append fields we do not know (Kafka's
    own readers behave the same way).
    """
    view = _as_view(data)
    message = response_message(api_key)
    header, pos = decode(
        RESPONSE_HEADER_MESSAGE, response_header_version(api_key, api_version), view
    )
    body, _ = decode(message, api_version, view, pos)
    return header["correlation_id"], body


def peek_correlation_id(data: Buffer) -> int:
    """The correlation id of a response frame: its first four bytes, in every header version."""
    view = _as_view(data)
    if len(view) < 4:
        raise ProtocolError("response shorter than its correlation id")
    return int(_INT32.unpack_from(view, 0)[0])
