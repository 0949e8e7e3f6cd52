"""Material shipped with the package: :data:`BARS_2K`, a DCI 2K codestream (colour bars, 12-bit
X'Y'Z', 9/7, ICT) that the first run, the speed benchmarks and the default media decode."""

from pathlib import Path

__all__ = ["BARS_2K"]

#: the shipped DCI 2K frame (ISO/IEC 15444-1 codestream, Rsiz DCI 2K)
BARS_2K = Path(__file__).resolve().with_name("bars_2k.j2c")
