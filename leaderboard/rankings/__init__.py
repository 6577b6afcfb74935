"""Rankings: the scores (metrics), the reads that compute every ranking (selectors), the filters and tables that
pages, exports and the API share, the one write that stores a run's ranking row (services), and the generations
that tell the page cache a ranking changed."""
