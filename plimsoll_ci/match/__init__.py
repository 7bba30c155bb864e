"""The matching engine: canonical forms, candidate extraction, one-layer decoders, digest index.

Pure: no files, no subprocesses, no clocks. Callers hand it bytes.
"""
