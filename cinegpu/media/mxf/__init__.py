"""MXF (SMPTE ST 377-1): the KLV reader, track files read and written (picture, sound, timed text)."""
