"""Wrong: computes each trust ratio from the rank's own shard norms (no all-reduce of the sums of squares)."""
import torch


def solution(step, *state):
    t = int(step) + 1
    outs_p, outs_m, outs_v, trust = [], [], [], []
    for i in range(0, len(state), 4):
        p, g, m, v = state[i], state[i + 1].float(), state[i + 2], state[i + 3]
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        u = (m / (1 - 0.9 ** t)) / ((v / (1 - 0.999 ** t)).sqrt() + 1e-6) + 0.01 * p
        pn, un = p.norm(), u.norm()
        tr = pn / un if pn > 0 and un > 0 else torch.ones((), device=p.device)
        outs_p.append(p - 1e-2 * tr * u)
        outs_m.append(m)
        outs_v.append(v)
        trust.append(tr)
    return (*outs_p, *outs_m, *outs_v, torch.stack(trust))
