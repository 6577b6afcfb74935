"""Latitude-sharded spherical convolution (SFNO spectral layer): real FFT along longitude, Legendre transform along
latitude (a sum over every rank's latitudes), a per-degree complex channel mix, and the inverse transforms back to
this rank's latitudes."""

import math

import torch
import torch.distributed as dist

from problems.common import rank_generator, randn, shared_generator


def solution(x, leg_fwd, leg_inv, weight):
    channels, _, nlon = x.shape
    modes = leg_fwd.shape[0]
    xm = torch.fft.rfft(x, dim=-1, norm="forward")[..., :modes]  # (C, lat, m)
    # a[c, l, m] = sum over latitudes of leg_fwd[m, l, lat] * xm[c, lat, m]: partial sums here, total by all-reduce.
    a = torch.einsum("mlj,cjm->clm", leg_fwd.to(torch.complex64), xm)
    a = torch.view_as_real(a).contiguous()
    dist.all_reduce(a)
    a = torch.view_as_complex(a)
    b = torch.einsum("clm,lco->olm", a, torch.view_as_complex(weight.contiguous()))
    ym = torch.einsum("mlj,olm->ojm", leg_inv.to(torch.complex64), b)
    ym[..., 0] = ym[..., 0].real  # a real field's m = 0 coefficient is real
    ym = torch.nn.functional.pad(ym, (0, nlon // 2 + 1 - modes))
    return torch.fft.irfft(ym, n=nlon, dim=-1, norm="forward")


def _legendre(cos_theta: torch.Tensor, modes: int) -> torch.Tensor:
    """Orthonormal associated Legendre functions P[m, l, j] (zero for l < m), float64, by the standard three-term
    recursion in l, all orders m at once."""
    dev = cos_theta.device
    sin_theta = torch.sqrt(1 - cos_theta ** 2)
    m = torch.arange(modes, dtype=torch.float64, device=dev)
    step = -torch.sqrt((2 * m[1:] + 1) / (2 * m[1:]))[:, None] * sin_theta
    pmm = torch.cat([torch.ones_like(cos_theta)[None], torch.cumprod(step, 0)]) / math.sqrt(4 * math.pi)
    p = torch.zeros((modes, modes, cos_theta.numel()), dtype=torch.float64, device=dev)
    for l in range(modes):
        p[l, l] = pmm[l]
        if l >= 1:
            p[l - 1, l] = math.sqrt(2 * l + 1) * cos_theta * pmm[l - 1]
        if l >= 2:
            mm = m[:l - 1]
            a = torch.sqrt((4 * l * l - 1) / (l * l - mm * mm))[:, None]
            b = torch.sqrt(((l - 1) ** 2 - mm * mm) / (4 * (l - 1) ** 2 - 1))[:, None]
            p[:l - 1, l] = a * (cos_theta * p[:l - 1, l - 1] - b * p[:l - 1, l - 2])
    return p


def gauss_legendre(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauss-Legendre nodes (ascending) and weights on [-1, 1], float64, by Golub-Welsch: the eigenvalues of the
    Jacobi matrix and twice the squared first components of its eigenvectors (agrees with NumPy's leggauss to 2e-14
    up to n = 720)."""
    k = torch.arange(1, n, dtype=torch.float64)
    beta = k / torch.sqrt(4 * k * k - 1)
    nodes, vectors = torch.linalg.eigh(torch.diag(beta, 1) + torch.diag(beta, -1))
    return nodes, 2 * vectors[0] ** 2


# How far each latitude and its weight move from the Gauss-Legendre grid, per seed and rank: a quarter of the gap to
# the nearest neighbour (so the latitudes stay ordered and distinct) and 20 % of the weight.
LATITUDE_JITTER = 0.25
WEIGHT_JITTER = 0.2


def jittered_grid(nlat: int, rows: slice, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """cos(colatitude) and quadrature weights of the latitudes `rows` of the nlat-point grid from north to south,
    float64 on the generator's device: the Gauss-Legendre grid moved at random by the generator (each rank moves its
    own latitudes with its own stream), so the Legendre tables (which depend on nothing else) differ for every seed
    and a solution that recomputes them for a fixed grid instead of reading them fails."""
    nodes, weights = gauss_legendre(nlat)
    nodes, weights = nodes.flip(0), weights.flip(0)  # north (cos = 1) to south
    gaps = (nodes[:-1] - nodes[1:]).abs()
    edge = 1 - nodes.abs()[:1]  # the poles bound the outermost latitudes (each grid is symmetric)
    room = torch.minimum(torch.cat([edge, gaps]), torch.cat([gaps, edge]))
    dev = generator.device
    nodes, weights, room = nodes[rows].to(dev), weights[rows].to(dev), room[rows].to(dev)
    u = torch.rand((2, nodes.numel()), generator=generator, dtype=torch.float64, device=dev) * 2 - 1
    return nodes + LATITUDE_JITTER * room * u[0], weights * (1 + WEIGHT_JITTER * u[1])


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                channels: int, nlat: int, nlon: int, modes: int):
    local = nlat // world_size
    g = rank_generator(seed, rank, device)
    # This rank's latitudes, moved by its own stream (so the assembled grid depends on W), then its field rows.
    cos_theta, quad = jittered_grid(nlat, slice(rank * local, (rank + 1) * local), g)
    p = _legendre(cos_theta, modes)
    leg_fwd = (2 * math.pi * quad * p).float()
    leg_inv = p.float()
    x = randn((channels, local, nlon), torch.float32, device, g)
    weight = randn((modes, channels, channels, 2), torch.float32, device, shared_generator(seed, device),
                   scale=(2 * channels) ** -0.5)
    return (x, leg_fwd, leg_inv, weight)


def oracle(inputs: list[tuple], **_):
    c128 = torch.complex128
    x = torch.cat([inp[0] for inp in inputs], dim=1).double()
    fwd = torch.cat([inp[1] for inp in inputs], dim=2).double()  # (m, l, all latitudes)
    inv = torch.cat([inp[2] for inp in inputs], dim=2).double()
    weight = torch.view_as_complex(inputs[0][3].double().contiguous())
    modes, nlon = fwd.shape[0], x.shape[2]
    xm = torch.fft.rfft(x, dim=-1, norm="forward")[..., :modes]
    a = torch.einsum("mlj,cjm->clm", fwd.to(c128), xm)
    b = torch.einsum("clm,lco->olm", a, weight)
    ym = torch.einsum("mlj,olm->ojm", inv.to(c128), b)
    # y = Re(Y_0) + 2 * sum_{m >= 1} Re(Y_m exp(i m phi)), written out rather than through irfft.
    phi = 2 * math.pi * torch.arange(nlon, dtype=torch.float64) / nlon
    m = torch.arange(modes, dtype=torch.float64)
    basis = torch.exp(1j * m[:, None] * phi[None, :])  # (m, lon)
    scale = torch.full((modes,), 2.0, dtype=torch.float64)
    scale[0] = 1.0
    y = torch.einsum("ojm,mn->ojn", ym * scale, basis).real
    return [block.float().contiguous() for block in y.chunk(len(inputs), dim=1)]
