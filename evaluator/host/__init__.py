"""On a worker: the RQ entry points, one evaluation from spec to result document, the OS sandbox, the watch over
what runs inside it, and the build pool."""
