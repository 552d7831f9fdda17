"""Example programs for coordkit (importable so tests can use them)."""
