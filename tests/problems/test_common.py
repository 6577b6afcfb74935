"""The input helpers every reference uses: a draw is the same whatever the dtype and device path it takes."""

import pytest
import torch

from problems.common import randn, shared_generator

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _float32_then_cast(shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int, scale: float):
    g = shared_generator(seed, device)
    x = torch.randn(shape, generator=g, device=device, dtype=torch.float32)
    if scale != 1.0:
        x.mul_(scale)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scale", [1.0, 8192**-0.5])
def test_a_draw_on_the_cpu_is_the_float32_draw_cast_to_its_dtype(dtype: torch.dtype, scale: float) -> None:
    drawn = randn((257, 33), dtype, "cpu", shared_generator(11, "cpu"), scale=scale)
    assert drawn.dtype == dtype
    assert torch.equal(drawn, _float32_then_cast((257, 33), dtype, "cpu", 11, scale))


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scale", [1.0, 8192**-0.5])
def test_a_one_pass_draw_on_the_gpu_has_the_values_of_the_float32_draw_cast(dtype: torch.dtype, scale: float) -> None:
    # An odd size, so the kernel's unrolled tail is compared too.
    drawn = randn((4097, 1023), dtype, "cuda", shared_generator(7, "cuda"), scale=scale)
    assert drawn.dtype == dtype and drawn.device.type == "cuda"
    assert torch.equal(drawn, _float32_then_cast((4097, 1023), dtype, "cuda", 7, scale))


def test_a_cpu_stream_is_not_regenerated_from_the_32_bits_its_seed_keeps() -> None:
    # torch's CPU generator keeps 32 bits of a seed: a red team searched them (about 12 core-minutes) and then had every
    # value of the stream. Its whole state now comes from the hash, so those 32 bits regenerate nothing.
    from problems.common import group_generator, rank_generator
    from problems.seeds import derived_seed

    for make, parts in (
        (lambda: rank_generator(5, 1), ("arena-rank", 5, 1)),
        (lambda: shared_generator(5), ("arena-shared", 5)),
        (lambda: group_generator(5, ("pair", 0, 1)), ("arena-group", 5, ("pair", 0, 1))),
    ):
        drawn = torch.randn(64, generator=make())
        assert torch.equal(drawn, torch.randn(64, generator=make()))  # the same purpose, the same stream
        low_bits = torch.Generator().manual_seed(derived_seed(*parts) & 0xFFFFFFFF)
        assert not torch.equal(drawn, torch.randn(64, generator=low_bits))
    assert not torch.equal(
        torch.randn(64, generator=rank_generator(5, 0)), torch.randn(64, generator=rank_generator(5, 1))
    )
