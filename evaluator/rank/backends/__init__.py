"""Runtime helpers that solutions of a declared backend may import inside the sandbox (docs/backends/). They hold no
judge state and decide nothing: a solution could write the same code itself."""
