"""problems/traffic.py counts what each torch.distributed call moves per rank, and given a node layout what it moves
to and from other nodes: ring collectives cross a node boundary at the ring's crossing ranks, all-to-all blocks and
point-to-point messages (batched ones included, whose peers batch_isend_irecv passes as group ranks) by their peer's
node, and collectives inside a node never."""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from problems.common import node_groups
from problems.traffic import counting

W, PER_NODE = 4, 2


def _rank(rank: int, store: str, out: str) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=W, timeout=timedelta(seconds=60)
    )
    try:
        intra, _ = node_groups(PER_NODE)
        found = {}
        x = torch.ones(1024)  # 4 KiB
        for name, call in (
            ("all_reduce", lambda: dist.all_reduce(x.clone())),
            ("all_reduce_in_node", lambda: dist.all_reduce(x.clone(), group=intra)),
            ("all_to_all", lambda: dist.all_to_all_single(torch.empty(1024), x)),
            (
                "batched_p2p",
                lambda: [
                    r.wait()
                    for r in dist.batch_isend_irecv(
                        [
                            dist.P2POp(dist.isend, x[:256].clone(), (rank + 2) % W),
                            dist.P2POp(dist.irecv, torch.empty(256), (rank + 2) % W),
                            dist.P2POp(dist.isend, x[:128].clone(), rank ^ 1),
                            dist.P2POp(dist.irecv, torch.empty(128), rank ^ 1),
                        ]
                    )
                ],
            ),
        ):
            with counting(PER_NODE) as traffic:
                call()
            found[name] = (traffic.sent, traffic.received, traffic.internode_sent, traffic.internode_received)
        torch.save(found, os.path.join(out, f"rank{rank}.pt"))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_bytes_to_other_nodes_are_counted_by_peer():
    with tempfile.TemporaryDirectory() as tmp:
        mp.start_processes(_rank, args=(os.path.join(tmp, "store"), tmp), nprocs=W, join=True, start_method="fork")
        found = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(W)]
    ring = 2 * (W - 1) / W * 4096
    for r, f in enumerate(found):
        # the ring 0 -> 1 -> 2 -> 3 -> 0 crosses nodes from 1 to 2 and from 3 to 0
        assert f["all_reduce"] == (ring, ring, ring if r % 2 else 0.0, 0.0 if r % 2 else ring), r
        assert f["all_reduce_in_node"] == (4096.0, 4096.0, 0.0, 0.0), r
        assert f["all_to_all"] == (3072.0, 3072.0, 2048.0, 2048.0), r
        assert f["batched_p2p"] == (1536.0, 1536.0, 1024.0, 1024.0), r
