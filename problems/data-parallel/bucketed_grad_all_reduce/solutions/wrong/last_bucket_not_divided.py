"""Wrong: buckets like DDP, but the final partial bucket is flushed after the loop without the division."""

import torch
import torch.distributed as dist


def solution(bucket_cap_bytes, *grads):
    world = dist.get_world_size()
    cap = int(bucket_cap_bytes.item())
    out = [None] * len(grads)

    def flush(bucket, divide):
        flat = torch.cat([grads[i].reshape(-1) for i in bucket])
        if divide:
            flat /= world
        dist.all_reduce(flat)
        for i, piece in zip(bucket, flat.split([grads[i].numel() for i in bucket])):
            out[i] = piece.view(grads[i].shape).clone()

    bucket, size = [], 0
    for i in reversed(range(len(grads))):
        nbytes = grads[i].numel() * grads[i].element_size()
        if bucket and size + nbytes > cap:
            flush(bucket, True)
            bucket, size = [], 0
        bucket.append(i)
        size += nbytes
    flush(bucket, False)
    return tuple(out)
