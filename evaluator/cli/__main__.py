"""`python -m evaluator.cli ...` runs the `arena` command."""

import sys

from evaluator.cli.main import main

sys.exit(main())
