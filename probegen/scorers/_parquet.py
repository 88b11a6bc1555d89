"""A minimal reader for one string column of a Parquet file (no pyarrow needed).

The bundled GloVe package keeps its vocabulary in a Parquet file, and pyarrow is not a
dependency. This reads what that file uses: Thrift compact metadata, data pages v1/v2, PLAIN and
dictionary (RLE_DICTIONARY / PLAIN_DICTIONARY) encodings of BYTE_ARRAY values, definition
levels of an optional column, and UNCOMPRESSED / SNAPPY / GZIP pages. It is run once; the
vocabulary is then cached as text.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np


class ParquetError(ValueError):
    """The file uses a Parquet feature this reader does not support."""


# ---- Thrift compact protocol ----------------------------------------------------------------------
def _varint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if not x & 0x80:
            return r, i


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _value(b: bytes, i: int, t: int):
    if t in (1, 2):  # bool in a field header
        return t == 1, i
    if t == 3:
        return struct.unpack_from("<b", b, i)[0], i + 1
    if t in (4, 5, 6):
        v, i = _varint(b, i)
        return _zigzag(v), i
    if t == 7:
        return struct.unpack_from("<d", b, i)[0], i + 8
    if t == 8:
        n, i = _varint(b, i)
        return bytes(b[i : i + n]), i + n
    if t in (9, 10):  # list / set
        h = b[i]
        i += 1
        n, et = h >> 4, h & 15
        if n == 15:
            n, i = _varint(b, i)
        out = []
        for _ in range(n):
            if et in (1, 2):
                out.append(b[i] == 1)
                i += 1
            else:
                v, i = _value(b, i, et)
                out.append(v)
        return out, i
    if t == 11:  # map
        n, i = _varint(b, i)
        if n == 0:
            return {}, i
        kt, vt = b[i] >> 4, b[i] & 15
        i += 1
        out = {}
        for _ in range(n):
            k, i = _value(b, i, kt)
            out[k], i = _value(b, i, vt)
        return out, i
    if t == 12:
        return _struct(b, i)
    raise ParquetError(f"unknown thrift type {t}")


def _struct(b: bytes, i: int) -> tuple[dict, int]:
    out: dict = {}
    fid = 0
    while True:
        h = b[i]
        i += 1
        if h == 0:
            return out, i
        delta, t = h >> 4, h & 15
        if delta:
            fid += delta
        else:
            v, i = _varint(b, i)
            fid = _zigzag(v)
        out[fid], i = _value(b, i, t)


# ---- codecs and encodings -----------------------------------------------------------------------
def _snappy(b: bytes) -> bytes:
    n, i = _varint(b, 0)
    out = bytearray()
    end = len(b)
    while i < end:
        tag = b[i]
        i += 1
        kind = tag & 3
        if kind == 0:  # literal
            ln = tag >> 2
            if ln >= 60:
                nb = ln - 59
                ln = int.from_bytes(b[i : i + nb], "little")
                i += nb
            ln += 1
            out += b[i : i + ln]
            i += ln
            continue
        if kind == 1:
            ln = ((tag >> 2) & 7) + 4
            off = ((tag >> 5) << 8) | b[i]
            i += 1
        elif kind == 2:
            ln = (tag >> 2) + 1
            off = b[i] | (b[i + 1] << 8)
            i += 2
        else:
            ln = (tag >> 2) + 1
            off = int.from_bytes(b[i : i + 4], "little")
            i += 4
        start = len(out) - off
        if off >= ln:
            out += out[start : start + ln]
        else:  # overlapping copy repeats the last `off` bytes
            for k in range(ln):
                out.append(out[start + k])
    if len(out) != n:
        raise ParquetError("corrupt snappy block")
    return bytes(out)


def _decompress(data: bytes, codec: int) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        return _snappy(data)
    if codec == 2:
        return gzip.decompress(data)
    raise ParquetError(f"compression codec {codec} not supported")


def _rle_hybrid(b: bytes, i: int, end: int, bit_width: int, count: int) -> np.ndarray:
    """Decode ``count`` values of the RLE / bit-packed hybrid encoding from ``b[i:end]``."""
    out: list[np.ndarray] = []
    got = 0
    nbytes = (bit_width + 7) // 8
    while got < count and i < end:
        h, i = _varint(b, i)
        if h & 1:  # bit-packed groups of 8 values, little-endian bit order
            groups = h >> 1
            raw = np.frombuffer(b, dtype=np.uint8, count=groups * bit_width, offset=i)
            i += groups * bit_width
            bits = np.unpackbits(raw, bitorder="little").reshape(-1, bit_width)
            vals = bits.astype(np.int64) @ (1 << np.arange(bit_width, dtype=np.int64))
            out.append(vals)
            got += len(vals)
        else:
            n = h >> 1
            v = int.from_bytes(b[i : i + nbytes], "little")
            i += nbytes
            out.append(np.full(n, v, dtype=np.int64))
            got += n
    vals = np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
    return vals[:count]


def _plain_strings(b: bytes, i: int, n: int) -> tuple[list[str], int]:
    out = []
    for _ in range(n):
        ln = struct.unpack_from("<I", b, i)[0]
        i += 4
        out.append(b[i : i + ln].decode("utf-8"))
        i += ln
    return out, i


# ---- reader -------------------------------------------------------------------------------------
def read_string_column(path: str | Path, column: int = 0) -> list[str | None]:
    """All values of string column ``column`` (nulls as None), in row order."""
    try:  # the real thing, when installed
        import pyarrow.parquet as pq  # type: ignore

        table = pq.read_table(str(path))
        return table.column(column).to_pylist()
    except ImportError:
        pass
    b = Path(path).read_bytes()
    if b[:4] != b"PAR1" or b[-4:] != b"PAR1":
        raise ParquetError(f"{path} is not a Parquet file")
    (n_meta,) = struct.unpack("<I", b[-8:-4])
    meta, _ = _struct(b, len(b) - 8 - n_meta)
    schema = meta[2]
    leaf = [s for s in schema[1:] if 5 not in s]  # elements with num_children are groups
    optional = leaf[column].get(3, 0) == 1
    out: list[str | None] = []
    for rg in meta[4]:
        cmeta = rg[1][column][3]
        codec, n_values = cmeta[4], cmeta[5]
        i = cmeta.get(11, cmeta[9])  # dictionary page offset, else data page offset
        dictionary: list[str] | None = None
        got = 0
        while got < n_values:
            header, i = _struct(b, i)
            ptype, csize = header[1], header[3]
            body = b[i : i + csize]
            i += csize
            if ptype == 2:  # dictionary page
                raw = _decompress(body, codec)
                dictionary, _ = _plain_strings(raw, 0, header[7][1])
                continue
            if ptype == 0:  # data page v1: levels and values compressed together
                h = header[5]
                n, enc = h[1], h[2]
                raw = _decompress(body, codec)
                j = 0
                defined = np.ones(n, dtype=bool)
                if optional:
                    (ln,) = struct.unpack_from("<I", raw, 0)
                    defined = _rle_hybrid(raw, 4, 4 + ln, 1, n).astype(bool)
                    j = 4 + ln
            elif ptype == 3:  # data page v2: levels uncompressed, then the values
                h = header[8]
                n, enc = h[3], h[4]
                dl, rl = h[5], h[6]
                defined = _rle_hybrid(body, rl, rl + dl, 1, n).astype(bool) if optional and dl else np.ones(n, bool)
                compressed = h.get(7, True)
                raw = body[:rl + dl] + (_decompress(body[rl + dl :], codec) if compressed else body[rl + dl :])
                j = rl + dl
            else:
                raise ParquetError(f"page type {ptype} not supported")
            k = int(defined.sum())
            if enc == 0:
                vals, _ = _plain_strings(raw, j, k)
            elif enc in (2, 8):
                if dictionary is None:
                    raise ParquetError("dictionary-encoded page without a dictionary")
                width = raw[j]
                idx = _rle_hybrid(raw, j + 1, len(raw), width, k)
                vals = [dictionary[x] for x in idx.tolist()]
            else:
                raise ParquetError(f"encoding {enc} not supported")
            it = iter(vals)
            out.extend(next(it) if d else None for d in defined.tolist())
            got += n
    return out
