"""How the judge reads a solution's frame whose data the rank wrote into its out feed in device memory
(evaluator/judge/rank.py ``JudgeRank._solution_frame``): it copies the data into memory of its own, takes the digest
of that copy and reads the values from it, so anything written to the out feed after the rank's reply is refused and
nothing written after the judge's copy is read. A host byte tensor stands in for the out feed and a hash of the bytes
for the engine's device digest (the GPU tests run the real ones)."""

import hashlib
import types

import pytest
import torch

from evaluator import wire
from evaluator.judge.rank import JudgeRank, SlotChanged


def _digest(head, data) -> int:
    return int.from_bytes(hashlib.blake2b(bytes(head) + data.numpy().tobytes(), digest_size=7).digest(), "little")


def _judge(tmp_path, values):
    """A judge holding the rank's reply to one call that returned ``values``: the frame's head in the host's copy of the
    out slot, the data in the out feed, and the digest the rank's engine took as it replied."""
    head, parts, total = wire.frame_layout(values, wire.DEVICE_FRAME_MAGIC)
    out_feed = torch.zeros(len(head) + total + 4096, dtype=torch.uint8)
    wire._lay_out(out_feed, len(head), parts)
    writer = wire.Slot.open(tmp_path / wire.RETURNED_SLOT, writable=True, pinned=False)
    writer.write_frame(torch.frombuffer(bytearray(head), dtype=torch.uint8))
    reader = wire.Slot.open(tmp_path / wire.RETURNED_SLOT, writable=False, pinned=False)
    judge = types.SimpleNamespace(
        _returned=lambda: reader,
        device_out=out_feed,
        taken_out=torch.empty_like(out_feed),
        engine=types.SimpleNamespace(device_digest=_digest, digest=lambda frame: -1),
    )
    digest = _digest(head, out_feed[len(head) : len(head) + total])
    return judge, len(head), digest


def test_an_untouched_device_frame_is_read_from_the_judges_own_copy(tmp_path):
    values = [torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.ones(5, dtype=torch.bfloat16)]
    judge, nbytes, digest = _judge(tmp_path, values)
    back, n_out = JudgeRank._solution_frame(judge, nbytes, digest)  # type: ignore[arg-type]
    assert n_out == 2 and torch.equal(back[0], values[0]) and torch.equal(back[1], values[1])
    judge.device_out.zero_()  # a write after the judge's copy: what it compares is its copy
    assert torch.equal(back[0], values[0])


def test_a_write_to_the_out_feed_after_the_reply_is_refused(tmp_path):
    judge, nbytes, digest = _judge(tmp_path, [torch.zeros(1000)])
    judge.device_out[nbytes + 8] = 1  # a kernel left running writes one byte of the outputs after the reply
    with pytest.raises(SlotChanged):
        JudgeRank._solution_frame(judge, nbytes, digest)  # type: ignore[arg-type]


def test_a_device_frame_without_a_digest_or_naming_memory_beyond_the_out_feed_is_refused(tmp_path):
    judge, nbytes, _ = _judge(tmp_path, [torch.zeros(1000)])
    with pytest.raises(SlotChanged):
        JudgeRank._solution_frame(judge, nbytes, None)  # type: ignore[arg-type]
    judge.device_out = judge.device_out[:256]
    with pytest.raises(ValueError, match="beyond"):
        JudgeRank._solution_frame(judge, nbytes, 0)  # type: ignore[arg-type]


def test_a_late_change_balanced_in_the_padding_is_refused(tmp_path):
    """A writer that knows the digest can balance a change with bytes of its choosing (the mix of each word is
    invertible); in a value they would be compared, in the padding they would not: the padding must be zero."""
    judge, nbytes, _ = _judge(tmp_path, [torch.zeros(10)])  # 40 bytes of values, 24 of padding
    judge.device_out[nbytes + 40] = 7
    balanced = _digest(judge._returned().view(nbytes), judge.device_out[nbytes : nbytes + 64])
    with pytest.raises(SlotChanged):
        JudgeRank._solution_frame(judge, nbytes, balanced)  # type: ignore[arg-type]
