"""What more than one test module uses, beyond conftest.py's probes, paths and fixtures: a test
module imports these (``from helpers.peers import ...``; ``tests/`` is on ``sys.path``, see
conftest.py), never another test module.  One module per kind of thing:

* ``cli``: the cinegpu command line in a child process (``cinegpu``, ``CLI``);
* ``codestreams``: codestreams packed byte by byte (the readers' checks, the decoder's limits);
* ``conformance``: the ISO/IEC 15444-4 cases of ``../shared/conformance/MANIFEST.tsv``;
* ``differential``: the differential harness (other encoders' seeded streams, decoded by us
  and by opj_decompress);
* ``encrypted_dcp``: a small SMPTE DCP made in the tests, in the clear or encrypted;
* ``fuzz``: reproducible mutations of codestreams and of HT code-blocks;
* ``ht_encoder``: HT code-blocks and the host builds of the HT encoding kernels;
* ``images``: seeded test images (``noise_image``) and a 16-bit PPM reader;
* ``imf``: IMF CPL namespaces and the input folders of IMF masters;
* ``jp2_files``: hand-built JP2 files;
* ``kdm_build``: signer chains, recipients and KDMs for the playback tests;
* ``mastering``: mastering's inputs, ``cinegpu master`` in this process (``master_cli``), the
  encoder's presence, a package's codestreams, ClairMeta's check of a DCP;
* ``peers``: synthetic images encoded and decoded by the peer tools (OpenJPEG, Grok, OpenJPH);
* ``pgx``: PGX reference images;
* ``playback``: headless playback with screenshots, the reference picture, a fake window;
* ``server``: the playback server's API from a test, and its engine with fakes;
* ``sound_util``: WAV files, tones, ffmpeg's PCM, position-coded sound track files;
* ``subtitles``: subtitle documents, fonts and ClairMeta's subtitle checks;
* ``tier1_blocks``: code-blocks for the tier-1 decoder (styles, shapes, corrupt input);
* ``tier1_decoder``: the CUDA tier-1 decoder on the GPU or as its host build;
* ``tier1_encoder``: the GPU tier-1 encoder's kernels as their host build, and its test tiles.
"""
