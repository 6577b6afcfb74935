"""Test mode: unranked evaluations for a solution's author (services, selectors, the web worker's replies, the reaper;
the API's limits are DRF throttles, ``leaderboard.web.throttles.TestModeThrottle``). Stored in ``TestRun``, a table
no ranking, chart, export or dataset reads."""
