"""Trusted: the problem's inputs, its reference's outputs and timings, the comparison and the verdict. Nothing here
ever loads solution code; what the solution's ranks send back is data that this package checks."""
