"""File content sources and Dropbox content_hash.

Exists so that file bodies are never held in memory for synthetic trees: a
synthetic file's bytes are a pure function of (seed, offset), any range can be
produced quickly, and content_hash follows docs/DROPBOX-API.md, "content_hash",
exactly.
"""

import hashlib
import random
import struct

BLOCK = 4 * 1024 * 1024          # content_hash block size (4 MiB)
PERIOD = 64 * 1024               # synthetic content repeats every 64 KiB ...
STAMP_EVERY = 4096               # ... except each 4 KiB block is stamped
_POOL_SIZE = 1 << 20
# A fixed pool of pseudo-random bytes; every synthetic file uses a 64 KiB window.
_POOL = random.Random(0xDB0C5EED).randbytes(_POOL_SIZE + PERIOD)
_STAMP = struct.Struct("<QQ")
_MASK64 = (1 << 64) - 1


def content_hash_bytes(chunks):
    """content_hash of the concatenation of ``chunks`` (an iterable of bytes-likes)."""
    if isinstance(chunks, list) and len(chunks) == 1 and len(chunks[0]) <= BLOCK:
        data = chunks[0]
        if not len(data):
            return hashlib.sha256(b"").digest()
        return hashlib.sha256(hashlib.sha256(data).digest()).digest()
    outer = hashlib.sha256()
    block = hashlib.sha256()
    in_block = 0
    for chunk in chunks:
        mv = memoryview(chunk)
        while len(mv):
            take = min(BLOCK - in_block, len(mv))
            block.update(mv[:take])
            in_block += take
            mv = mv[take:]
            if in_block == BLOCK:
                outer.update(block.digest())
                block = hashlib.sha256()
                in_block = 0
    if in_block:
        outer.update(block.digest())
    return outer.digest()


def content_hash_hex(data):
    return content_hash_bytes([data]).hex()


def _period(seed):
    pos = (seed * 2654435761) % _POOL_SIZE
    return memoryview(_POOL)[pos:pos + PERIOD]


def synth_read(seed, offset, length):
    """Bytes [offset, offset+length) of the synthetic stream for ``seed``
    (a bytes-like: bytearray or memoryview).

    Byte i is the pool window byte i % 64KiB, except that the first 16 bytes of
    each 4 KiB block hold (block index, seed) little-endian, so a misplaced range
    is detectable.
    """
    if length <= 0:
        return b""
    a0 = offset - offset % STAMP_EVERY
    end = offset + length
    a1 = -(-end // STAMP_EVERY) * STAMP_EVERY
    per = _period(seed)
    n = a1 - a0
    p = a0 % PERIOD
    if p + n <= PERIOD:
        buf = bytearray(per[p:p + n])
    else:
        parts = []
        pos = a0
        while pos < a1:
            p = pos % PERIOD
            take = min(PERIOD - p, a1 - pos)
            parts.append(per[p:p + take])
            pos += take
        buf = bytearray(b"".join(parts))
    s = seed & _MASK64
    pack_into = _STAMP.pack_into
    first = a0 // STAMP_EVERY
    for i in range(n // STAMP_EVERY):
        pack_into(buf, i * STAMP_EVERY, first + i, s)
    start = offset - a0
    if start == 0 and n == length:
        return buf
    return memoryview(buf)[start:start + length]


class Source:
    """A readable description of one file version's bytes.

    kind: "synth" (data = seed), "bytes" (data = bytes), "disk" (data = path).
    """

    __slots__ = ("kind", "data", "size")

    def __init__(self, kind, data, size):
        self.kind, self.data, self.size = kind, data, size

    def iter_range(self, offset, length, chunk=1 << 20):
        """Yield the bytes [offset, offset+length) in chunks of about ``chunk``."""
        end = min(self.size, offset + length)
        if self.kind == "bytes":
            mv = memoryview(self.data)
            for p in range(offset, end, chunk):
                yield mv[p:min(end, p + chunk)]
        elif self.kind == "synth":
            for p in range(offset, end, chunk):
                yield synth_read(self.data, p, min(end, p + chunk) - p)
        else:
            with open(self.data, "rb") as f:
                f.seek(offset)
                p = offset
                while p < end:
                    b = f.read(min(chunk, end - p))
                    if not b:
                        # File shrank on disk: pad so Content-Length stays honest.
                        b = b"\0" * min(chunk, end - p)
                    p += len(b)
                    yield b

    def read_all(self):
        return b"".join(bytes(c) for c in self.iter_range(0, self.size))

    def content_hash(self):
        """Raw 32-byte content_hash digest."""
        if self.size <= BLOCK:
            if self.kind == "synth":
                return content_hash_bytes([synth_read(self.data, 0, self.size)])
            if self.kind == "bytes":
                return content_hash_bytes([self.data])
        return content_hash_bytes(self.iter_range(0, self.size, chunk=BLOCK))
