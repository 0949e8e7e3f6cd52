"""Encrypted essence in MXF track files: SMPTE ST 429-6 (AES-128 in CBC mode, and the optional
HMAC-SHA-1 message integrity code).

Each encrypted edit unit is an encrypted triplet (ST 429-6 clause 7): a KLV whose key is
:data:`ENCRYPTED_TRIPLET` and whose value is a run of BER-prefixed fields:

    CryptographicContextLink (16)  PlaintextOffset (8)  SourceKey (16: the clear element's key)
    SourceLength (8)  EncryptedSourceValue  [TrackFileID (16)  SequenceNumber (8)  MIC (20)]

The EncryptedSourceValue is the 16-byte IV, then :data:`CHECK_VALUE` encrypted with it (a wrong
key shows here, before any sample is used), then the first PlaintextOffset bytes in the clear,
then the rest encrypted, continuing the same CBC chain, its last block padded with 0, 1, 2, ...
The MIC is HMAC-SHA-1 over the EncryptedSourceValue and the integrity fields before it (their
BER lengths included), keyed with a key derived from the content key: for SMPTE files the
second 160-bit value of the FIPS 186-2 general-purpose generator (change notice 1) seeded with
the content key, truncated to 128 bits (ST 429-6 7.10, as asdcplib derives it); for Interop
files SHA-1 of the key and a fixed nonce.

Bytes read from a file are bounds-checked field by field: a damaged triplet is
:class:`~.errors.CorruptMedia`; a key that does not open it is :class:`~.errors.EncryptedMedia`.
No message here names a key's bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from dataclasses import dataclass

from cinegpu.media.errors import CorruptMedia, EncryptedMedia

__all__ = ["CHECK_VALUE", "ENCRYPTED_TRIPLET", "Triplet", "check_key", "decrypt_triplet", "encrypt_element",
           "fips186_prf", "mic_key", "parse_triplet", "parse_triplet_head"]

#: the encrypted triplet's key (ST 429-6 7.3; byte 7, the registry version, varies: compare
#: bytes 0-6 and 8-15)
ENCRYPTED_TRIPLET = bytes.fromhex("060e2b34020401010d010301027e0100")
CHECK_VALUE = b"CHUKCHUKCHUKCHUK"
BLOCK = 16
MIC_BYTES = 20
#: MXF Interop's MIC key nonce (asdcplib: MICKey = trunc(SHA-1(key, nonce)))
INTEROP_NONCE = bytes(range(0x00, 0x100, 0x11))


@dataclass(frozen=True)
class Triplet:
    """The fields of an encrypted triplet's value; ``mic_span`` is the end of the bytes the MIC
    covers (from the EncryptedSourceValue's start, ``esv_start``), both as offsets in the value.
    ``esv`` is a view into the value (a frame is not copied to be parsed)."""

    context_id: bytes
    plaintext_offset: int
    source_key: bytes
    source_length: int
    esv: memoryview
    track_file_id: bytes | None
    sequence: int | None
    mic: bytes | None
    esv_start: int
    mic_span: int


def fips186_prf(seed: bytes, nbytes: int) -> bytes:
    """``nbytes`` of the FIPS 186-2 general-purpose random number generator (Appendix 3.1 as
    changed by change notice 1: no q reduction), seeded with ``seed`` (at most 64 bytes; b is
    its length in bits, at least 160), G being SHA-1's compression function on XKEY padded to
    a 512-bit block: x_j = G(t, XKEY); XKEY = (1 + XKEY + x_j) mod 2^b."""
    b = max(len(seed), 20)
    if len(seed) > 64:
        raise ValueError("a FIPS 186 seed has at most 64 bytes")
    xkey = int.from_bytes(seed.ljust(b, b"\0"), "big")
    out = b""
    while len(out) < nbytes:
        block = xkey.to_bytes(b, "big").ljust(64, b"\0")
        x = _sha1_compress(block)
        out += x
        xkey = (1 + xkey + int.from_bytes(x, "big")) % (1 << (8 * b))
    return out[:nbytes]


def mic_key(key: bytes, interop: bool = False) -> bytes:
    """The 128-bit MIC key of a 128-bit content key (module docstring)."""
    if interop:
        return hashlib.sha1(key + INTEROP_NONCE).digest()[:16]
    return fips186_prf(key, 40)[20:36]


def encrypt_element(source_key: bytes, value: bytes, key: bytes, *, context_id: bytes,
                    track_file_id: bytes, sequence: int, iv: bytes | None = None,
                    plaintext_offset: int = 0, with_mic: bool = True, interop: bool = False) -> bytes:
    """The encrypted triplet (a whole KLV, 4-byte BER lengths as asdcplib writes them) of the
    clear element ``source_key`` / ``value``, edit unit ``sequence`` (1 for the first) of the
    track file ``track_file_id``."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if not 0 <= plaintext_offset <= len(value):
        raise ValueError("plaintext offset beyond the value")
    iv = os.urandom(BLOCK) if iv is None else iv
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    clear, secret = value[:plaintext_offset], value[plaintext_offset:]
    pad = BLOCK - len(secret) % BLOCK
    esv = iv + enc.update(CHECK_VALUE) + clear + enc.update(secret + bytes(range(pad))) + enc.finalize()
    fields = [_ber4(16) + context_id, _ber4(8) + struct.pack(">Q", plaintext_offset),
              _ber4(16) + source_key, _ber4(8) + struct.pack(">Q", len(value)),
              _ber4(len(esv)) + esv]
    if with_mic:
        integrity = _ber4(16) + track_file_id + _ber4(8) + struct.pack(">Q", sequence) + _ber4(MIC_BYTES)
        code = hmac.new(mic_key(key, interop), esv + integrity, hashlib.sha1).digest()
        fields.append(integrity + code)
    else:
        fields.append(_ber4(0) * 3)
    body = b"".join(fields)
    return ENCRYPTED_TRIPLET + _ber4(len(body)) + body


def parse_triplet(value: bytes, path=None, where: str = "") -> Triplet:
    """The fields of an encrypted triplet's value (the bytes after its key and length)."""
    pos, fields = 0, []
    while pos < len(value) and len(fields) < 8:
        n, pos = _read_ber(value, pos, path, where)
        if pos + n > len(value):
            raise CorruptMedia(path, f"{where}encrypted triplet field {len(fields) + 1} runs past the triplet")
        # the EncryptedSourceValue (the frame) is a view, not a copy; the small fields are bytes
        fields.append((pos, memoryview(value)[pos:pos + n] if len(fields) == 4 else value[pos:pos + n]))
        pos += n
    if len(fields) < 5:
        raise CorruptMedia(path, f"{where}encrypted triplet has {len(fields)} fields, not at least 5 (ST 429-6)")
    sizes = [len(f) for _, f in fields[:4]]
    if sizes != [16, 8, 16, 8]:
        raise CorruptMedia(path, f"{where}encrypted triplet's first fields are {sizes} bytes, not 16, 8, 16, 8")
    pto = struct.unpack(">Q", fields[1][1])[0]
    length = struct.unpack(">Q", fields[3][1])[0]
    esv_start, esv = fields[4]
    if pto > length or len(esv) != 2 * BLOCK + pto + ((length - pto) // BLOCK + 1) * BLOCK:
        raise CorruptMedia(path, f"{where}encrypted source value of {len(esv)} bytes does not hold "
                                 f"{length} bytes with {pto} in the clear")
    tail = [f for _, f in fields[5:8]]
    full = len(tail) == 3 and [len(f) for f in tail] == [16, 8, MIC_BYTES]
    if tail and any(tail) and not full:
        raise CorruptMedia(path, f"{where}encrypted triplet's integrity pack is "
                                 f"{[len(f) for f in tail]} bytes, not 16, 8, 20")
    return Triplet(fields[0][1], pto, fields[2][1], length, esv,
                   tail[0] if full else None,
                   struct.unpack(">Q", tail[1])[0] if full else None,
                   tail[2] if full else None, esv_start,
                   fields[7][0] if full else len(value))


def parse_triplet_head(head: bytes, path=None) -> tuple[bytes, int, bytes, int]:
    """(context id, plaintext offset, source key, source length): the first four fields of an
    encrypted triplet's value, from its first bytes (at most 128 are needed)."""
    pos, out = 0, []
    for want in (16, 8, 16, 8):
        n, pos = _read_ber(head, pos, path, "")
        if n != want or pos + n > len(head):
            raise CorruptMedia(path, "encrypted triplet's first fields are not 16, 8, 16, 8 bytes")
        out.append(head[pos:pos + n])
        pos += n
    return out[0], struct.unpack(">Q", out[1])[0], out[2], struct.unpack(">Q", out[3])[0]


def decrypt_triplet(value: bytes, key: bytes, *, path=None, where: str = "",
                    check_mic: bool = True, interop: bool = False) -> tuple[bytes, bytes]:
    """(source key, clear value) of an encrypted triplet's ``value`` with the content ``key``:
    the check value first (a wrong key), then the MIC when the triplet has one and
    ``check_mic`` (a changed frame, before any of it is decrypted), then the padding.  The frame
    is decrypted into one buffer (``update_into``: OpenSSL writes it, no intermediate copies)."""
    t = parse_triplet(value, path, where)
    dec = _check_value(t, key, path, where)
    if check_mic and t.mic is not None:
        span = memoryview(value)[t.esv_start:t.mic_span]
        want = hmac.new(mic_key(key, interop), span, hashlib.sha1).digest()
        if not hmac.compare_digest(want, t.mic):
            raise CorruptMedia(path, f"{where}encrypted essence fails its integrity check (MIC): "
                                     f"the frame was changed")
    pto, n = t.plaintext_offset, t.source_length - t.plaintext_offset
    secret = t.esv[2 * BLOCK + pto:]
    out = bytearray(pto + len(secret) + BLOCK - 1)      # update_into's room: one block more
    out[:pto] = t.esv[2 * BLOCK:2 * BLOCK + pto]
    done = dec.update_into(secret, memoryview(out)[pto:])
    dec.finalize()
    if done != len(secret) or out[pto + n] != 0:
        raise CorruptMedia(path, f"{where}encrypted essence decrypts to a wrong padding (damaged data)")
    del out[pto + n:]
    return t.source_key, bytes(out)


def check_key(value: bytes, key: bytes, *, path=None, where: str = "") -> None:
    """Raise :class:`~.errors.EncryptedMedia` unless ``key`` decrypts the check value of the
    encrypted triplet ``value`` (two AES blocks; the essence and its MIC are not touched)."""
    _check_value(parse_triplet(value, path, where), key, path, where)


# -- helpers -----------------------------------------------------------------------------------
def _check_value(t: Triplet, key: bytes, path, where: str):
    """The CBC decryptor of ``t`` under ``key``, past the check value, which it checks."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    dec = Cipher(algorithms.AES(key), modes.CBC(t.esv[:BLOCK])).decryptor()
    if dec.update(t.esv[BLOCK:2 * BLOCK]) != CHECK_VALUE:
        raise EncryptedMedia(path, f"{where}the key does not decrypt this essence (its check value "
                                   f"differs): it is not the track file's key")
    return dec


def _ber4(n: int) -> bytes:
    return b"\x83" + n.to_bytes(3, "big")


def _read_ber(b: bytes, pos: int, path, where: str) -> tuple[int, int]:
    if pos >= len(b):
        raise CorruptMedia(path, f"{where}encrypted triplet ends inside a length")
    first = b[pos]
    if first < 0x80:
        return first, pos + 1
    k = first & 0x7F
    if k == 0 or k > 8 or pos + 1 + k > len(b):
        raise CorruptMedia(path, f"{where}encrypted triplet has a bad BER length")
    return int.from_bytes(b[pos + 1:pos + 1 + k], "big"), pos + 1 + k


_K = (0x5A827999, 0x6ED9EBA1, 0x8F1BBCDC, 0xCA62C1D6)


def _sha1_compress(block: bytes) -> bytes:
    """SHA-1's compression function (FIPS 180-4 6.1.2) of one 64-byte block from the initial
    hash value: the state after it, big-endian, with no padding or length (FIPS 186-2's G)."""
    h = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]
    w = list(struct.unpack(">16I", block))
    for t in range(16, 80):
        v = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]
        w.append(((v << 1) | (v >> 31)) & 0xFFFFFFFF)
    a, b, c, d, e = h
    for t in range(80):
        if t < 20:
            f = (b & c) | (~b & d)
        elif t < 40 or t >= 60:
            f = b ^ c ^ d
        else:
            f = (b & c) | (b & d) | (c & d)
        temp = (((a << 5) | (a >> 27)) + f + e + _K[t // 20] + w[t]) & 0xFFFFFFFF
        a, b, c, d, e = temp, a, ((b << 30) | (b >> 2)) & 0xFFFFFFFF, c, d
    return struct.pack(">5I", *((x + y) & 0xFFFFFFFF for x, y in zip(h, (a, b, c, d, e))))
