# SPDX-License-Identifier: MIT
"""Pages rendered by headless Chromium (Debian: chromium) to a PNG, and the
PNG read back, standard library only: test_audit.py renders the HTML audit
report and checks that its charts are drawn.

render(html_path, png_path, width, height, scale) -> None (raises Skip when
chromium is missing); read(png_path) -> Image with .width, .height and
.pixel(x, y) -> (r, g, b); count(img, rgb, box) -> how many pixels of box
(x0, y0, x1, y1) have that colour."""
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

from dtest import Skip

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def render(html, png, width=900, height=1600, scale=1.0):
    exe = shutil.which("chromium")
    if not exe:
        raise Skip("chromium is not installed (Debian: chromium)")
    with tempfile.TemporaryDirectory(prefix="breachd-chromium.") as profile:
        argv = [exe] + CHROMIUM_FLAGS + [
            "--user-data-dir=" + profile, "--window-size=%d,%d" % (width, height),
            "--force-device-scale-factor=%g" % scale, "--screenshot=" + png,
            "file://" + os.path.abspath(html)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, HOME=profile))
    if r.returncode != 0 or not os.path.exists(png):
        raise AssertionError("chromium: exit %d\n%s" % (r.returncode, r.stderr[-3000:]))


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


class Image:
    def __init__(self, width, height, bpp, rows):
        self.width, self.height, self.bpp, self.rows = width, height, bpp, rows

    def pixel(self, x, y):
        i = x * self.bpp
        return tuple(self.rows[y][i:i + 3])


def read(path):
    """A non-interlaced 8-bit RGB or RGBA PNG (what Chromium writes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s: not a PNG" % path)
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise AssertionError("%s: PNG type %d/%d/%d not read here" % (path, depth, ctype,
                                                                      interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ft == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ft == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ft == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ft == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                ul = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], ul)) & 255
        rows.append(line)
        prev = line
    return Image(w, h, bpp, rows)


def count(img, rgb, box=None, tol=8):
    """Pixels of box (x0, y0, x1, y1; the whole image by default) within tol
    of colour rgb in each channel."""
    x0, y0, x1, y1 = box or (0, 0, img.width, img.height)
    n = 0
    for y in range(y0, min(y1, img.height)):
        row = img.rows[y]
        for x in range(x0, min(x1, img.width)):
            i = x * img.bpp
            if abs(row[i] - rgb[0]) <= tol and abs(row[i + 1] - rgb[1]) <= tol and \
                    abs(row[i + 2] - rgb[2]) <= tol:
                n += 1
    return n


def rows_with(img, rgb, tol=8):
    """The rows (y) that hold at least one pixel of colour rgb."""
    out = []
    for y in range(img.height):
        if count(img, rgb, (0, y, img.width, y + 1), tol):
            out.append(y)
    return out
