"""Inside the sandbox: the process that loads the solution, calls it on the inputs the judge sent as data, writes
its outputs back as data, and times it with the compiled timer. Nothing here decides a verdict; never imports the
judge."""
