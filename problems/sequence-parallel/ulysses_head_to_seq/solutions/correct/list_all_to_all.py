import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    seq, hl, d = x.shape
    sl = seq // w
    sends = [x[j * sl : (j + 1) * sl] for j in range(w)]
    recvs = [torch.empty(sl, hl, d, dtype=x.dtype, device=x.device) for _ in range(w)]
    dist.all_to_all(recvs, sends)
    return torch.cat(recvs, dim=1)
