"""Submissions, results, rankings, their pages, REST API and RQ jobs."""
