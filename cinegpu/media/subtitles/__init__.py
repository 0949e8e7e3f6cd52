"""Subtitles: the timed-text model, ST 428-7 and Interop documents, writing them with their font."""
