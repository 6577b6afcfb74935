"""Wrong: fills each bucket in reverse layer order but unpacks it as if it were in forward order."""

import torch
import torch.distributed as dist


def solution(bucket_cap_bytes, *acts):
    world = dist.get_world_size()
    layers = len(acts) // 2
    cap = int(bucket_cap_bytes.item())
    grads = {l: acts[2 * l + 1].t() @ acts[2 * l] for l in range(layers)}
    buckets, bucket, size = [], [], 0
    for l in reversed(range(layers)):
        nbytes = grads[l].numel() * grads[l].element_size()
        if bucket and size + nbytes > cap:
            buckets.append(bucket)
            bucket, size = [], 0
        bucket.append(l)
        size += nbytes
    buckets.append(bucket)
    out = [None] * layers
    for ids in buckets:
        flat = torch.cat([grads[i].reshape(-1) for i in ids]) / world
        dist.all_reduce(flat)
        for i, piece in zip(sorted(ids), flat.split([grads[i].numel() for i in sorted(ids)])):
            out[i] = piece.view(grads[i].shape).clone()
    return tuple(out)
