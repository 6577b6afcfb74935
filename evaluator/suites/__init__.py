"""Imported suites: problems from other benchmarks, evaluated with their own input generators (docs/pkb.md)."""
