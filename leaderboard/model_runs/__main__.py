from leaderboard.model_runs.writer import main

raise SystemExit(main())
