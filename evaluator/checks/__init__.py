"""Checks of the evaluator's inputs rather than of solutions: a proposed problem's check (in its own sandbox), the
catalogue's check (`arena check-problem`) and a worker host's self-check."""
