"""Wrong: also divides by the number of micro-batches, though the loss was already averaged over them."""

import torch
import torch.distributed as dist


def solution(x, grad_out):
    world, micro = dist.get_world_size(), x.shape[0]
    main_grad = torch.einsum("mto,mti->oi", grad_out.float(), x.float()).reshape(-1).contiguous()
    shard = torch.empty(main_grad.numel() // world, dtype=torch.float32, device=x.device)
    dist.reduce_scatter_tensor(shard, main_grad)
    return shard / (world * micro)
