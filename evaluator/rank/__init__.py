"""Inside the sandbox: the process that loads the solution, calls it on the inputs the judge sent as data, writes
its outputs back as data, and times it with the compiled timer. Nothing here decides a verdict; never imports the
judge."""

# A rank's exit status once it has reported its own failure to the host (evaluator/rank/worker.py): an error the
# solution raised, a solution that does not import, a start the platform failed.
RUNTIME_ERROR_EXIT, COMPILE_ERROR_EXIT, INFRA_ERROR_EXIT = 2, 3, 5
