"""Tensor files between the sandbox and the judge: what goes in comes out, and a file written by solution code
yields plain tensors or a clear refusal, never code."""

import pickle

import pytest
import torch

from evaluator import wire


def test_tensors_of_every_kind_round_trip(tmp_path):
    values = [torch.randn(3, 4), torch.randn(5).to(torch.bfloat16), torch.tensor(7), torch.empty(0, 2), None,
              [torch.arange(6).reshape(2, 3)[:, ::2], None], torch.tensor([True, False])]
    wire.save_tensors(tmp_path / "x", values)
    back = wire.load_tensors(tmp_path / "x")
    assert back[4] is None and back[5][1] is None
    for a, b in [(values[i], back[i]) for i in (0, 1, 2, 3, 6)] + [(values[5][0], back[5][0])]:
        assert type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize("content", [
    pickle.dumps([torch.ones(2)]),  # a pickle is not a tensor file: no unpickler runs
    b"ARNT0001" + (10 ** 9).to_bytes(8, "little"),
    b"ARNT0001" + (20).to_bytes(8, "little") + b'{"values": [{"dtype": "float32", "shape": [1000], "offset": 0, '
                                               b'"nbytes": 4000}]}',
    b"ARNT0001" + (48).to_bytes(8, "little") + b'{"values": [{"dtype": "os.system", "shape": [], "offset": 0}]}',
])
def test_a_file_that_is_not_ours_is_refused(tmp_path, content):
    (tmp_path / "x").write_bytes(content)
    with pytest.raises(ValueError):
        wire.load_tensors(tmp_path / "x")


def test_a_staging_buffer_carries_the_same_bytes_and_is_reused(tmp_path):
    staging = wire.Staging(pinned=False)
    staging.take(1 << 20).fill_(0xAB)  # what the process staged before must not reach the file's padding
    values = [torch.randn(300, 7)[:, ::2], [torch.arange(10, dtype=torch.int64), None], torch.tensor(3.5)]
    wire.save_tensors(tmp_path / "a", values, staging)
    wire.save_tensors(tmp_path / "b", values)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    buffer = staging.buffer
    back = wire.load_tensors(tmp_path / "a", staging)
    assert staging.buffer is buffer  # no fresh allocation per file of the same size
    assert torch.equal(back[0], values[0]) and torch.equal(back[1][0], values[1][0]) and back[1][1] is None
    assert back[0].untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()


def test_a_staging_buffer_grows_for_a_larger_file(tmp_path):
    staging = wire.Staging(pinned=False)
    wire.save_tensors(tmp_path / "small", [torch.ones(4)], staging)
    big = torch.randn(1 << 19)
    wire.save_tensors(tmp_path / "big", [big], staging)
    assert torch.equal(wire.load_tensors(tmp_path / "big", staging)[0], big)


def test_a_file_that_shrinks_while_read_is_refused(tmp_path):
    wire.save_tensors(tmp_path / "x", [torch.ones(1000)])
    whole = (tmp_path / "x").read_bytes()
    (tmp_path / "x").write_bytes(whole[:-100])
    with pytest.raises(ValueError):
        wire.load_tensors(tmp_path / "x")
