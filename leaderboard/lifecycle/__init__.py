"""One lifecycle for queued work: a submission's evaluation, an unranked test, a proposal's check.

Every kind goes the same way, written once here, with hooks per kind (as Read the Docs keeps one build task with
``before_start``/``on_success``/``on_failure`` hooks):

- ``work.Work``: what a kind's row is called (model, job id prefix, states, field names) and its life on the web
  side: the next job id and the enqueue after the commit, mark running, a platform failure retried as a new job while
  attempts are left, a job taken off its queue;
- ``queues``: the Redis side (a queue by name, a job fetched, jobs put on their queues once the transaction commits);
- ``signatures``: the nonce bound to each job and the check of a worker's signed reply;
- ``replies``: a reply job's one shape (verified, then the kind's service, with the database connections checked);
- ``reaper``: one reaper pass (``Reaper``: the database against Redis, the kind's hooks settle each disagreement),
  run for every kind by ``manage.py reap``.

It imports the models' package only through the kinds that use it (nothing here names a model) and the contract.
"""
