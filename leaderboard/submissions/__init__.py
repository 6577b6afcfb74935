"""Submissions: an upload validated, stored and queued; what workers report recorded (idempotent); platform failures
retried; the reaper that makes Redis agree with the database; the RQ jobs the web worker runs."""
