"""Input images for mastering: TIFF, PNG and DPX frames, and fitting them to a DCI container.

Readers return (H, W, 3) float32 in 0..1 (code value / (2^bits - 1)); grey is repeated into three
channels, alpha dropped. With ``stored=True``, 8- and 16-bit samples stay the integers they are
stored as (white: their dtype's maximum), so that mastering scales them where it converts the
colour (on the GPU, after an upload of half or a quarter of the bytes). TIFF through
``tifffile``; PNG through libpng (``imagecodecs``: Pillow
13 still reads 16-bit RGB PNG as 8 bits); DPX (SMPTE ST 268) through the small reader here: RGB
or RGBA, 8, 10 (packed method A, filled to 32-bit words), 12 (method A, filled to 16-bit words)
or 16 bits, either byte order. Every reader takes the frame's size from the file's header and
checks it (:func:`max_input_size`, the sequence's first frame) before decoding any pixel data:
a header claiming 30000x30000 costs a few kilobytes, not gigabytes.

:func:`fit` crops and scales an image into a DCI image area as a :class:`.geometry.Placement`
says (default: the whole picture inside, its aspect ratio kept, a Lanczos (a = 3) filter) and
pads it with black, centred; :func:`image_area` picks flat, scope or the full container.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import imagecodecs
import numpy as np
import tifffile

from cinegpu.decode.codestream import dci
from cinegpu.encode.mapped_upload import FileRun, pread_full
from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.images.geometry import Placement, place
from cinegpu.media.images.resize import resample_fast
from cinegpu.media.source import natural_key

__all__ = ["IMAGE_SUFFIXES", "ImageFrames", "fit", "image_area", "list_frames", "max_input_size",
           "read_dpx", "read_image", "read_run", "tiff_run", "unit_scale"]

IMAGE_SUFFIXES = (".tif", ".tiff", ".png", ".dpx")


def list_frames(path) -> list[Path]:
    """The input frames: one image file, or the images of a folder in natural order."""
    p = Path(path)
    if p.is_file():
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            raise UnsupportedMedia(p, f"not a TIFF, PNG or DPX image ({p.suffix or 'no suffix'})")
        return [p]
    if not p.exists():
        raise MediaError(p, "no such file or folder")
    if not p.is_dir():
        raise MediaError(p, "not a regular file or a folder (a device or a pipe?)")
    files = sorted((f for f in p.iterdir() if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES),
                   key=lambda f: natural_key(f.name))
    if not files:
        raise UnsupportedMedia(p, "no .tif/.tiff/.png/.dpx images in this folder")
    return files


def max_input_size(profile: str = "4k") -> tuple[int, int]:
    """(width, height) in pixels of the largest input frame a ``profile`` takes: twice its full
    container each way (4096x2160 for 2K, 8192x4320 for 4K), so an 8K scan still fits a 4K DCP
    while a header claiming more is refused before any pixel data is decoded."""
    try:
        w, h = dci.profile(profile).container
    except ValueError:
        raise ValueError(f"profile must be 2k or 4k, got {profile!r}") from None
    return 2 * w, 2 * h


def _rgb(a: np.ndarray) -> np.ndarray:
    """(H, W, 3) from an image of 1, 2, 3 or 4 channels: grey repeated, alpha dropped."""
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] not in (1, 2, 3, 4):
        raise ValueError(f"unsupported image shape {a.shape}")
    if a.shape[2] in (1, 2):
        a = np.repeat(a[:, :, :1], 3, axis=2)
    return a[:, :, :3]


def unit_scale(a: np.ndarray, top: float) -> np.ndarray:
    """Integer samples as float32 ``clip(a / top, 0, 1)``, computed as ``a * (1 / top)`` in
    float32: the one scaling of the readers and of mastering's host paths."""
    out = a.astype(np.float32)                   # one float copy, scaled in place
    out *= np.float32(1.0 / top)
    return np.clip(out, 0.0, 1.0, out=out)


def _normalise(a: np.ndarray, bits: int | None = None) -> np.ndarray:
    """(H, W, 3) float32 0..1 from an integer or float image of 1, 2, 3 or 4 channels."""
    a = _rgb(a)
    if a.dtype.kind == "f":
        return np.clip(a.astype(np.float32), 0.0, 1.0)
    if a.dtype.kind not in "ui":
        raise ValueError(f"unsupported sample type {a.dtype}")
    return unit_scale(a, (1 << bits) - 1 if bits else np.iinfo(a.dtype).max)


def _as_stored(a: np.ndarray, bits: int | None = None) -> np.ndarray:
    """(H, W, 3) uint8 or uint16 samples as stored when ``bits`` (None: the dtype's) fill
    their dtype, so that its maximum is white; else :func:`_normalise`'s float32 0..1."""
    if a.dtype in (np.uint8, np.uint16) and bits in (None, 8 * a.dtype.itemsize):
        return np.ascontiguousarray(_rgb(a))
    return _normalise(a, bits)


def _check_size(p: Path, width: int, height: int, limit, expect) -> None:
    """Refuse a frame whose header says ``width`` x ``height`` pixels when that is empty, over
    ``limit`` (width, height) or not ``expect`` (width, height), before its pixels are decoded."""
    if width < 1 or height < 1:
        raise CorruptMedia(p, f"empty image ({width}x{height} pixels)")
    if limit is not None and (width > limit[0] or height > limit[1]):
        raise UnsupportedMedia(p, f"{width}x{height} pixels is larger than the {limit[0]}x{limit[1]} "
                            "an input frame may be (twice the DCI container each way; "
                            "IMF: the IMF 4K container)")
    if expect is not None and (width, height) != tuple(expect):
        raise UnsupportedMedia(p, f"{width}x{height} pixels, but the sequence's first frame is "
                            f"{expect[0]}x{expect[1]}")


def read_image(path, *, limit=max_input_size("4k"), expect=None,
               stored: bool = False, out=None) -> np.ndarray:
    """Read one TIFF, PNG or DPX frame as (H, W, 3) float32 0..1 (``stored``: 8- and 16-bit
    samples as the uint8/uint16 they are stored as); MediaError if unreadable.

    The size in the file's header (PNG IHDR, TIFF ImageWidth/ImageLength, DPX image element)
    is checked against ``limit`` (width, height; default: the 4K profile's) and, if given,
    ``expect`` (width, height) before the pixel data is decoded, so memory is bounded by
    the limit whatever the header or the compressed data claims.  ``out``: a function
    ``out(shape, dtype)`` giving an array of that shape and dtype to decode into, or None
    (a GPU encoder's page-locked upload buffer: the frame then goes up without a copy);
    asked for TIFF files of interleaved samples only, after their size was checked.  With
    ``stored``, 8- and 16-bit RGB samples come back in that array itself."""
    p = Path(path)
    reader = _READERS.get(p.suffix.lower())
    if reader is None:
        raise UnsupportedMedia(p, f"not a TIFF, PNG or DPX image ({p.suffix or 'no suffix'})")
    try:
        if reader is _read_tiff:
            return (_as_stored if stored else _normalise)(*reader(p, limit, expect, out))
        return (_as_stored if stored else _normalise)(*reader(p, limit, expect))
    except MediaError:
        raise
    except OSError as exc:
        raise MediaError(p, f"cannot read image: {exc.strerror or exc}") from None
    except Exception as exc:     # a library's own error on a damaged file, named as it says it
        raise CorruptMedia(p, f"damaged image: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class ImageFrames:
    """A sequence's frames as image files: ``frames(i)`` reads frame ``i`` (:func:`read_image`
    with ``stored=True``, checked against ``limit`` and, when set, the first frame's
    ``size``), and a MediaError names the file and the frame number.  A plain picklable
    value, so that mastering's encoder processes read and decode their own frames
    (:mod:`.frame_coders`)."""

    files: tuple[str, ...]
    limit: tuple[int, int] | None
    #: (width, height) every frame must have; None: not checked (the first frame sets it)
    size: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self.files)

    def __call__(self, i: int, out=None) -> np.ndarray:
        """Frame ``i``; ``out``: as :func:`read_image`'s."""
        try:
            return read_image(self.files[i], limit=self.limit, expect=self.size, stored=True,
                              out=out)
        except MediaError as exc:      # same kind, the frame named
            raise type(exc)(self.files[i], f"frame {i}: {exc.reason}") from None

    def run(self, i: int):
        """Frame ``i``'s samples as one run of its file (:func:`tiff_run`), or None."""
        try:
            return tiff_run(self.files[i], limit=self.limit, expect=self.size)
        except MediaError as exc:
            raise type(exc)(self.files[i], f"frame {i}: {exc.reason}") from None


#: PNG colour type -> (samples per pixel, allowed bit depths) (ISO/IEC 15948 11.2.2 table 11.1).
_PNG_COLOUR = {0: (1, (1, 2, 4, 8, 16)), 2: (3, (8, 16)), 3: (1, (1, 2, 4, 8)),
               4: (2, (8, 16)), 6: (4, (8, 16))}
#: Adam7 passes (15948 8.2): (x0, y0, dx, dy).
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2))


def _png_data_size(width: int, height: int, bits_per_pixel: int, interlace: int) -> int:
    """Bytes of filtered image data (a filter byte per row, 15948 clause 9) of a PNG image."""
    passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
    total = 0
    for x0, y0, dx, dy in passes:
        w, h = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if w > 0 and h > 0:
            total += h * (1 + -(-w * bits_per_pixel // 8))
    return total


def _check_png_data(p: Path, data: bytes, want: int) -> None:
    """Inflate the IDAT chunks (15948 10.1), at most ``want`` + 1 bytes of output and a MiB at a
    time, and refuse a stream that holds less or more than the ``want`` bytes IHDR implies: a
    deflate bomb stops here after ``want`` bytes, not after what it would inflate to."""
    inflate, got, pos = zlib.decompressobj(), 0, 8
    while pos + 8 <= len(data) and got <= want:
        n, kind = struct.unpack_from(">I4s", data, pos)
        if pos + 12 + n > len(data):
            raise CorruptMedia(p, f"PNG chunk {kind!r} of {n} bytes runs past the end of the file",
                             pos)
        if kind == b"IDAT":
            chunk = data[pos + 8:pos + 8 + n]
            while chunk and got <= want and not inflate.eof:
                got += len(inflate.decompress(chunk, min(want + 1 - got, 1 << 20)))
                chunk = inflate.unconsumed_tail
        elif kind == b"IEND":
            break
        pos += 12 + n
    if got > want:
        raise CorruptMedia(p, f"PNG image data inflates to more than the {want} bytes its IHDR "
                            "implies")
    if got < want:
        raise CorruptMedia(p, f"PNG image data truncated: {got} of {want} bytes")


def _read_png(p: Path, limit, expect) -> tuple[np.ndarray, int]:
    """PNG (ISO/IEC 15948) through libpng (``imagecodecs``): every colour type, 1 to 16 bits,
    decoded losslessly. The IHDR (11.2.2) is checked first, then the image data's inflated
    size, so libpng is only handed a stream of the size the header says."""
    data = p.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 33 or data[12:16] != b"IHDR":
        raise CorruptMedia(p, "not a PNG file (no signature and IHDR)")
    width, height, depth, colour, _, _, interlace = struct.unpack_from(">IIBBBBB", data, 16)
    _check_size(p, width, height, limit, expect)
    samples, depths = _PNG_COLOUR.get(colour, (0, ()))
    if depth not in depths or interlace > 1:
        raise CorruptMedia(p, f"PNG IHDR: colour type {colour}, bit depth {depth}, interlace "
                            f"{interlace} is not a valid combination (ISO/IEC 15948 11.2.2)")
    _check_png_data(p, data, _png_data_size(width, height, samples * depth, interlace))
    a = imagecodecs.png_decode(data)
    return a, 16 if a.dtype == np.uint16 else 8


def _read_tiff(p: Path, limit, expect, out=None) -> tuple[np.ndarray, None]:
    """The first image of a TIFF through ``tifffile``, its size checked from the IFD's tags;
    interleaved samples decoded straight into ``out(shape, dtype)`` where that gives an
    array (see :func:`read_image`)."""
    with tifffile.TiffFile(p) as tif:
        if not tif.pages:
            raise CorruptMedia(p, "TIFF file with no image")
        page = tif.pages.first
        _check_size(p, page.imagewidth, page.imagelength, limit, expect)
        if page.imagedepth != 1 or not 1 <= page.samplesperpixel <= 4 or page.dtype is None \
                or page.dtype.itemsize > 4:
            raise UnsupportedMedia(p, f"unsupported TIFF layout: {page.samplesperpixel} samples of "
                                f"{page.dtype}, depth {page.imagedepth} (want 1 to 4 samples "
                                "of up to 32 bits, one plane)")
        planar = page.axes.startswith("S")     # planar configuration 2: one plane per sample
        buf = None if out is None or planar else out(page.shape, page.dtype)
        a = page.asarray() if buf is None else page.asarray(out=buf)
        if planar:
            a = np.moveaxis(a, 0, -1)
    return a, None


def read_run(run, out=None) -> np.ndarray | None:
    """The samples of ``run`` (a :func:`tiff_run`'s FileRun: the very samples
    :func:`read_image` with ``stored=True`` returns) read straight from their offset in the
    file by ``preadv``, without parsing its header again (about 0.6 ms of CPU a 4K frame on the
    development machine): into ``out(shape, dtype)`` where that gives a C-contiguous array
    (see :func:`read_image`), else into a new one.  None where the file cannot be opened or
    holds fewer bytes than the run (the caller then reads it the usual way, which names what
    is wrong)."""
    buf = out(run.shape, run.dtype) if out is not None else None
    if buf is None or not buf.flags.c_contiguous or buf.shape != tuple(run.shape) or \
            buf.dtype != np.dtype(run.dtype):
        buf = np.empty(run.shape, run.dtype)
    try:
        fd = os.open(run.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not pread_full(fd, buf.reshape(-1).view(np.uint8), run.offset):
            return None                       # the file ends before the run does
    except OSError:
        return None
    finally:
        os.close(fd)
    return buf


# -- DPX (SMPTE ST 268) ---------------------------------------------------------------------------
def tiff_run(path, *, limit=max_input_size("4k"), expect=None):
    """Where a TIFF file's first image is 8- or 16-bit RGB stored uncompressed as one run of
    interleaved samples in this machine's byte order: a
    :class:`cinegpu.encode.mapped_upload.FileRun` of them (an (H, W, 3) array, the very
    samples :func:`read_image` with ``stored=True`` returns), so that a GPU encoder can copy
    them up straight from the file; else None.  The size is checked as :func:`read_image`
    checks it (MediaError)."""
    p = Path(path)
    if p.suffix.lower() not in (".tif", ".tiff"):
        return None
    try:
        with tifffile.TiffFile(p) as tif:
            if not tif.pages:
                return None
            page = tif.pages.first
            _check_size(p, page.imagewidth, page.imagelength, limit, expect)
            dtype = page.dtype
            if dtype not in (np.uint8, np.uint16) or page.samplesperpixel != 3 or \
                    page.photometric != 2 or page.planarconfig != 1 or page.imagedepth != 1 or \
                    page.bitspersample != 8 * dtype.itemsize or page.fillorder != 1 or \
                    page.predictor != 1 or not page.is_contiguous or \
                    tif.byteorder != ("<" if sys.byteorder == "little" else ">") or \
                    page.shape != (page.imagelength, page.imagewidth, 3) or \
                    sum(page.databytecounts) < page.nbytes:
                return None
            return FileRun(str(p), int(page.dataoffsets[0]), tuple(page.shape),
                           np.dtype(dtype.type))
    except MediaError:
        raise
    except OSError as exc:
        raise MediaError(p, f"cannot read image: {exc.strerror or exc}") from None
    except Exception:      # a damaged header: read_image names what is wrong
        return None


def read_dpx(path, *, limit=max_input_size("4k"), expect=None) -> np.ndarray:
    """(H, W, 3) float32 0..1 from an RGB (descriptor 50) or RGBA (51) DPX file."""
    return _normalise(*_read_dpx(Path(path), limit, expect))


def _read_dpx(p: Path, limit, expect) -> tuple[np.ndarray, int]:
    """A DPX file's samples as stored and their bits."""
    with open(p, "rb") as f:
        head = f.read(2048)
        if len(head) < 2048:
            raise CorruptMedia(p, "DPX file shorter than its 2048-byte header")
        magic = head[:4]
        if magic not in (b"SDPX", b"XPDS"):
            raise CorruptMedia(p, f"not a DPX file (magic {magic!r})")
        e = ">" if magic == b"SDPX" else "<"
        width, height = struct.unpack_from(e + "II", head, 772)
        _check_size(p, width, height, limit, expect)
        data = head + f.read()
    image_offset = struct.unpack_from(e + "I", data, 4)[0]
    descriptor, _transfer, _colorimetric, bits = data[800], data[801], data[802], data[803]
    packing, encoding, element_offset = struct.unpack_from(e + "HHI", data, 804)
    offset = element_offset or image_offset
    if encoding != 0:
        raise UnsupportedMedia(p, "run-length encoded DPX is not supported")
    channels = {50: 3, 51: 4, 6: 1}.get(descriptor)
    if channels is None:
        raise UnsupportedMedia(p, f"DPX descriptor {descriptor} (only RGB 50, RGBA 51, luma 6)")
    n = width * height * channels
    if bits == 8:
        row = -(-width * channels // 4) * 4
        raw = _take(p, data, offset, row * height, np.uint8).reshape(height, row)
        a = raw[:, :width * channels]
    elif bits == 16:
        row = width * channels * 2
        a = _take(p, data, offset, row * height, np.dtype(e + "u2")).reshape(height, -1)
    elif bits == 12 and packing == 1:
        a = _take(p, data, offset, n * 2, np.dtype(e + "u2")) >> 4
    elif bits == 10 and packing == 1:
        words_per_row = -(-width * channels // 3)
        w = _take(p, data, offset, words_per_row * 4 * height, np.dtype(e + "u4"))
        w = w.reshape(height, words_per_row)
        s = np.stack([(w >> 22) & 0x3FF, (w >> 12) & 0x3FF, (w >> 2) & 0x3FF], axis=-1)
        a = s.reshape(height, -1)[:, :width * channels]
    else:
        raise UnsupportedMedia(p, f"DPX of {bits} bits with packing {packing} is not supported "
                            "(8, 10 or 12 filled method A, 16)")
    return np.ascontiguousarray(a).reshape(height, width, channels), bits


def _take(p: Path, data: bytes, offset: int, nbytes: int, dtype) -> np.ndarray:
    if offset + nbytes > len(data):
        raise CorruptMedia(p, f"DPX image data truncated: {nbytes} bytes wanted at {offset}, "
                            f"file has {len(data)}")
    return np.frombuffer(data, dtype, nbytes // np.dtype(dtype).itemsize, offset)


_READERS = {".tif": _read_tiff, ".tiff": _read_tiff, ".png": _read_png,
            ".dpx": _read_dpx}


# -- fitting into the container -------------------------------------------------------------------
def image_area(width: int, height: int, profile: str = "2k", container: str = "auto") -> tuple[str, int, int]:
    """(name, width, height) of the DCI image area for a ``width`` x ``height`` picture:
    ``container`` flat, scope or full, or auto (the area whose aspect ratio is nearest)."""
    areas = dict(dci.profile(profile).image_areas)
    if container != "auto":
        if container not in areas:
            raise ValueError(f"container must be auto, flat, scope or full, got {container!r}")
        return (container, *areas[container])
    aspect = width / height
    name = min(areas, key=lambda k: abs(np.log(aspect * areas[k][1] / areas[k][0])))
    return (name, *areas[name])


def fit(image: np.ndarray, width: int, height: int, placement: Placement | None = None) -> np.ndarray:
    """``image`` (H, W, 3) as a ``width`` x ``height`` picture (pixels): cut, scaled and
    centred as ``placement`` says (:func:`.geometry.place`; None: ``fit``, the whole picture
    inside, its aspect ratio kept, on black), resized with a Lanczos (a = 3) filter
    (:func:`.resize.resample_fast`) into float32 0..1 (integers read as a fraction of their dtype's
    maximum); where nothing is resized (``--scale none``, or a size already right) the samples
    keep their type, cut or padded with zeros (black).  Unchanged (the array itself) when the
    placement changes nothing.  A CuPy ``image`` is fitted on its GPU, into a CuPy array, by
    the resize's GPU twin (:func:`.resize_gpu.resample_on_device`): the same samples."""
    h, w = image.shape[:2]
    p = place(w, h, width, height) if placement is None else placement
    if (p.width, p.height, p.area_width, p.area_height) != (w, h, width, height):
        raise ValueError(f"a placement of {p.width}x{p.height} into {p.area_width}x"
                         f"{p.area_height} given a {w}x{h} image for {width}x{height}")
    if p.identity:
        return image
    c, x, y = p.crop, p.x, p.y
    image = image[c.top:h - c.bottom, c.left:w - c.right]
    if p.resized:
        resample = resample_fast
        if hasattr(image, "__cuda_array_interface__"):
            from .resize_gpu import resample_on_device as resample  # noqa: PLC0415  (optional: CuPy)
        if image.dtype.kind in "ui":       # integers: a fraction of their dtype's maximum
            image = unit_scale(image, np.iinfo(image.dtype).max)
        part = resample(resample(image, y.scaled, 0, y.cut_before, y.shown), x.scaled, 1, x.cut_before, x.shown)
        part = np.clip(part, 0.0, 1.0)     # the kernel's lobes overshoot at hard edges
    else:
        part = image[y.cut_before:y.cut_before + y.shown, x.cut_before:x.cut_before + x.shown]
    # zeros_like: on the GPU for a CuPy image (numpy hands it to CuPy)
    out = np.zeros_like(part, shape=(height, width) + image.shape[2:])
    out[y.pad_before:y.pad_before + y.shown, x.pad_before:x.pad_before + x.shown] = part
    return out
