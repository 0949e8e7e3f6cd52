"""Jobs: the long-running work built on media and encode: mastering, the encoder processes, the Dask cluster, check --decode, MPS, the demo."""
