"""Runtime helpers of the declared backends (docs/backends/), defined once here so that the problems' known answers
may import them; solutions import the same modules under their public names, ``evaluator.rank.backends.*``, and the
solution's sandbox holds both. They hold no judge state and decide nothing: a solution could write the same code
itself."""
