"""Serializers from the three clients a Python developer knows, adapted once, at construction.

The compiled ``RecordAppender`` calls a serializer as ``serializer(topic, obj)`` (Java's
``Serializer.serialize(String topic, T data)``). Other clients use other conventions:

- kafka-python: ``serializer(obj)``, one argument;
- confluent-kafka: a ``Serializer`` object called as ``serializer(obj, ctx)``, where ``ctx`` is a
  ``SerializationContext(topic, MessageField.KEY or VALUE)``.

:func:`adapt_serializer` looks at the callable's signature once, when the producer is built, and
returns a ``(topic, obj)`` callable for the appender; nothing is inspected per record. Whatever the
user's serializer raises comes back as :class:`~kafkacore.errors.SerializationError` with the
original exception as its cause, and a serializer that returns ``str`` is named in the error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kafkacore.errors import ConfigError, SerializationError

#: The appender's calling convention: ``(topic, obj) -> bytes-like | None``.
TopicSerializer = Callable[[str, Any], Any]


def calling_convention(serializer: Callable[..., Any]) -> str:
    """``"topic"`` for ``(topic, obj)``, ``"one"`` for ``(obj)``, ``"ctx"`` for ``(obj, ctx)``.

    :raises ConfigError: if the callable cannot be called with one or two positional arguments.
    """
    try:
        parameters = list(inspect.signature(serializer).parameters.values())
    except (TypeError, ValueError):
        # Built-ins without a signature (``bytes``, ``str.encode``): they take the object alone.
        return "one"
    positional = [p for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    if len(positional) >= 2 and positional[1].name == "ctx":
        return "ctx"
    if len(required) == 2 or (not required and (varargs or len(positional) >= 2)):
        return "topic"
    if len(required) == 1 or (not required and len(positional) == 1):
        return "one"
    raise ConfigError(
        f"{_name(serializer)} cannot be a serializer: it must take (value), (topic, value) "
        f"or (value, ctx), but its signature is {inspect.signature(serializer)}")


def adapt_serializer(serializer: Callable[..., Any] | None, field: str) -> TopicSerializer | None:
    """``serializer`` as a ``(topic, obj)`` callable that raises only ``SerializationError``.

    :param field: ``"key"`` or ``"value"``: named in errors, and confluent's ``MessageField``.
    """
    if serializer is None:
        return None
    convention = calling_convention(serializer)
    name = f"{field}.serializer {_name(serializer)}"

    if convention == "ctx":
        context = _context_factory(field)

        def call(topic: str, obj: Any) -> Any:
            return serializer(obj, context(topic))
    elif convention == "one":
        def call(topic: str, obj: Any) -> Any:
            return serializer(obj)
    else:
        call = serializer

    def serialize(topic: str, obj: Any) -> Any:
        try:
            out = call(topic, obj)
        except SerializationError:
            raise
        except Exception as e:
            raise SerializationError(f"{name} failed on topic {topic!r}: {e!r}") from e
        if type(out) is str:
            raise SerializationError(
                f"{name} returned str, not bytes: return bytes (for example text.encode())")
        return out

    return serialize


def _context_factory(field: str) -> Callable[[str], Any]:
    try:
        from confluent_kafka.serialization import MessageField, SerializationContext
    except ImportError:
        # No confluent-kafka here: a stand-in with the same two attributes.
        class _Context:
            __slots__ = ("topic", "field", "headers")

            def __init__(self, topic: str, field: str) -> None:
                self.topic, self.field, self.headers = topic, field, None

        return lambda topic: _Context(topic, field)
    message_field = MessageField.KEY if field == "key" else MessageField.VALUE
    return lambda topic: SerializationContext(topic, message_field)


def _name(serializer: Callable[..., Any]) -> str:
    return getattr(serializer, "__qualname__", None) or type(serializer).__qualname__
