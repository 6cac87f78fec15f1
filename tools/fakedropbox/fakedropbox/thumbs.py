"""Thumbnails for files/get_thumbnail_batch, standard library only.

Exists so the fake can answer thumbnail requests with real, decodable images
without decoding the photos (synthetic photos are not images at all): which
files qualify, the photo's pixel size, the size a thumbnail mode gives, a
synthetic picture and encoders for PNG (zlib), baseline JPEG and lossless
WebP (VP8L).

The picture is a 4 x 4 grid of colour cells, each with a left-to-right shading,
whose colours come from the file's content_hash: the same bytes give the same
picture at every size, changed bytes give another one.  The JPEG and WebP
encoders exploit the picture's regularity: JPEG blocks are flat (8 x 8 pixels
of one colour, the picture sampled at the block's centre: DC coefficients only),
WebP rows equal to the row above are one backward reference.
"""

import functools
import hashlib
import struct
import zlib

IMAGE_EXTS = frozenset(("jpg", "jpeg", "png", "tiff", "tif", "gif", "webp", "ppm", "bmp"))
MAX_IMAGE_BYTES = 20 * 1024 * 1024     # larger files: unsupported_image
MAX_BATCH = 25
FORMATS = ("jpeg", "png", "webp")
SIZES = {"w32h32": (32, 32), "w64h64": (64, 64), "w128h128": (128, 128),
         "w256h256": (256, 256), "w480h320": (480, 320), "w640h480": (640, 480),
         "w960h640": (960, 640), "w1024h768": (1024, 768), "w2048h1536": (2048, 1536)}
MODES = ("strict", "bestfit", "fitone_bestfit", "original")
SNIFF_BYTES = 128 * 1024              # header bytes read to find a real image's size
MAX_SIDE = 4096                       # the fake's own cap on a thumbnail's sides
GRID = 4


def extension_ok(name):
    ext = name.rpartition(".")[2] if "." in name else ""
    return ext.lower() in IMAGE_EXTS


# ---- the photo's pixel size -------------------------------------------------------

def sniff_size(head):
    """(width, height) from a PNG, GIF, BMP or JPEG header in ``head``, else None."""
    try:
        if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
            return struct.unpack(">II", head[16:24])
        if head[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", head[6:10])
        if head[:2] == b"BM" and len(head) >= 26:
            w, h = struct.unpack("<ii", head[18:26])
            return abs(w), abs(h)
        if head[:2] == b"\xff\xd8":
            i = 2
            while i + 9 < len(head):
                if head[i] != 0xFF:
                    return None
                m = head[i + 1]
                if m == 0xFF:
                    i += 1
                    continue
                if m in (0x01, 0xD8) or 0xD0 <= m <= 0xD7:
                    i += 2
                    continue
                seg = struct.unpack(">H", head[i + 2:i + 4])[0]
                if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", head[i + 5:i + 9])
                    return w, h
                i += 2 + seg
    except struct.error:
        return None
    return None


def photo_size(head, digest):
    """The photo's pixel size: from its header when it is a real image, else a
    4000 x 3000 (landscape) or 3000 x 4000 (portrait) photo chosen by its content_hash."""
    got = sniff_size(head)
    if got and got[0] > 0 and got[1] > 0:
        return got
    return (4000, 3000) if digest[0] & 1 == 0 else (3000, 4000)


def fitted(w, h, box, mode):
    """The thumbnail's size for a w x h photo, a (bw, bh) box and a mode (Dropbox's words):
    strict: scale down to fit within the box; bestfit: to fit within the box or its
    transpose (the larger result); fitone_bestfit: to cover the box or its transpose (the
    smaller result), not cropped; original: not resized.  Never scaled up; aspect kept;
    no side over MAX_SIDE (only 'original' or extreme aspect ratios reach it)."""
    bw, bh = box
    if mode == "original":
        s = 1.0
    elif mode == "strict":
        s = min(bw / w, bh / h)
    elif mode == "bestfit":
        s = max(min(bw / w, bh / h), min(bh / w, bw / h))
    else:
        s = min(max(bw / w, bh / h), max(bh / w, bw / h))
    s = min(s, 1.0, MAX_SIDE / max(w, h))
    return max(1, int(w * s + 0.5)), max(1, int(h * s + 0.5))


# ---- the picture ---------------------------------------------------------------------

def palette(digest):
    """GRID x GRID cell colours (r, g, b) from a content_hash."""
    raw = hashlib.sha512(b"fakedropbox-thumbnail|" + digest).digest()
    return [tuple(raw[3 * i:3 * i + 3]) for i in range(GRID * GRID)]


def _pixel(pal, row, x, w):
    """Colour of column x (of w) in grid row ``row``: the cell's colour, shaded from
    -32 (left edge of the cell) to +31 (right edge)."""
    t = x * GRID
    col = t // w
    shade = (t % w) * 64 // w - 32
    r, g, b = pal[row * GRID + col]
    return (min(255, max(0, r + shade)), min(255, max(0, g + shade)),
            min(255, max(0, b + shade)))


def _row_of(y, h):
    return y * GRID // h


def rgb_rows(w, h, digest):
    """The picture's distinct rows as RGB bytes, and the row index of each y."""
    pal = palette(digest)
    rows = [b"".join(bytes(_pixel(pal, g, x, w)) for x in range(w)) for g in range(GRID)]
    return rows, [_row_of(y, h) for y in range(h)]


# ---- PNG ------------------------------------------------------------------------------

def _png_chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + \
        struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def encode_png(w, h, digest):
    """8-bit RGB, non-interlaced, filter 0 on every row."""
    rows, which = rgb_rows(w, h, digest)
    lines = [b"\x00" + r for r in rows]
    comp = zlib.compressobj(6)
    out = []
    for y in range(h):
        out.append(comp.compress(lines[which[y]]))
    out.append(comp.flush())
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + \
        _png_chunk(b"IDAT", b"".join(out)) + _png_chunk(b"IEND", b"")


# ---- baseline JPEG (flat 8 x 8 blocks) ---------------------------------------------------

# The DC table of ITU-T T.81 Annex K (K.3, luminance): code lengths 1..16, symbols 0..11.
_DC_BITS = (0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0)
_DC_VALS = tuple(range(12))
# AC: only end-of-block is ever sent (flat blocks have no AC energy): one 1-bit code.
_AC_BITS = (1,) + (0,) * 15
_AC_VALS = (0x00,)
_Q = 8   # every quantiser step: a flat block's DC coefficient 8 * (v - 128) becomes v - 128


def _canonical(bits, vals):
    """symbol -> (code, length) of a JPEG/DEFLATE canonical Huffman table."""
    out, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(bits[length - 1]):
            out[vals[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return out


_DC_CODES = _canonical(_DC_BITS, _DC_VALS)
_EOB = format(_canonical(_AC_BITS, _AC_VALS)[0][0], "01b")


@functools.lru_cache(maxsize=4096)
def _dc_bits(diff):
    """Bit string (MSB first) of one block: DC difference, then end of block."""
    cat = abs(diff).bit_length()
    code, n = _DC_CODES[cat]
    s = format(code, "0%db" % n)
    if cat:
        extra = diff if diff >= 0 else diff + (1 << cat) - 1
        s += format(extra, "0%db" % cat)
    return s + _EOB


def _ycc(rgb):
    r, g, b = rgb
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb = -0.168736 * r - 0.331264 * g + 0.5 * b + 128
    cr = 0.5 * r - 0.418688 * g - 0.081312 * b + 128
    return tuple(min(255, max(0, int(v + 0.5))) - 128 for v in (y, cb, cr))


def _segment(marker, data):
    return b"\xff" + bytes((marker,)) + struct.pack(">H", len(data) + 2) + data


def encode_jpeg(w, h, digest):
    """Baseline JPEG, JFIF, 3 components at 1x1 sampling (4:4:4), one scan."""
    pal = palette(digest)
    bw, bh = -(-w // 8), -(-h // 8)
    xs = [min(bx * 8 + 4, w - 1) for bx in range(bw)]
    block_rows = {}
    bits = []
    pred = [0, 0, 0]
    for by in range(bh):
        g = _row_of(min(by * 8 + 4, h - 1), h)
        blocks = block_rows.get(g)
        if blocks is None:
            blocks = block_rows[g] = [_ycc(_pixel(pal, g, x, w)) for x in xs]
        for dc in blocks:
            for c in range(3):
                bits.append(_dc_bits(dc[c] - pred[c]))
                pred[c] = dc[c]
    s = "".join(bits)
    s += "1" * (-len(s) % 8)                  # pad the last byte with 1-bits
    data = int(s, 2).to_bytes(len(s) // 8, "big") if s else b""
    data = data.replace(b"\xff", b"\xff\x00")  # byte stuffing
    dht = bytes((0x00,)) + bytes(_DC_BITS) + bytes(_DC_VALS) + \
        bytes((0x10,)) + bytes(_AC_BITS) + bytes(_AC_VALS)
    return b"".join((
        b"\xff\xd8",
        _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"),
        _segment(0xDB, b"\x00" + bytes((_Q,)) * 64),
        _segment(0xC0, struct.pack(">BHHB", 8, h, w, 3) + b"\x01\x11\x00\x02\x11\x00\x03\x11\x00"),
        _segment(0xC4, dht),
        _segment(0xDA, b"\x03\x01\x00\x02\x00\x03\x00\x00\x3f\x00"),
        data,
        b"\xff\xd9"))


# ---- lossless WebP (VP8L) --------------------------------------------------------------
# Bits are packed least significant first; a value of n bits is written LSB first, a
# Huffman code MSB first.  The bit strings below are in stream order.

_CL_ORDER = (17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
_GREEN_SYMBOLS = 256 + 24          # literals + length prefixes, no colour cache
_GREEN_SHORT = 232                 # symbols 0..231: 8-bit codes, 232..279: 9-bit codes


def _v(value, n):
    """A value of n bits, LSB first."""
    return format(value, "0%db" % n)[::-1] if n else ""


def _normal_code(lengths, alphabet):
    """A 'normal' prefix code whose symbol lengths are each one of two values
    (alphabet entries), sent with a code-length code of two 1-bit codes."""
    a, b = sorted(alphabet)
    n = max(_CL_ORDER.index(a), _CL_ORDER.index(b)) + 1
    s = "0" + _v(n - 4, 4)
    for sym in _CL_ORDER[:n]:
        s += _v(1 if sym in (a, b) else 0, 3)
    s += "0"                                            # max_symbol: the whole alphabet
    code = {a: "0", b: "1"}
    return s + "".join(code[x] for x in lengths)


def _green_code(sym):
    if sym < _GREEN_SHORT:
        return format(sym, "08b")
    return format(2 * _GREEN_SHORT + sym - _GREEN_SHORT, "09b")


def _prefix(value):
    """(prefix symbol, extra bit count, extra bits) of a length or distance value >= 1."""
    v = value - 1
    if v < 4:
        return v, 0, 0
    hb = v.bit_length() - 1
    second = (v >> (hb - 1)) & 1
    return 2 * hb + second, hb - 1, v & ((1 << (hb - 1)) - 1)


@functools.lru_cache(maxsize=64)
def _copy_up(length):
    """A backward reference of ``length`` pixels at distance code 1 (the pixel above)."""
    sym, n, extra = _prefix(length)
    return _green_code(256 + sym) + _v(extra, n)        # distance: 1-symbol code, 0 bits


def encode_webp(w, h, digest):
    """Lossless WebP: no transforms, no colour cache, one prefix code group; a row equal
    to the row above is backward references to it, other rows are literal pixels."""
    rows, which = rgb_rows(w, h, digest)
    s = [_v(0x2F, 8), _v(w - 1, 14), _v(h - 1, 14), "0", _v(0, 3),
         "0",          # no transform
         "0",          # no colour cache
         "0",          # no meta prefix codes
         _normal_code([8] * _GREEN_SHORT + [9] * (_GREEN_SYMBOLS - _GREEN_SHORT), (8, 9)),
         _normal_code([8] * 256, (0, 8)),                # red
         _normal_code([8] * 256, (0, 8)),                # blue
         "1" + "0" + "1" + _v(255, 8),                   # alpha: simple code, symbol 255
         "1" + "0" + "0" + "0"]                          # distance: simple code, symbol 0
    lit = {}
    prev = None
    for y in range(h):
        g = which[y]
        if g == prev:
            left = w
            while left:
                n = min(left, 4096)
                s.append(_copy_up(n))
                left -= n
            continue
        prev = g
        row = rows[g]
        line = lit.get(g)
        if line is None:
            parts = []
            for i in range(0, 3 * w, 3):
                r, gg, b = row[i], row[i + 1], row[i + 2]
                parts.append(_green_code(gg) + format(r, "08b") + format(b, "08b"))
            line = lit[g] = "".join(parts)
        s.append(line)
    bits = "".join(s)
    bits += "0" * (-len(bits) % 8)
    data = int(bits[::-1], 2).to_bytes(len(bits) // 8, "little")
    if len(data) % 2:
        data += b"\x00"
        chunk = b"VP8L" + struct.pack("<I", len(data) - 1) + data
    else:
        chunk = b"VP8L" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


@functools.lru_cache(maxsize=256)
def thumbnail(fmt, w, h, digest):
    """The image bytes of a w x h thumbnail in ``fmt`` for content_hash ``digest``."""
    if fmt == "png":
        return encode_png(w, h, digest)
    if fmt == "webp":
        return encode_webp(w, h, digest)
    return encode_jpeg(w, h, digest)
