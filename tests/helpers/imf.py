"""IMF packages in the tests: the namespaces of an IMF CPL (:data:`NS`, for lxml's ``find``) and
the input folders ``cinegpu master --format imf`` is given (:func:`demo_pngs`: 16-bit PNGs of
the demo pattern).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cinegpu.jobs.demo import demo_frame

NS = {"c": "http://www.smpte-ra.org/schemas/2067-3/2016",
      "cc": "http://www.smpte-ra.org/schemas/2067-2/2016",
      "r0": "http://www.smpte-ra.org/reg/395/2014/13/1/aaf",
      "r1": "http://www.smpte-ra.org/reg/335/2012",
      "pkl": "http://www.smpte-ra.org/schemas/2067-2/2016/PKL",
      "am": "http://www.smpte-ra.org/schemas/429-9/2007/AM"}


def demo_pngs(folder: Path, n: int, width: int = 320, height: int = 180) -> Path:
    from cinegpu.media.images.png import write_png16
    folder.mkdir()
    for i in range(n):
        write_png16(folder / f"f{i}.png",
                    np.rint(demo_frame(5 * i, width, height) * 65535).astype(np.uint16))
    return folder
