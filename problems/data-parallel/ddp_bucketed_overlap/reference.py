"""DDP backward of a stack of linear layers: weight gradients appear in reverse layer order, are packed into
byte-capped buckets, and each full bucket is all-reduced asynchronously while the next gradients are computed."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(bucket_cap_bytes, *acts):
    world = dist.get_world_size()
    layers = len(acts) // 2
    cap = int(bucket_cap_bytes.item())
    out = [None] * layers
    pending = []  # (work, flat buffer, layer ids) of buckets in flight
    bucket, size = [], 0

    def launch(ids, grads):
        flat = torch.cat([grads[i].reshape(-1) for i in ids])
        flat.div_(world)  # DDP divides before the sum, so bit16 buckets do not overflow
        pending.append((dist.all_reduce(flat, async_op=True), flat, ids))

    grads = {}
    for layer in reversed(range(layers)):
        x, grad_out = acts[2 * layer], acts[2 * layer + 1]
        grads[layer] = grad_out.t() @ x  # dL/dW of y = x @ W.T
        nbytes = grads[layer].numel() * grads[layer].element_size()
        if bucket and size + nbytes > cap:
            launch(bucket, grads)
            bucket, size = [], 0
        bucket.append(layer)
        size += nbytes
    if bucket:
        launch(bucket, grads)
    for work, flat, ids in pending:
        work.wait()
        for i, piece in zip(ids, flat.split([grads[i].numel() for i in ids])):
            out[i] = piece.view(grads[i].shape).clone()  # each gradient its own tensor, not a view of the bucket
    return tuple(out)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int, tokens: int,
                hidden: int, bucket_cap_bytes: int):
    g = rank_generator(seed, rank, device)
    dt = dtype_of(dtype)
    acts = []
    for _ in range(layers):
        acts.append(randn((tokens, hidden), dt, device, g))                        # the layer's input x
        acts.append(randn((tokens, hidden), dt, device, g, scale=tokens ** -0.5))  # dL/dy
    return (torch.tensor(bucket_cap_bytes, dtype=torch.int64, device=device), *acts)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    dt = inputs[0][1].dtype
    acc = accumulate_dtype(dt)
    layers = (len(inputs[0]) - 1) // 2
    means = []
    for layer in range(layers):
        total = sum(inp[2 + 2 * layer].to(acc).t() @ inp[1 + 2 * layer].to(acc) for inp in inputs)
        means.append((total / world).to(dt))
    return [tuple(m.clone() for m in means) for _ in inputs]
