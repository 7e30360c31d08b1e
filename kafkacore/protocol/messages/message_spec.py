"""What a message declaration is: the shape every module of this package writes, and the one
type they share.

Kafka describes each request and response in a JSON file
(``clients/src/main/resources/common/message/*.json`` in apache/kafka) and generates Java code
from it.  We write the same declarations as Python data, with the same keys, so the two can be
read side by side, and :mod:`kafkacore.protocol.codec` interprets them: one encoder and one decoder
for every message, in both directions (requests and responses).

A declaration is a dict:

``apiKey``, ``type`` (``"request"``, ``"response"`` or ``"header"``), ``name``
    as in Kafka's file.
``validVersions``
    the versions that exist, e.g. ``"0-11"``.
``flexibleVersions``
    the versions that use the compact encodings (unsigned-varint lengths, plus one so that 0 can
    mean null) and end every structure with a buffer of tagged fields.
``fields``
    a list of field dicts:

    ``name``
        Kafka's CamelCase name; our dicts use it in snake_case (``TopicData`` -> ``topic_data``).
    ``type``
        ``int8``, ``int16``, ``uint16``, ``int32``, ``int64``, ``float64``, ``bool``, ``uuid``,
        ``string``, ``bytes``, ``records``, an array ``[]T`` of any of those, an array of
        structures ``[]StructName`` (the field has ``fields``), or a single structure
        ``StructName`` (also with ``fields``).
    ``versions``
        the versions that have the field (``"3+"``, ``"8-10"``, ``"none"``).
    ``nullableVersions``
        the versions in which it may be null (``None`` in Python).
    ``taggedVersions`` and ``tag``
        a tagged field: not in the fixed layout but in the tag buffer, sent only when it differs
        from its default, skippable by a reader that does not know it.
    ``default``
        the value when absent (Kafka's ``"null"`` is ``None`` here).
    ``ignorable``
        true if the encoder may drop a non-default value in a version without the field.
    ``flexibleVersions``
        a per-field override (the request header's client id is never compact).

The ``about`` texts and the options that only matter to Kafka's code generator (``entityType``,
``mapKey``, ``listeners``) are left out.
"""

from __future__ import annotations

from typing import Any

#: One message (or header) declaration, as described above.
Declaration = dict[str, Any]
