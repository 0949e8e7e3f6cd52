"""Subcommands of the cinegpu program, one module each."""
