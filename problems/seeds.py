"""Every generator's seed, derived from an evaluation call's secret seed and what the generator is for.

The hash is the rule: no generator's seed says anything of another's. A rank can recover the seed of a generator it
was given values of (the CPU's Mersenne Twister keeps 32 bits of a seed, and its state is linear in its output); when
the ranks' seeds were the secret plus an offset per rank, each rank computed its peers' inputs from its own and
skipped the exchange the problem measures. No torch at import: the imported suites' metadata is read without it.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

# torch's CPU generator state (CPUGeneratorImplState): its seed, ``left``, ``seeded`` and ``next``, then the Mersenne
# Twister's 624 words, each stored in 64 bits.
_MT_WORDS = 624
_MT_AT = 24


def derived_seed(*parts: Any) -> int:
    """A 63-bit seed for the generator named by ``parts`` (a purpose, the call's seed, a rank, an input's path)."""
    digest = hashlib.blake2b(_name(parts), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def seed_generator(generator: Any, *parts: Any) -> Any:
    """``generator`` (a torch.Generator) seeded for the purpose named by ``parts``, and returned. A CPU generator gets
    its whole state, 624 words, from the hash: its ``manual_seed`` keeps 32 bits, and 2^32 seeds are searched in
    minutes, so a rank that searched them once had every value of that stream. A CUDA generator (Philox) keeps the 63
    bits of ``derived_seed``."""
    seed = derived_seed(*parts)
    generator.manual_seed(seed)
    if generator.device.type != "cpu":
        return generator
    import torch
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    # A generator holds real state even where tensors are fake (the catalogue check sizes inputs under FakeTensorMode).
    with unset_fake_temporarily():
        raw = bytearray(generator.get_state().numpy().tobytes())
        w0, w1 = struct.unpack_from("<QQ", raw, _MT_AT)
        if w0 != seed & 0xFFFFFFFF or w1 != (1812433253 * (w0 ^ (w0 >> 30)) + 1) & 0xFFFFFFFF:
            raise RuntimeError(
                f"torch {torch.__version__}'s CPU generator keeps its state in a layout problems/seeds.py does not "
                f"know; update _MT_AT there"
            )
        words = struct.unpack(f"<{_MT_WORDS}I", hashlib.shake_256(b"mt19937/" + _name(parts)).digest(4 * _MT_WORDS))
        struct.pack_into(f"<{_MT_WORDS}Q", raw, _MT_AT, *words)
        generator.set_state(torch.frombuffer(raw, dtype=torch.uint8).clone())
    return generator


def _name(parts: tuple[Any, ...]) -> bytes:
    return "/".join(map(str, parts)).encode()
