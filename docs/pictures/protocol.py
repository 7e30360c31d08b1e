"""The protocol codec: classic vs flexible encodings, and a Produce request as a list of buffers.

Both pictures are drawn from what the real codec produces, so they cannot drift from it.
"""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_boxes", pathlib.Path(__file__).with_name("_boxes.py")
)
_boxes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_boxes)

# A small message declared like the real ones: version 0 classic, version 1 flexible.
DEMO = {
    "type": "request",
    "name": "DemoRequest",
    "validVersions": "0-1",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "Name", "type": "string", "versions": "0+"},
        {"name": "Missing", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Ids", "type": "[]int32", "versions": "0+"},
        {
            "name": "Hint",
            "type": "int32",
            "versions": "1+",
            "taggedVersions": "1+",
            "tag": 0,
            "default": -1,
        },
    ],
}
VALUE = {"name": "abc", "missing": None, "ids": [7, 8], "hint": 5}


def _segments(codec, message, version):
    """(label, bytes) per fixed field, then the tag buffer; and the whole encoding."""
    value = dict(VALUE) if version else {k: v for k, v in VALUE.items() if k != "hint"}
    out = []
    fixed, _, _ = message.body.layout(version)
    for field in fixed:
        w = codec._Writer()
        codec._encode_value(w, field, value[field.name], version, version in message.flexible)
        out.append((field.name, b"".join(w.result())))
    whole = codec.encode_bytes(message, version, value)
    used = sum(len(data) for _, data in out)
    assert whole.startswith(b"".join(data for _, data in out))
    if len(whole) > used:
        out.append(("tag buffer", whole[used:]))
    return out, whole


def _encodings(out_dir):
    from kafkacore.protocol import codec

    message = codec.compile_message(DEMO)
    fig, ax = _boxes.figure(12.0, 4.2)
    ax.text(
        0.2,
        3.9,
        'name="abc", missing=null, ids=[7, 8], hint=5 (a tagged field, v1+)',
        fontsize=10,
        weight="bold",
        family="monospace",
    )
    for row, version in enumerate((0, 1)):
        y = 2.6 - row * 1.6
        kind = "classic (v0)" if version == 0 else "flexible (v1)"
        ax.text(0.2, y + 0.85, kind, fontsize=9, weight="bold")
        segments, whole = _segments(codec, message, version)
        x = 0.2
        for label, data in segments:
            w = 0.34 * len(data) + 0.3
            _boxes.box(ax, x, y, w, 0.6, data.hex(" "), "wire" if label else "python", 7)
            ax.text(x + w / 2, y - 0.25, label or "-", fontsize=8, ha="center")
            x += w + 0.08
        ax.text(x + 0.2, y + 0.25, f"{len(whole)} bytes", fontsize=9)
    ax.text(
        0.2,
        0.1,
        "classic: int16 string length, int32 array count, -1 = null.   flexible: unsigned "
        "varint length+1, 0 = null, then a tag buffer (count, tag, size, bytes)",
        fontsize=8,
    )
    _boxes.save(fig, out_dir / "protocol_encodings.png")


def _produce_buffers(out_dir):
    from kafkacore.protocol import codec
    from kafkacore.protocol.api_keys import ApiKey

    batches = [bytearray(b"\x00" * n) for n in (16384, 700, 4096)]
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [
            {
                "name": "orders",
                "partition_data": [
                    {"index": 0, "records": memoryview(batches[0])},
                    {"index": 1, "records": memoryview(batches[1])},
                ],
            },
            {
                "name": "clicks",
                "partition_data": [
                    {"index": 4, "records": memoryview(batches[2])},
                ],
            },
        ],
    }
    chunks = codec.encode_request(ApiKey.PRODUCE, 9, 42, "producer-1", body)
    fig, ax = _boxes.figure(12.0, 2.6)
    ax.text(
        0.2,
        2.3,
        "encode_request(PRODUCE v9, ...) returns a list of buffers (sendmsg sends them as one)",
        fontsize=10,
        weight="bold",
    )
    x = 0.2
    total = 4 + sum(len(c) if not isinstance(c, memoryview) else c.nbytes for c in chunks)
    _boxes.box(ax, x, 1.0, 0.7, 0.8, "size\n4 B", "wire", 8)
    x += 0.78
    for c in chunks:
        n = c.nbytes if isinstance(c, memoryview) else len(c)
        is_batch = isinstance(c, memoryview) and any(c.obj is b for b in batches)
        w = 0.9 + (2.2 if is_batch else 0.6) * (n / 16384) ** 0.5
        label = f"batch\n{n} B\n(its own memory)" if is_batch else f"fields\n{n} B\n(new)"
        _boxes.box(ax, x, 1.0, w, 0.8, label, "compiled" if is_batch else "python", 7)
        x += w + 0.08
    ax.text(
        0.2,
        0.4,
        f"{total} bytes on the wire; the {sum(len(b) for b in batches)} bytes of "
        "record batches are never copied by Python",
        fontsize=9,
    )
    _boxes.save(fig, out_dir / "protocol_produce_buffers.png")


def draw(out_dir):
    out_dir = pathlib.Path(out_dir)
    _encodings(out_dir)
    _produce_buffers(out_dir)
