"""Runtime helpers that solutions of a declared backend may import inside the sandbox (docs/backends/), under these
public names. Each module here re-exports its one definition in ``problems/backends/``, where the problems' known
answers import it from (problems never import the evaluator). They hold no judge state and decide nothing: a solution
could write the same code itself."""
