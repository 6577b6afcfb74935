"""What the evaluator reads off a solution and its figures, without running it: the static checks (ours and
KernelGuard's), the statistics of the timed samples, and the communication-aware roofline."""
