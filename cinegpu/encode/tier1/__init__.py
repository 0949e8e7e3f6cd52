"""EBCOT tier-1 encoding (T.800 Annex C MQ encoder, Annex D coding passes), numba.

    encode_codeblock(coeffs, orient, style) -> (coded, pass_lengths, distortion, num_bps)
    segments(pass_lengths, style, npasses=None) -> (seg_lengths, seg_passes)
"""

from .codeblock import encode_codeblock, pass_ends_segment, segments

__all__ = ["encode_codeblock", "segments", "pass_ends_segment"]
