"""Packages: DCP and IMF reading (ASSETMAP, PKL, CPL), writing, checking, the IMF rules."""
