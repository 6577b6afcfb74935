"""The rank's side of the link to its judge's rank (evaluator/rank/worker.py ``Worker.take_device_feed``): whatever
arrives, nothing of the link stays open in the rank once it booted, so the solution finds no way to its judge."""

import os
import socket
import types

import pytest
import torch

from evaluator.rank.worker import Worker


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _take(link_fd: int) -> int:
    return Worker.take_device_feed(types.SimpleNamespace(device=torch.device("cpu")), link_fd)  # type: ignore[arg-type]


def test_no_device_feed_is_taken_and_the_link_is_closed():
    judge, rank = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with judge:
        judge.send(b"0")
        fd = rank.detach()
        assert _take(fd) == 0
        assert _closed(fd)


def test_a_descriptor_sent_to_a_cpu_rank_is_closed_with_the_link():
    judge, rank = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    read_end, write_end = os.pipe()
    with judge:
        socket.send_fds(judge, [b"4096"], [write_end])
        os.close(write_end)
        fd = rank.detach()
        assert _take(fd) == 0
        assert _closed(fd)
    # The only write end was the one sent: once the rank closed its copy, the pipe reads as ended.
    assert os.read(read_end, 1) == b""
    os.close(read_end)


@pytest.mark.parametrize("sent", [b"", b"garbage"])
def test_a_judge_that_ended_or_sent_nonsense_leaves_the_rank_without_a_device_feed(sent):
    judge, rank = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if sent:
        judge.send(sent)
    judge.close()
    fd = rank.detach()
    if sent == b"garbage":
        with pytest.raises(ValueError):
            _take(fd)
    else:
        assert _take(fd) == 0
    assert _closed(fd)


def test_both_descriptors_sent_to_a_cpu_rank_are_closed_with_the_link():
    judge, rank = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pipes = [os.pipe(), os.pipe()]
    with judge:
        socket.send_fds(judge, [b"4096 8192"], [w for _, w in pipes])
        for _, w in pipes:
            os.close(w)
        fd = rank.detach()
        assert _take(fd) == 0
        assert _closed(fd)
    for r, _ in pipes:
        assert os.read(r, 1) == b""
        os.close(r)
