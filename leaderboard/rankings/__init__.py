"""Rankings: the scores (metrics), the reads that compute every ranking (selectors), the filters and tables that
pages, exports and the API share, the writes that store what pages read when a result is recorded (services: a
run's score, problems' and categories' standings), and the generations that tell the page cache a ranking
changed."""
