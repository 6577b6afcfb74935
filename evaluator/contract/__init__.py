"""What the web side and the workers share: the evaluation spec, the result document, hardware profiles, queue and
job names with their payloads, and the one check that a file defines ``solution``.

Standard library only (no torch, no Django), so the portal can import it without the evaluator's runtime and a
worker can import it without the portal."""
