"""Tier-2 encoding (T.800 B.9-B.10), numba over flat arrays; the mirror of decode/tier2.

    bits.py      the packet-header bit writer with bit stuffing (B.10.1)
    tagtree.py   tag-tree encoding (B.10.2)
    packets.py   packet headers of a tile and where its bodies lie (B.9, B.10.3-B.10.7):
                 TileCoder, TilePackets

numba's on-disk cache does not follow calls into other files: after editing bits.py
or tagtree.py, touch packets.py (or clear __pycache__) so write_headers is rebuilt.
"""

from .packets import TileCoder

__all__ = ["TileCoder"]
