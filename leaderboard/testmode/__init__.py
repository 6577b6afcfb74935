"""Test mode: unranked evaluations for a solution's author (services, selectors, the web worker's replies, the API's
throttles). Stored in ``TestRun``, a table no ranking, chart, export or dataset reads."""
