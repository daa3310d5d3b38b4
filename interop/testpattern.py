"""The SwiftRTC test pattern (/work/dev/TESTPATTERN.md) in numpy: render, read, measure.

Frames are planar I420 numpy arrays (y: H×W, u/v: H/2×W/2, uint8). The band in the top 3 of 24
cell rows carries the frame number, the capture wall-clock ms and a check word; below it a
scrolling colour gradient and a bouncing square give encoders real work.

Addition proposed for TESTPATTERN.md (used here, see TEXTURE): the bouncing square carries a
fine luma texture (4×4-pixel checker, ±TEXTURE luma). Without some small-amplitude detail an
edge-preserving smoothing filter ("beauty") has nothing to remove: the gradient is smooth and
the square's edges are strong, so the filter's effect on the pattern would be invisible.
"""

from __future__ import annotations

import numpy as np

LUMA_ONE = 235
LUMA_ZERO = 16
TEXTURE = 14          # ± luma of the square's checker texture
TEXTURE_CELL = 4      # pixels


def cell_size(width: int, height: int) -> tuple[int, int]:
    return width // 32, height // 24


def band_height(height: int) -> int:
    return 3 * (height // 24)


def _bits(word: int) -> np.ndarray:
    return np.array([(word >> (31 - i)) & 1 for i in range(32)], dtype=bool)


def _triangle(t: int, span: int) -> int:
    """0 → span → 0 … (a bounce) for t ≥ 0."""
    if span <= 0:
        return 0
    t %= 2 * span
    return t if t <= span else 2 * span - t


class PatternRenderer:
    """Renders frame n at W×H (W, H even). Buffers are reused between frames."""

    def __init__(self, width: int, height: int, texture: bool = True):
        if width % 2 or height % 2 or width < 32 or height < 24:
            raise ValueError(f"test pattern needs even W ≥ 32, H ≥ 24, got {width}x{height}")
        self.w, self.h = width, height
        self.cw, self.ch = cell_size(width, height)
        self.band = 3 * self.ch
        self.texture = texture
        x = np.arange(2 * width)
        phase = 2 * np.pi * x / width
        # Two periods so a scrolled window is a plain slice (no np.roll per frame).
        self.grad_y = (16 + 219 * (0.5 + 0.5 * np.sin(phase))).astype(np.uint8)
        xc = np.arange(width)  # two periods of the half-width chroma row
        phase_c = 2 * np.pi * (2 * xc) / width
        self.grad_u = (128 + 96 * np.sin(phase_c + 2.1)).astype(np.uint8)
        self.grad_v = (128 + 96 * np.sin(phase_c + 4.2)).astype(np.uint8)
        self.y = np.empty((height, width), np.uint8)
        self.u = np.empty((height // 2, width // 2), np.uint8)
        self.v = np.empty((height // 2, width // 2), np.uint8)
        s = max(2, (height // 6) & ~1)
        self.square = s
        base = np.full((s, s), 200, np.int16)
        if texture:
            yy, xx = np.mgrid[0:s, 0:s]
            checker = ((yy // TEXTURE_CELL + xx // TEXTURE_CELL) & 1) * 2 - 1
            base += (checker * TEXTURE).astype(np.int16)
        self.square_y = np.clip(base, 0, 255).astype(np.uint8)

    def render(self, n: int, ms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w, h, cw, ch, band = self.w, self.h, self.cw, self.ch, self.band
        y, u, v = self.y, self.u, self.v
        shift = (8 * n) % w
        y[band:] = self.grad_y[shift: shift + w]
        cshift = shift // 2
        u_row = self.grad_u[cshift: cshift + w // 2]
        v_row = self.grad_v[cshift: cshift + w // 2]
        u[band // 2:] = u_row
        v[band // 2:] = v_row
        # band: 3 rows × 32 cells, then neutral chroma
        r0 = n & 0xFFFFFFFF
        r1 = ms & 0xFFFFFFFF
        r2 = ~(r0 ^ r1) & 0xFFFFFFFF
        y[:band] = LUMA_ZERO
        for row, word in enumerate((r0, r1, r2)):
            bits = _bits(word)
            cells = np.where(bits, LUMA_ONE, LUMA_ZERO).astype(np.uint8)
            y[row * ch:(row + 1) * ch, : 32 * cw] = np.repeat(cells, cw)[None, :]
        u[: (band + 1) // 2] = 128
        v[: (band + 1) // 2] = 128
        # bouncing square below the band
        s = self.square
        sx = _triangle(6 * n, w - s) & ~1
        sy = band + (_triangle(4 * n, h - band - s) & ~1)
        sy += sy & 1
        if sy + s <= h:
            y[sy:sy + s, sx:sx + s] = self.square_y
            u[sy // 2:(sy + s) // 2, sx // 2:(sx + s) // 2] = 80
            v[sy // 2:(sy + s) // 2, sx // 2:(sx + s) // 2] = 190
        return y, u, v


def black_i420(width: int, height: int):
    return (np.full((height, width), 16, np.uint8), np.full((height // 2, width // 2), 128, np.uint8),
            np.full((height // 2, width // 2), 128, np.uint8))


def read_words(luma: np.ndarray) -> tuple[int, int, int]:
    """The three band words from a luma (or RGB-derived luma) array H×W."""
    h, w = luma.shape
    cw, ch = cell_size(w, h)
    if cw < 2 or ch < 2:
        raise ValueError(f"frame {w}x{h} too small for the pattern")
    band = luma[: 3 * ch, : 32 * cw].reshape(3, ch, 32, cw)
    core = band[:, ch // 4:(3 * ch) // 4, :, cw // 4:(3 * cw) // 4]
    bits = core.mean(axis=(1, 3)) > 128
    words = []
    for row in range(3):
        word = 0
        for b in bits[row]:
            word = (word << 1) | int(b)
        words.append(word)
    return words[0], words[1], words[2]


def read_pattern(luma: np.ndarray) -> tuple[int, int] | None:
    """(frame number, capture ms mod 2^32), or None when the check word does not match."""
    r0, r1, r2 = read_words(luma)
    if r2 != (~(r0 ^ r1) & 0xFFFFFFFF):
        return None
    return r0, r1


def hf_energy(luma: np.ndarray) -> float:
    """Mean |4-neighbour Laplacian| of the picture below the band (high-frequency energy)."""
    h, _ = luma.shape
    a = luma[band_height(h) + 2:, :].astype(np.int16)
    lap = 4 * a[1:-1, 1:-1] - a[:-2, 1:-1] - a[2:, 1:-1] - a[1:-1, :-2] - a[1:-1, 2:]
    return float(np.abs(lap).mean())


def box_blur(a: np.ndarray, r: int) -> np.ndarray:
    """Mean over a (2r+1)² window (edges replicated), via summed-area tables; float32."""
    p = np.pad(a.astype(np.float32), r + 1, mode="edge")
    s = p.cumsum(0).cumsum(1)
    k = 2 * r + 1
    h, w = a.shape
    out = s[k:k + h, k:k + w] - s[:h, k:k + w] - s[k:k + h, :w] + s[:h, :w]
    return out / (k * k)


def beauty(luma: np.ndarray, strength: float, top: int = 0, radius: int = 4,
           sigma: float = 24.0, lift: float = 6.0) -> None:
    """Edge-preserving smoothing of luma rows [top:] in place, plus a mild brightness lift.

    Each pixel moves towards its local mean by strength·exp(-(d/sigma)²), d = pixel − mean:
    small variations (skin texture, noise) are smoothed, strong edges (|d| ≫ sigma) are kept.
    """
    if strength <= 0:
        return
    region = luma[top:]
    a = region.astype(np.float32)
    mean = box_blur(a, radius)
    d = a - mean
    wgt = strength * np.exp(-(d / sigma) ** 2)
    out = a - wgt * d
    out += strength * lift * (1.0 - out / 255.0)
    region[:] = np.clip(out + 0.5, 0, 255).astype(np.uint8)


def adapt_size(src_w: int, src_h: int, target_w: int, target_h: int) -> tuple[tuple[int, int, int, int], int, int]:
    """libwebrtc-style adaptOutputFormat geometry: orientation-agnostic target, crop to its aspect,
    scale down only. Returns ((crop x, crop y, crop w, crop h), out w, out h), all even."""
    if (target_w > target_h) != (src_w > src_h) and target_w != target_h:
        target_w, target_h = target_h, target_w
    # crop to the target aspect
    if src_w * target_h > src_h * target_w:
        cw, chh = src_h * target_w // target_h, src_h
    else:
        cw, chh = src_w, src_w * target_h // target_w
    cw, chh = cw & ~1, chh & ~1
    cx, cy = ((src_w - cw) // 2) & ~1, ((src_h - chh) // 2) & ~1
    ow, oh = (min(cw, target_w) & ~1, min(chh, target_h) & ~1)
    return (cx, cy, cw, chh), ow, oh


class RateLimiter:
    """Keeps frames evenly so a src_fps stream becomes at most out_fps (libwebrtc's VideoAdapter
    idea): a frame is kept when it is no more than half a source interval before the next slot."""

    def __init__(self, out_fps: float | None, src_fps: float):
        self.interval = 1.0 / out_fps if out_fps else 0.0
        self.tolerance = 0.5 / src_fps
        self.next_t: float | None = None

    def keep(self, t: float) -> bool:
        if not self.interval:
            return True
        if self.next_t is None:
            self.next_t = t
        if t < self.next_t - self.tolerance:
            return False
        self.next_t += self.interval
        if self.next_t < t:  # after a stall: restart the grid instead of bursting
            self.next_t = t + self.interval
        return True


def write_y4m_header(f, width: int, height: int, fps: int = 30) -> None:
    f.write(f"YUV4MPEG2 W{width} H{height} F{fps}:1 Ip A1:1 C420jpeg\n".encode())


def parse_y4m(path) -> dict:
    """{'width', 'height', 'fps', 'colorspace', 'frames': [luma arrays]} (luma only, 4:2:0/4:4:4/mono)."""
    data = open(path, "rb").read()
    nl = data.find(b"\n")
    if not data.startswith(b"YUV4MPEG2 ") or nl < 0:
        raise ValueError(f"{path}: not a Y4M file (header {data[:40]!r})")
    params = {}
    for tok in data[10:nl].decode("ascii", "replace").split():
        params[tok[0]] = tok[1:]
    w, h = int(params["W"]), int(params["H"])
    cs = params.get("C", "420jpeg")
    if cs.startswith("420"):
        size = w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
    elif cs.startswith("444"):
        size = 3 * w * h
    elif cs.startswith("mono"):
        size = w * h
    else:
        raise ValueError(f"{path}: unsupported Y4M colorspace C{cs}")
    frames = []
    pos = nl + 1
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0 or not data.startswith(b"FRAME", pos):
            raise ValueError(f"{path}: bad FRAME header at offset {pos}")
        start = end + 1
        if start + size > len(data):
            raise ValueError(f"{path}: truncated frame {len(frames)} at offset {pos}")
        frames.append(np.frombuffer(data, np.uint8, w * h, start).reshape(h, w))
        pos = start + size
    return {"width": w, "height": h, "fps": params.get("F"), "colorspace": cs, "frames": frames}


def check_png(path) -> tuple[int, int]:
    """Validate a PNG fully (signature, chunk CRCs, IHDR, IDAT inflates to the right size).
    Returns (width, height)."""
    import struct
    import zlib
    data = open(path, "rb").read()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"{path}: no PNG signature")
    pos, ihdr, idat, seen_end = 8, None, b"", False
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise ValueError(f"{path}: truncated chunk {ctype!r} at offset {pos}")
        if zlib.crc32(ctype + body) != struct.unpack(">I", crc)[0]:
            raise ValueError(f"{path}: CRC mismatch in chunk {ctype!r} at offset {pos}")
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat += body
        elif ctype == b"IEND":
            seen_end = True
            break
        pos += 12 + length
    if ihdr is None or not seen_end:
        raise ValueError(f"{path}: missing IHDR or IEND")
    w, h, depth, color, _c, _f, interlace = ihdr
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    if channels is None or depth not in (8, 16) or interlace != 0:
        raise ValueError(f"{path}: unexpected IHDR {ihdr}")
    raw = zlib.decompress(idat)
    expect = h * (1 + w * channels * depth // 8)
    if len(raw) != expect:
        raise ValueError(f"{path}: IDAT inflates to {len(raw)} bytes, expected {expect}")
    return w, h
