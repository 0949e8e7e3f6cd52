"""Images: TIFF/PNG/DPX frames read for mastering, decoded frames written, colour and JP2 colour."""
