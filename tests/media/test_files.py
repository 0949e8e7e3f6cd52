""":func:`cinegpu.media.files.read_bounded`, the one reader of whole files a user names (issue 51,
item 4): it never trusts ``st_size``, which is 0 for a device or a pipe, so ``/dev/zero`` is refused
after ``limit + 1`` bytes instead of read until memory runs out."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cinegpu.media.errors import MediaError, UnsupportedMedia
from cinegpu.media.files import read_bounded

LIMIT = 1 << 20


def test_a_device_is_read_to_the_limit_and_refused():
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(UnsupportedMedia, match=r"^/dev/zero: KDM of more than the 1048576 bytes \(1 MiB\) "
                                               r"cinegpu reads \(not a regular file"):
        read_bounded("/dev/zero", LIMIT, "KDM")


@pytest.mark.parametrize("extra", [0, 1])
def test_a_pipe_is_read_to_the_limit(tmp_path, extra):
    """A FIFO (as ``<(...)`` gives) is read, not refused, up to the limit; one byte more is refused."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = b"k" * (LIMIT + extra)

    def write():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except BrokenPipeError:         # the reader stopped at limit + 1 bytes
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    if extra:
        with pytest.raises(UnsupportedMedia, match="key file of more than the 1048576 bytes .*a device or a pipe"):
            read_bounded(fifo, LIMIT, "key file")
    else:
        assert read_bounded(fifo, LIMIT, "key file") == data
    writer.join(10)
    assert not writer.is_alive()


def test_a_regular_file_over_the_limit_is_refused_by_its_size(tmp_path):
    f = tmp_path / "big.pem"
    f.write_bytes(b"x" * (LIMIT + 1))
    with pytest.raises(UnsupportedMedia, match=rf"big.pem: PEM file of {LIMIT + 1} bytes, more than the "
                                               rf"{LIMIT} bytes \(1 MiB\) cinegpu reads; a hint$"):
        read_bounded(f, LIMIT, "PEM file", "a hint")
    f.write_bytes(b"x" * LIMIT)
    assert len(read_bounded(f, LIMIT, "PEM file")) == LIMIT
    assert read_bounded(f, 3 * LIMIT, "PEM file") == b"x" * LIMIT


def test_a_folder_and_a_missing_file_are_media_errors(tmp_path):
    with pytest.raises(MediaError, match="a folder, not a file"):
        read_bounded(tmp_path, LIMIT, "font")
    with pytest.raises(MediaError, match="missing.ttf: cannot read: No such file"):
        read_bounded(tmp_path / "missing.ttf", LIMIT, "font")
