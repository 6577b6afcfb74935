"""The `arena` command line (evaluator/cli/main.py); one module per subcommand."""
