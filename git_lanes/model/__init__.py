"""Frozen records and validated names. No I/O, no git."""
