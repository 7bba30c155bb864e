"""Grading: controller protocol, sealed seed sets (commit -> reveal), scoring in sandboxes."""
