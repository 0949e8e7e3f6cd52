"""Tier-1 decoding, numba: EBCOT (T.800 Annex C MQ decoder, Annex D coding passes) and HT
code-blocks (ITU-T T.814 | ISO/IEC 15444-15 clause 7, ht.py), chosen per block by CB_STYLE.

The plain-array interface shared by every back end:

    decode_codeblocks(coded, table, seg_lengths, seg_passes, out) -> status (int32 per block)
    decode_codeblock(coded, data_start, seg_lengths, seg_passes, out2d, num_bps, orient, style,
                     roishift, flags, vals, ctx) -> status

See codeblock.py for the table columns (CB_*), the status bits (STATUS_*) and the value
convention (2 x the reconstructed coefficient, sign applied).
"""

from .codeblock import (
                        CB_COLUMNS,
                        CB_DATA,
                        CB_HEIGHT,
                        CB_NUM_BPS,
                        CB_ORIENT,
                        CB_OUT,
                        CB_ROISHIFT,
                        CB_SEG_COUNT,
                        CB_SEG_FIRST,
                        CB_STRIDE,
                        CB_STYLE,
                        CB_WIDTH,
                        CBLK_BYPASS,
                        CBLK_PTERM,
                        CBLK_RESET,
                        CBLK_SEGSYM,
                        CBLK_TERMALL,
                        CBLK_VCAUSAL,
                        MAX_CBLK_AREA,
                        MAX_CBLK_SIDE,
                        MAX_NUM_BPS,
                        ORIENT_HH,
                        ORIENT_HL,
                        ORIENT_LH,
                        ORIENT_LL,
                        SCRATCH_SIZE,
                        STATUS_BAD_ROW,
                        STATUS_BAD_SEGMENTS,
                        STATUS_HT,
                        STATUS_K_TOO_LARGE,
                        STATUS_SEGSYM,
                        STATUS_TOO_MANY_PASSES,
                        decode_codeblock,
                        decode_codeblocks,
                        make_scratch,
                        pass_is_raw,
)
from .ht import CBLK_HT, CBLK_HT_MIXED

__all__ = [
    "CBLK_BYPASS", "CBLK_RESET", "CBLK_TERMALL", "CBLK_VCAUSAL", "CBLK_PTERM", "CBLK_SEGSYM",
    "CBLK_HT", "CBLK_HT_MIXED", "STATUS_HT",
    "ORIENT_LL", "ORIENT_HL", "ORIENT_LH", "ORIENT_HH",
    "CB_DATA", "CB_SEG_FIRST", "CB_SEG_COUNT", "CB_NUM_BPS", "CB_ORIENT", "CB_STYLE",
    "CB_ROISHIFT", "CB_OUT", "CB_WIDTH", "CB_HEIGHT", "CB_STRIDE", "CB_COLUMNS",
    "STATUS_TOO_MANY_PASSES", "STATUS_SEGSYM", "STATUS_K_TOO_LARGE", "STATUS_BAD_ROW",
    "STATUS_BAD_SEGMENTS", "MAX_CBLK_SIDE", "MAX_CBLK_AREA", "MAX_NUM_BPS", "SCRATCH_SIZE",
    "decode_codeblocks", "decode_codeblock", "make_scratch", "pass_is_raw",
]
