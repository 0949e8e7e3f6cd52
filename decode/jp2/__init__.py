"""The JP2 file format (T.800 Annex I): boxes around a codestream."""

from .boxes import JP2Header, apply_palette, boxes, is_jp2, read_jp2

__all__ = ["JP2Header", "apply_palette", "boxes", "is_jp2", "read_jp2"]
