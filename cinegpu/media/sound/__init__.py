"""Sound: reading sound track files and compositions, WAV input for mastering, resampling."""
