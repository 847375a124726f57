"""What a Parquet column chunk's pages say they hold, read from their headers before any page
is decompressed: a file's footer (what ``pyarrow`` shows as its metadata) is written by
whoever made the file, and a footer that understates a column's values or sizes passed the
footer's checks while the pages behind it decompressed to whatever their own headers said.

A page header is a Thrift struct in the compact protocol (``PageHeader`` of parquet-format:
1 type, 2 uncompressed_page_size, 3 compressed_page_size, 5 data_page_header, 7
dictionary_page_header, 8 data_page_header_v2, the last three starting with their
num_values). pyarrow does not expose page headers, so this module reads the few fields it
needs and skips the others by their wire types; standard library only. It reads at most
:data:`MAX_PAGES` headers of a chunk, never a page's body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

__all__ = ["MAX_PAGES", "ChunkPages", "PageHeaderError", "read_chunk_pages", "thrift_struct"]

#: Most pages of one column chunk walked through (a real chunk has tens; each header is read).
MAX_PAGES = 100_000
#: Largest header read (headers with statistics hold two values; 64 KiB is plenty).
MAX_HEADER_BYTES = 64 * 1024
#: Deepest struct nesting read (a page header nests two levels).
MAX_DEPTH = 16


class PageHeaderError(ValueError):
    """A page header that cannot be read: the file is damaged or hostile."""


@dataclass(frozen=True)
class ChunkPages:
    """The totals a chunk's page headers give: values (dictionary entries counted apart) and
    the bytes its pages decompress to."""

    values: int
    dictionary_values: int
    uncompressed_bytes: int
    pages: int


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise PageHeaderError("a page header ends inside a number")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise PageHeaderError("a page header holds a number longer than 10 bytes")


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _value(buf: bytes, pos: int, kind: int, depth: int) -> tuple[Any, int]:
    """One value of compact-protocol type ``kind`` at ``pos``: ints as ints, binaries as
    bytes, lists and sets as lists, maps as lists of pairs, structs as dicts by field id."""
    if kind in (1, 2):  # a boolean inside a list: its own byte
        if pos >= len(buf):
            raise PageHeaderError("a page header ends inside a value")
        return buf[pos] == 1, pos + 1
    if kind == 3:
        if pos >= len(buf):
            raise PageHeaderError("a page header ends inside a value")
        return buf[pos], pos + 1
    if kind in (4, 5, 6):
        n, pos = _varint(buf, pos)
        return _zigzag(n), pos
    if kind == 7:
        if pos + 8 > len(buf):
            raise PageHeaderError("a page header ends inside a value")
        return buf[pos : pos + 8], pos + 8
    if kind == 8:
        size, pos = _varint(buf, pos)
        if pos + size > len(buf):
            raise PageHeaderError("a page header ends inside a value")
        return buf[pos : pos + size], pos + size
    if kind in (9, 10):
        if pos >= len(buf):
            raise PageHeaderError("a page header ends inside a list")
        head = buf[pos]
        pos += 1
        size, element = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint(buf, pos)
        if size > len(buf) - pos:
            raise PageHeaderError("a page header's list is longer than the header")
        items = []
        for _ in range(size):
            item, pos = _value(buf, pos, element, depth + 1)
            items.append(item)
        return items, pos
    if kind == 11:
        size, pos = _varint(buf, pos)
        if size == 0:
            return [], pos
        if pos >= len(buf) or size > len(buf) - pos:
            raise PageHeaderError("a page header's map is longer than the header")
        kinds = buf[pos]
        pos += 1
        pairs = []
        for _ in range(size):
            key, pos = _value(buf, pos, kinds >> 4, depth + 1)
            val, pos = _value(buf, pos, kinds & 0x0F, depth + 1)
            pairs.append((key, val))
        return pairs, pos
    if kind == 12:
        return thrift_struct(buf, pos, depth + 1)
    raise PageHeaderError(f"a page header holds an unknown Thrift type {kind}")


def thrift_struct(buf: bytes, pos: int = 0, depth: int = 0) -> tuple[dict[int, Any], int]:
    """The compact-protocol struct at ``pos`` as ``{field id: value}``, and where it ends."""
    if depth > MAX_DEPTH:
        raise PageHeaderError("a page header nests too deeply")
    fields: dict[int, Any] = {}
    last = 0
    while True:
        if pos >= len(buf):
            raise PageHeaderError("a page header ends inside a struct")
        head = buf[pos]
        pos += 1
        if head == 0:
            return fields, pos
        delta, kind = head >> 4, head & 0x0F
        if delta:
            field = last + delta
        else:
            raw, pos = _varint(buf, pos)
            field = _zigzag(raw)
        if kind in (1, 2):  # a boolean field: its value is its type
            fields[field] = kind == 1
        else:
            fields[field], pos = _value(buf, pos, kind, depth)
        last = field


def read_chunk_pages(handle: IO[bytes], start: int, length: int) -> ChunkPages:
    """Walk the page headers of the column chunk stored at ``start`` for ``length`` bytes
    (what its metadata says: the bytes a reader reads for it), to its end; the totals the
    headers give. A page whose header says it is stored in more bytes than remain is a
    :class:`PageHeaderError`."""
    values = dictionary = uncompressed = pages = 0
    pos, end = start, start + length
    while pos < end and pages < MAX_PAGES:
        handle.seek(pos)
        buf = handle.read(min(4096, end - pos))
        try:
            header, used = thrift_struct(buf)
        except PageHeaderError:  # a header longer than the first read (statistics): read more
            handle.seek(pos)
            buf = handle.read(min(MAX_HEADER_BYTES, end - pos))
            header, used = thrift_struct(buf)
        stored, size = header.get(3), header.get(2)
        if not isinstance(stored, int) or not isinstance(size, int) or stored < 0 or size < 0:
            raise PageHeaderError("a page header has no sizes")
        if pos + used + stored > end:
            raise PageHeaderError(f"a page stored in {stored} bytes runs past its column chunk")
        pages += 1
        uncompressed += size
        if isinstance(header.get(7), dict):
            dictionary += max(0, int(header[7].get(1, 0)))
        else:
            body = header.get(5) if isinstance(header.get(5), dict) else header.get(8)
            if isinstance(body, dict):
                values += max(0, int(body.get(1, 0)))
        pos += used + stored
    return ChunkPages(values, dictionary, uncompressed, pages)
