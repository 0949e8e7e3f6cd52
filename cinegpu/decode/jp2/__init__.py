"""The JP2 file format (T.800 Annex I): boxes around a codestream."""

from .boxes import JP2Header, apply_palette, boxes, is_jp2, read_jp2
from .channels import ChannelOrder, apply_channels, channel_depths, channel_order

__all__ = ["ChannelOrder", "JP2Header", "apply_channels", "apply_palette", "boxes", "channel_depths",
           "channel_order", "is_jp2", "read_jp2"]
