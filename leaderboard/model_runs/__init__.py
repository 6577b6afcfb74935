"""Model runs: the archive (container safety, manifest schema, layout rules, writer and example) and the service
that stores a run as one submission per attempt.

``python -m leaderboard.model_runs example run.zip`` writes an example archive; ``... check run.zip`` checks one
against the built-in suite."""
