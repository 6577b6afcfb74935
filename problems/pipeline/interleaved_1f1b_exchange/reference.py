"""The activation and gradient exchange of Megatron's interleaved (virtual-stage) 1F1B schedule.

With W ranks and V model chunks per rank, chunk v of rank r is virtual stage s = v*W + r, so the model's stages go
round the ring of ranks V times. Stage s's output activation feeds stage s + 1 and its input gradient goes back to
stage s - 1: to the neighbouring rank, with the chunk index moving up (activations) or down (gradients) where the
ring wraps from rank W-1 to rank 0. The first stage receives no activation and the last no gradient (zeros).
"""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator


def solution(acts: torch.Tensor, grads: torch.Tensor):
    w, r = dist.get_world_size(), dist.get_rank()
    nxt, prev = (r + 1) % w, (r - 1) % w
    chunks = acts.shape[0]
    act_in = torch.zeros_like(acts)
    grad_in = torch.zeros_like(grads)
    ops = []
    # All activation messages are posted before all gradient messages, each in chunk order, on every rank: messages
    # between one pair of ranks match in posting order, and with W=2 both kinds travel between the same two ranks.
    for v in range(chunks):
        if not (r == w - 1 and v == chunks - 1):  # the last stage's output goes to the loss, not to a rank
            ops.append(dist.P2POp(dist.isend, acts[v].contiguous(), nxt))
        src_chunk = v if r > 0 else v - 1
        if src_chunk >= 0:
            ops.append(dist.P2POp(dist.irecv, act_in[v], prev))
    for v in range(chunks):
        if not (r == 0 and v == 0):  # the first stage's input gradient goes to the embedding, not to a rank
            ops.append(dist.P2POp(dist.isend, grads[v].contiguous(), prev))
        src_chunk = v if r < w - 1 else v + 1
        if src_chunk < chunks:
            ops.append(dist.P2POp(dist.irecv, grad_in[v], nxt))
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return act_in, grad_in


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                V: int, S: int, B: int, H: int):
    g = rank_generator(seed, rank, device)
    shape = (V, S, B, H)
    return (randn(shape, dtype_of(dtype), device, g), randn(shape, dtype_of(dtype), device, g, scale=1e-2))


def oracle(inputs: list[tuple], V: int, **_):
    w = len(inputs)
    # Index everything by virtual stage: stage s = v*W + r.
    acts = [inputs[s % w][0][s // w] for s in range(V * w)]
    grads = [inputs[s % w][1][s // w] for s in range(V * w)]
    zeros = torch.zeros_like(acts[0])
    out = []
    for r in range(w):
        act_in = [acts[v * w + r - 1] if v * w + r > 0 else zeros for v in range(V)]
        grad_in = [grads[v * w + r + 1] if v * w + r < V * w - 1 else zeros for v in range(V)]
        out.append((torch.stack(act_in), torch.stack(grad_in)))
    return out
