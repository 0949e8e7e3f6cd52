"""Marker codes of T.800 Table A.2 (and the Part-15 CAP/CPF markers)."""

SOC = 0xFF4F  #: start of codestream
SOT = 0xFF90  #: start of tile-part
SOD = 0xFF93  #: start of data
EOC = 0xFFD9  #: end of codestream
SIZ = 0xFF51  #: image and tile size
CAP = 0xFF50  #: extended capabilities (15444-1 Amd / Part 15)
COD = 0xFF52  #: coding style default
COC = 0xFF53  #: coding style component
RGN = 0xFF5E  #: region of interest
QCD = 0xFF5C  #: quantization default
QCC = 0xFF5D  #: quantization component
POC = 0xFF5F  #: progression order change
TLM = 0xFF55  #: tile-part lengths
PLM = 0xFF57  #: packet length, main header
PLT = 0xFF58  #: packet length, tile-part header
PPM = 0xFF60  #: packed packet headers, main header
PPT = 0xFF61  #: packed packet headers, tile-part header
SOP = 0xFF91  #: start of packet
EPH = 0xFF92  #: end of packet header
CRG = 0xFF63  #: component registration
COM = 0xFF64  #: comment
CPF = 0xFF59  #: corresponding profile (Part 15)

NAMES = {
    value: name
    for name, value in dict(globals()).items()
    if name.isupper() and isinstance(value, int) and value > 0xFF00
}


def name(code: int) -> str:
    """``'COD'`` for 0xFF52; ``'0xFF6A'`` for codes this table lacks."""
    return NAMES.get(code, f"0x{code:04X}")
