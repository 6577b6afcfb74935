"""Every generator's seed, derived from an evaluation call's secret seed and what the generator is for.

The hash is the rule: no generator's seed says anything of another's. A rank can recover the seed of a generator it
was given values of (the CPU's Mersenne Twister keeps 32 bits of a seed, and its state is linear in its output); when
the ranks' seeds were the secret plus an offset per rank, each rank computed its peers' inputs from its own and
skipped the exchange the problem measures. No torch here: the imported suites' metadata is read without it.
"""

from __future__ import annotations

import hashlib
from typing import Any


def derived_seed(*parts: Any) -> int:
    """A 63-bit seed for the generator named by ``parts`` (a purpose, the call's seed, a rank, an input's path)."""
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)
