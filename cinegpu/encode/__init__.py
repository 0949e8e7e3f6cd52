"""JPEG 2000 encoder (ISO/IEC 15444-1 / ITU-T T.800) with the DCI 2K/4K profiles.

    encode(image, *, profile="generic"|"dci-2k"|"dci-4k", fps=24, bitrate=None, ...) -> bytes
    Encoder(EncoderSettings.of(**options)).encode(image) -> bytes   (keeps tier-1 workers
        between frames; EncoderSettings(coding=Coding(...), backend=...) names the same)

Pipeline (ARCHITECTURE: mastering, one frame): DC level shift, RCT/ICT, 5/3 or 9/7
DWT and quantisation (numpy, or CuPy kernels with ``backend="cuda"``), tier-1 per
code-block (numba, worker processes), PCRD rate control to the byte budget, tier-2
packets and the codestream writer (SIZ, COD, QCD, POC, TLM, COM, SOT/SOD, EOC).
"""

from cinegpu.decode import kernel_cache  # noqa: F401  installs numba's cache locator before any kernel is defined

from .encoder import Encoder, EncoderSettings, encode
from cinegpu.encode.presets import DCI_COMPONENT_BITRATE, DCI_FRAME_BITRATE, Coding, dci_caps

__all__ = ["DCI_COMPONENT_BITRATE", "DCI_FRAME_BITRATE", "Coding", "Encoder", "EncoderSettings", "dci_caps",
           "encode"]
