"""Benchmarks and peers: what times cinegpu against other decoders and encoders. Never imported by the library; run as python -m cinegpu.bench.<name>."""
