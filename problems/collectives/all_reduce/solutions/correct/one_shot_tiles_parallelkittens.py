"""One-shot all-reduce with ThunderKittens register tiles over a multicast-free parallel layout.

Each rank copies its input into a symmetric-memory buffer; one kernel then meets every peer's matching block on a
signal-pad barrier, reads 16x64 bf16 tiles of every rank's buffer over NVLink (``pgl<gl<bf16,1,1,-1,-1>, W, false>``
built from the peers' pointers), sums them in fp32 registers and writes the result; a second barrier at the end
keeps the next call's copy from overwriting a buffer a peer still reads. bf16, element count a multiple of
16 * 1024 (the bench preset's 8 Mi elements)."""

import torch
import torch.distributed as dist

from problems.backends import parallelkittens as pk

BACKEND = "parallelkittens"
COLS = 1024
MAX_BLOCKS = 132

CPP = """
#include <vector>
void launch(std::vector<int64_t> ptrs, int64_t out, int64_t rows, int64_t cols, int64_t pads, int64_t rank,
            int64_t blocks, int64_t channel0, int64_t stream);
"""

KERNEL = r"""
#include "kittens.cuh"
#include <stdexcept>
#include <string>
#include <vector>
#ifndef ARENA_WORLD
#define ARENA_WORLD 1
#endif
using namespace kittens;
using layout = gl<bf16, 1, 1, -1, -1>;
using parallel = pgl<layout, ARENA_WORLD, false>;
constexpr int WARPS = 4;

__global__ void __launch_bounds__(WARPS * 32) one_shot_sum(const __grid_constant__ parallel in,
                                                          const __grid_constant__ layout out, uint32_t** pads,
                                                          int rank, int channel0) {
    arena_pk::barrier(pads, rank, ARENA_WORLD, channel0 + blockIdx.x);
    const int tiles_c = out.cols() / 64;
    const int tiles = (out.rows() / 16) * tiles_c;
    rt_bf<16, 64> part;
    rt_fl<16, 64> wide, acc;
    for (int t = blockIdx.x * WARPS + warpid(); t < tiles; t += gridDim.x * WARPS) {
        const int r = t / tiles_c, c = t % tiles_c;
        warp::zero(acc);
        #pragma unroll
        for (int p = 0; p < ARENA_WORLD; ++p) {
            warp::load(part, in[p], {0, 0, r, c});
            warp::copy(wide, part);
            warp::add(acc, acc, wide);
        }
        warp::copy(part, acc);
        warp::store(out, part, {0, 0, r, c});
    }
    arena_pk::barrier(pads, rank, ARENA_WORLD, channel0 + blockIdx.x);
}

void launch(std::vector<int64_t> ptrs, int64_t out, int64_t rows, int64_t cols, int64_t pads, int64_t rank,
            int64_t blocks, int64_t channel0, int64_t stream) {
    if ((int)ptrs.size() != ARENA_WORLD) throw std::runtime_error("built for another world size");
    bf16* data[ARENA_WORLD];
    for (int p = 0; p < ARENA_WORLD; ++p) data[p] = reinterpret_cast<bf16*>(ptrs[p]);
    parallel in(data, nullptr, nullptr, (size_t)rows, (size_t)cols);
    layout dst(reinterpret_cast<bf16*>(out), nullptr, nullptr, (size_t)rows, (size_t)cols);
    one_shot_sum<<<(int)blocks, WARPS * 32, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        in, dst, reinterpret_cast<uint32_t**>(pads), (int)rank, (int)channel0);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) throw std::runtime_error(std::string("one_shot_sum: ") + cudaGetErrorString(err));
}
"""

_state = {}


def _setup(x: torch.Tensor):
    key = (x.numel(), x.device)
    if key not in _state:
        if x.dtype != torch.bfloat16 or x.numel() % (16 * COLS):
            raise ValueError(
                f"this kernel takes bf16 with a multiple of {16 * COLS} elements, got {x.dtype} x {x.numel()}"
            )
        world = dist.get_world_size()
        ext = pk.load("arena_pk_one_shot_all_reduce", CPP, pk.DEVICE_BARRIER + KERNEL, ["launch"], world_size=world)
        buf = pk.ParallelTensor((x.numel() // COLS, COLS), torch.bfloat16, device=x.device)
        blocks = max(1, min(buf.channels - 1, MAX_BLOCKS))
        _state[key] = (ext, buf, blocks)
    return _state[key]


def solution(x: torch.Tensor) -> torch.Tensor:
    ext, buf, blocks = _setup(x)
    buf.local.view(-1).copy_(x.reshape(-1))
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    ext.launch(
        buf.ptrs,
        out.data_ptr(),
        buf.shape[0],
        COLS,
        buf.signal_pads_dev,
        buf.rank,
        blocks,
        1,
        torch.cuda.current_stream(x.device).cuda_stream,
    )
    return out
