"""Accounts: sign-up, log-in, API tokens; a person's public profile is their user page (``leaderboard.web``)."""
