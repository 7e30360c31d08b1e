"""``open_line_file``: the one reader of the controllers' line-per-entry logs (``KafkaMetadataLog``
and ``MetadataLog``) cuts a torn last line off the file and refuses damage before it."""

from __future__ import annotations

import json
import logging
import os
import zlib

import pytest

from kafkacore.errors import KafkaStorageError
from kafkacore.raft.line_file import checked_body, encode_line, open_line_file


def numbered(body: bytes, index: int) -> int | None:
    """An entry is ``{"n": index}``: a line out of order is not one."""
    n = json.loads(body).get("n")
    return n if n == index else None


def lines(*ns: int) -> bytes:
    return b"".join(encode_line(json.dumps({"n": n}).encode()) for n in ns)


def test_a_torn_last_line_is_cut_from_the_file_and_the_next_append_goes_there(tmp_path, caplog):
    path = tmp_path / "entries.log"
    whole = lines(0, 1)
    torn = lines(2)[:-4]  # a crash in the middle of the last write
    path.write_bytes(whole + torn)

    with caplog.at_level(logging.WARNING, logger="kafkacore.raft.line_file"):
        opened = open_line_file(path, numbered, what="entry")
    assert opened.items == [0, 1]
    assert opened.positions == [0, len(lines(0))]
    assert opened.size == len(whole) == path.stat().st_size  # cut from the file itself
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: cutting off a torn last entry ({len(torn)} bytes)"]

    os.write(opened.fd, lines(2))  # opened for append, where the torn line was
    os.close(opened.fd)
    again = open_line_file(path, numbered)
    os.close(again.fd)
    assert again.items == [0, 1, 2] and again.size == path.stat().st_size


@pytest.mark.parametrize("last", [
    lines(2)[:-1],  # no newline: the write stopped before it
    b"0000000 x\n",  # the CRC field itself torn
    lines(2).replace(b'"n"', b'"m"'),  # bytes changed: the CRC fails
    lines(3),  # a whole line out of order: decode refuses it, handled as torn
], ids=["no-newline", "short-crc", "bad-crc", "refused-by-decode"])
def test_every_kind_of_bad_last_line_is_cut(tmp_path, last):
    path = tmp_path / "entries.log"
    path.write_bytes(lines(0, 1) + last)
    opened = open_line_file(path, numbered)
    os.close(opened.fd)
    assert opened.items == [0, 1] and path.read_bytes() == lines(0, 1)


def test_a_damaged_line_before_the_last_is_an_error_and_the_file_is_left_alone(tmp_path):
    path = tmp_path / "entries.log"
    data = lines(0, 1, 2)
    damaged = data[:len(lines(0)) + 12] + b"X" + data[len(lines(0)) + 13:]  # the middle line
    path.write_bytes(damaged)
    with pytest.raises(KafkaStorageError, match=f"damaged at byte {len(lines(0))}"):
        open_line_file(path, numbered)
    assert path.read_bytes() == damaged  # nothing cut: damage is for a person to look at


def test_a_missing_file_is_created_empty(tmp_path):
    path = tmp_path / "entries.log"
    opened = open_line_file(path, numbered)
    os.close(opened.fd)
    assert (opened.items, opened.positions, opened.size) == ([], [], 0)
    assert path.exists() and path.read_bytes() == b""


def test_the_line_format():
    line = encode_line(b'{"n":0}')
    assert line == b'%08x {"n":0}\n' % zlib.crc32(b'{"n":0}')
    assert checked_body(line) == b'{"n":0}'
    assert checked_body(line[:-1]) is None
    assert checked_body(b"zzzzzzzz {}\n") is None
