import torch
import torch.distributed as dist


def solution(act):
    # Blocking send/recv, ordered by parity so neighbours never both wait to send (W is even).
    w, r = dist.get_world_size(), dist.get_rank()
    recv = torch.empty_like(act)
    if r % 2 == 0:
        dist.send(act.contiguous(), (r + 1) % w)
        dist.recv(recv, (r - 1) % w)
    else:
        dist.recv(recv, (r - 1) % w)
        dist.send(act.contiguous(), (r + 1) % w)
    return recv
