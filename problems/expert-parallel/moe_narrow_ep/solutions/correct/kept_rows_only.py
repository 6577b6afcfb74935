import torch
import torch.distributed as dist


def solution(x, expert_ids, gate, capacity, w_in, w_out):
    # Sends only the kept rows (uneven splits) and runs the expert on exactly those rows.
    w = dist.get_world_size()
    cap = int(capacity)
    tokens, hidden = x.shape
    onehot = torch.nn.functional.one_hot(expert_ids, w)
    pos = (onehot.cumsum(0) * onehot).sum(1) - 1
    keep = pos < cap
    kept_tok = keep.nonzero().flatten()
    order = kept_tok[torch.argsort(expert_ids[kept_tok], stable=True)]
    send_counts = torch.bincount(expert_ids[kept_tok], minlength=w)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    s_split, r_split = send_counts.tolist(), recv_counts.tolist()
    recv = x.new_empty((sum(r_split), hidden))
    dist.all_to_all_single(recv, x[order].contiguous(), r_split, s_split)
    y = torch.relu(recv @ w_in) @ w_out
    back = x.new_empty((len(order), hidden))
    dist.all_to_all_single(back, y.contiguous(), s_split, r_split)
    out = x.new_zeros((tokens, hidden))
    out[order] = (back.float() * gate[order, None]).to(x.dtype)
    return out
