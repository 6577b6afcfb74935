"""Tensor files between the sandbox and the judge: what goes in comes out, and a file written by solution code
yields plain tensors or a clear refusal, never code."""

import os
import pickle
import threading

import pytest
import torch

from evaluator import wire


def test_tensors_of_every_kind_round_trip(tmp_path):
    values = [
        torch.randn(3, 4),
        torch.randn(5).to(torch.bfloat16),
        torch.tensor(7),
        torch.empty(0, 2),
        None,
        [torch.arange(6).reshape(2, 3)[:, ::2], None],
        torch.tensor([True, False]),
    ]
    wire.save_tensors(tmp_path / "x", values)
    back = wire.load_tensors(tmp_path / "x")
    assert back[4] is None and back[5][1] is None
    for a, b in [(values[i], back[i]) for i in (0, 1, 2, 3, 6)] + [(values[5][0], back[5][0])]:
        assert type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize(
    "content",
    [
        pickle.dumps([torch.ones(2)]),  # a pickle is not a tensor file: no unpickler runs
        b"ARNT0001" + (10**9).to_bytes(8, "little"),
        b"ARNT0001" + (20).to_bytes(8, "little") + b'{"values": [{"dtype": "float32", "shape": [1000], "offset": 0, '
        b'"nbytes": 4000}]}',
        b"ARNT0001" + (48).to_bytes(8, "little") + b'{"values": [{"dtype": "os.system", "shape": [], "offset": 0}]}',
    ],
)
def test_a_file_that_is_not_ours_is_refused(tmp_path, content):
    (tmp_path / "x").write_bytes(content)
    with pytest.raises(ValueError):
        wire.load_tensors(tmp_path / "x")


def test_a_slot_carries_its_frame_and_keeps_its_pages(tmp_path):
    writer = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    values = [
        torch.randn(300, 7)[:, ::2],
        torch.arange(10, dtype=torch.int64),
        None,
        torch.tensor(3.5),
        torch.ones(2, 3, dtype=torch.bfloat16),
    ]
    writer.write(values)
    mapping = writer.bytes
    writer.write([v * 2 if isinstance(v, torch.Tensor) else v for v in values])
    assert writer.bytes is mapping  # the same pages for every draw of the same size
    reader = wire.Slot.open(tmp_path / "slot", writable=False, pinned=False)
    back, n_out = reader.read_frame()
    assert n_out == len(values) and back[2] is None
    for got, want in zip(back, values):
        if want is not None:
            assert got.dtype == want.dtype and torch.equal(got, want * 2)


def test_a_feed_slot_a_rank_grew_is_written_without_cutting_it():
    # The host seals each feed slot against shrinking; a rank that grew its slot (reopened writable through
    # /proc/self/fd) once made the judge's next frame cut it back, which the seal refused: the judge failed and the
    # evaluation was the platform's error.
    import fcntl

    fd = os.memfd_create("arena-feed", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    judge = wire.Slot(fd, writable=True, pinned=False, name="feed")
    judge.write([torch.zeros(1024, dtype=torch.uint8)])
    rank = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
    os.ftruncate(rank, 1 << 30)
    values = torch.arange(3 << 20, dtype=torch.int32)
    judge.write([values])
    assert os.fstat(fd).st_size == 1 << 30
    assert torch.equal(wire.Slot(rank, writable=False, pinned=False).read()[0], values)
    os.close(fd)


def test_a_page_the_kernel_still_holds_from_an_earlier_frame_never_shows_the_next(tmp_path):
    # A rank keeps references to its feed's pages in the kernel (vmsplice into a pipe: no copy), then the judge writes
    # the next call's frame while the rank is held; the pipe, read later (a paced zero-copy send would copy it then,
    # to a peer), must not hold that frame.
    import ctypes
    import mmap

    writer = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    writer.write([torch.zeros(4096, dtype=torch.uint8)])
    rank_view = mmap.mmap(os.open(tmp_path / "slot", os.O_RDWR), writer.size, flags=mmap.MAP_SHARED)
    rank_view[:] = bytes(len(rank_view))  # the engine zeroes a frame once it has read it

    class Iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    libc = ctypes.CDLL(None, use_errno=True)
    held = (ctypes.c_char * len(rank_view)).from_buffer(rank_view)
    r, w = os.pipe()
    assert libc.vmsplice(w, ctypes.byref(Iovec(ctypes.addressof(held), 8192)), 1, 0) == 8192
    secret = torch.arange(1, 257, dtype=torch.int32).to(torch.uint8).repeat(16)
    writer.write([secret])
    seen = os.read(r, 8192)
    assert secret.numpy().tobytes()[:256] not in seen and not any(seen)
    # The slot itself carries the new frame, to the writer and to the rank's mapping alike.
    assert torch.equal(wire.Slot.open(tmp_path / "slot", writable=False, pinned=False).read()[0], secret)
    assert secret.numpy().tobytes()[:256] in bytes(rank_view[:8192])
    del held
    rank_view.close()
    os.close(r)
    os.close(w)


@pytest.mark.parametrize(
    "field, value", [("count", 10_000), ("kind", 7), ("dtype", 12), ("ndim", 9), ("nbytes", 1 << 40), ("offset", 3)]
)
def test_a_frame_with_any_field_out_of_bounds_is_refused(tmp_path, field, value):
    writer = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    n = writer.write([torch.randn(16)])
    raw = bytearray((tmp_path / "slot").read_bytes()[:n])
    entry = wire.FRAME_HEAD.size
    where = {
        "count": (8, "<I"),
        "kind": (entry, "<B"),
        "dtype": (entry + 1, "<B"),
        "ndim": (entry + 2, "<B"),
        "offset": (entry + 8, "<Q"),
        "nbytes": (entry + 16, "<Q"),
    }[field]
    import struct

    struct.pack_into(where[1], raw, where[0], value)
    with pytest.raises(ValueError):
        wire.parse_frame(torch.frombuffer(raw, dtype=torch.uint8), len(raw), "slot")


@pytest.mark.parametrize("where", ["head_padding", "entry_padding", "tensor_tail", "unused_dimension"])
def test_a_frame_whose_free_bytes_are_not_zero_is_refused(tmp_path, where):
    # A linear digest (CRC-32C) of a frame changed after the reply can be kept by four bytes written where no reader
    # looks: there is no such place.
    writer = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    n = writer.write([torch.randn(15), torch.randn(3)])
    raw = bytearray((tmp_path / "slot").read_bytes()[:n])
    wire.parse_frame(torch.frombuffer(bytearray(raw), dtype=torch.uint8), len(raw), "slot")  # as written: read
    entry = wire.FRAME_HEAD.size
    base = wire._padded(entry + 2 * wire.FRAME_ENTRY.size)
    at = {
        "head_padding": entry + 2 * wire.FRAME_ENTRY.size + 1,
        "entry_padding": entry + 4,
        "tensor_tail": base + 15 * 4 + 1,
        "unused_dimension": entry + 24 + 8 * 3,
    }[where]
    raw[at] ^= 0x5A
    with pytest.raises(ValueError, match="not zero"):
        wire.parse_frame(torch.frombuffer(raw, dtype=torch.uint8), len(raw), "slot")


def test_a_slot_grows_for_a_larger_draw_and_its_reader_follows(tmp_path):
    writer = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    reader = wire.Slot.open(tmp_path / "slot", writable=False, pinned=False)
    writer.write([torch.ones(4)])
    assert torch.equal(reader.read()[0], torch.ones(4))
    big = torch.randn(1 << 19)
    writer.write([big])
    assert torch.equal(reader.read()[0], big)


def test_a_slot_padding_never_carries_an_earlier_draw(tmp_path):
    writer = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    writer.write([torch.full((1000,), 7, dtype=torch.uint8)])
    n = writer.write([torch.ones(3, dtype=torch.uint8), torch.ones(3, dtype=torch.uint8)])
    assert 7 not in (tmp_path / "slot").read_bytes()[:n]


def test_a_slot_read_is_bounded_by_the_length_given(tmp_path):
    writer = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    n = writer.write([torch.randn(1000)])
    reader = wire.Slot.open(tmp_path / "slot", writable=False, pinned=False)
    with pytest.raises(ValueError):
        reader.read(n - 100)  # the header names more bytes than the host copied: refused, not read past


def test_a_file_that_shrinks_while_read_is_refused(tmp_path):
    wire.save_tensors(tmp_path / "x", [torch.ones(1000)])
    whole = (tmp_path / "x").read_bytes()
    (tmp_path / "x").write_bytes(whole[:-100])
    with pytest.raises(ValueError):
        wire.load_tensors(tmp_path / "x")


def test_files_the_other_side_wrote_open_only_as_plain_files(tmp_path):
    plain = tmp_path / "log.txt"
    plain.write_text("hello\n")
    os.close(wire.open_plain(plain))
    secret = tmp_path / "host-secret"
    secret.write_text("not for the result")
    link = tmp_path / "link.txt"
    link.symlink_to(secret)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError):  # a link is not followed
        wire.open_plain(link)
    with pytest.raises(ValueError, match="not a plain file"):  # and a FIFO is refused at once, not waited on
        wire.open_plain(fifo)
    with pytest.raises(OSError):
        wire.load_tensors(link)


def test_a_long_log_is_read_by_its_ends_only(tmp_path):
    log = tmp_path / "log.txt"
    log.write_bytes(b"a" * 100 + b"b" * 10_000 + b"c" * 100)
    text = wire.read_plain_text(log, 100, 100)
    assert text.startswith("a" * 100) and text.endswith("c" * 100) and "10000 bytes cut" in text
    assert "b" not in text.replace("bytes", "")
    assert wire.read_plain_text(log, 10_000, 10_000).count("b") == 10_000


def test_only_torchs_own_result_tuples_count_as_several_outputs():
    import torch

    kinds = wire.result_tuple_types()
    values = torch.tensor([3.0, 1.0, 2.0])
    got = wire.outputs_of(torch.sort(values), kinds)
    assert len(got) == 2 and torch.equal(got[0], torch.tensor([1.0, 2.0, 3.0]))

    class Claims(tuple):
        __module__ = "torch.return_types"

        def __iter__(self):
            raise AssertionError("iterated: the solution's code ran")

    fake = Claims((values,))
    assert wire.outputs_of(fake, kinds) == [fake]
    assert len(wire.outputs_of((values, values), kinds)) == 2 and len(wire.outputs_of([values], kinds)) == 1
    assert wire.outputs_of(values, kinds)[0] is values


def _channel():
    read_fd, write_fd = os.pipe()
    return wire.Lines(read_fd), write_fd


def test_a_report_nested_past_the_parsers_depth_is_garbled_not_a_failure_of_the_reader():
    lines, write_fd = _channel()

    def write() -> None:  # more than a pipe holds: written beside the reader
        with os.fdopen(write_fd, "wb") as f:
            f.write(b"[" * 100_000 + b"]" * 100_000 + b"\n" + b'{"kind": "spun", "rank": 0}\n')

    writer = threading.Thread(target=write)
    writer.start()
    got = []
    while not lines.closed:
        got += lines.read_available()
    writer.join()
    assert [m["kind"] for m in got] == ["garbled", "spun"]


def test_a_report_with_a_key_twice_is_garbled_so_a_spliced_line_cannot_override_a_field():
    lines, write_fd = _channel()
    with os.fdopen(write_fd, "wb") as f:
        # the engine's line with text written into its middle: the rule's field again, emptied
        f.write(b'{"kind": "timed", "rank": 0, "multicast_changed": ["NCCL_NVLS_ENABLE"], "multicast_changed": []}\n')
        f.write(b'{"kind": "spun", "rank": 0, "calls": {"a": 1}}\n')
    got = []
    while not lines.closed:
        got += lines.read_available()
    assert [m["kind"] for m in got] == ["garbled", "spun"]


def test_a_flood_of_reports_is_read_a_bounded_amount_at_a_time_and_reported(monkeypatch):
    monkeypatch.setattr(wire.Lines, "READ_LIMIT", 1 << 16)
    monkeypatch.setattr(wire, "MAX_TOTAL", 1 << 18)
    lines, write_fd = _channel()
    line = b'{"kind": "staged", "rank": 0, "i": 1, "pad": "' + b"x" * 1000 + b'"}\n'
    os.set_blocking(write_fd, False)
    written, got = 0, []
    while written < 1 << 19:  # twice the cap, at the pipe's and the reader's pace
        try:
            written += os.write(write_fd, line)
        except BlockingIOError:
            batch = lines.read_available()
            assert len(batch) <= (1 << 16) // len(line) + 2  # never more than one call's share
            got += batch
    os.close(write_fd)
    while not lines.closed:
        got += lines.read_available()
    flood = [m for m in got if m["kind"] == "garbled"]
    assert lines.flooded and len(flood) == 1 and flood[0]["raw"].startswith("more than")


def test_a_frame_made_ahead_is_written_in_one_copy_and_reads_back_as_the_values(tmp_path):
    values = [torch.arange(5, dtype=torch.float32), None, torch.ones(2, 3, dtype=torch.int64)]
    slot = wire.Slot.open(tmp_path / "slot", writable=True, pinned=False)
    n = slot.write_frame(wire.frame_bytes(values))
    back, n_out = slot.read_frame(n)
    assert n_out == 3 and back[1] is None
    assert torch.equal(back[0], values[0]) and torch.equal(back[2], values[2])
    other = wire.Slot.open(tmp_path / "other", writable=True, pinned=False)
    assert bytes(other.view(other.write(values))) == bytes(slot.view(n))


def test_a_rank_report_carrying_a_number_that_is_not_finite_is_not_the_engines():
    # Python's JSON parser reads NaN and Infinity; the engine never writes them, so such a report is the solution's.
    assert wire.malformed_rank_report({"kind": "timed", "rank": 0, "launch_us": 12.5}, 0) is None
    for bad in (float("inf"), float("nan")):
        assert "not finite" in wire.malformed_rank_report({"kind": "timed", "rank": 0, "launch_us": bad}, 0)
        nested = {"kind": "timed", "rank": 0, "steps_us": {"measure": 1.0, "save": bad}}
        assert "not finite" in wire.malformed_rank_report(nested, 0)


def _device_frame(values):
    """A device frame as the engine writes one: its head alone, and the memory its data lies in (a host byte tensor
    stands in for device memory: the reader only slices it)."""
    head, parts, total = wire.frame_layout(values, wire.DEVICE_FRAME_MAGIC)
    memory = torch.zeros(len(head) + total, dtype=torch.uint8)
    wire._lay_out(memory, len(head), parts)
    return torch.frombuffer(bytearray(head), dtype=torch.uint8), memory


def test_a_device_frame_reads_its_values_from_the_device_memory_it_names():
    values = [torch.arange(10, dtype=torch.float32).reshape(2, 5), None, torch.ones(3, dtype=torch.bfloat16)]
    head, memory = _device_frame(values)
    back, n_out = wire.parse_frame(head, len(head), "slot", memory)
    assert n_out == 3 and back[1] is None
    assert torch.equal(back[0], values[0]) and torch.equal(back[2], values[2])
    assert back[0].data_ptr() >= memory.data_ptr()  # views of the memory given, not copies
    assert wire.is_device_frame(head, len(head))
    base, end, padding = wire.device_frame_span(head, len(head), "slot")
    assert (base, end) == (len(head), memory.numel())
    # The first value's 40 bytes and the last's 6 are padded to 64; the None has no bytes at all.
    assert padding == [(base + 40, base + 64), (base + 64 + 6, base + 128)]


def test_a_device_frame_without_its_device_memory_or_beyond_it_is_refused():
    head, memory = _device_frame([torch.ones(100)])
    with pytest.raises(ValueError, match="device memory"):
        wire.parse_frame(head, len(head), "slot")
    with pytest.raises(ValueError, match="beyond"):
        wire.parse_frame(head, len(head), "slot", memory[:-64])
    plain = torch.frombuffer(bytearray(wire.frame_layout([torch.ones(1)])[0]), dtype=torch.uint8)
    with pytest.raises(ValueError, match="does not hold a frame"):
        wire.device_frame_span(plain, len(plain), "slot")  # a frame with its data is no device frame


def test_a_device_frame_head_is_read_from_a_mapping_as_from_a_tensor():
    head, _ = _device_frame([torch.ones(4)])
    mapped = memoryview(bytearray(head.numpy().tobytes()))  # the judge reads the host's copy through its mapping
    assert wire.is_device_frame(mapped, len(mapped))
    assert wire.device_frame_span(mapped, len(mapped), "slot") == wire.device_frame_span(head, len(head), "slot")


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_a_gated_head_carries_its_token_where_every_other_frame_has_zero_padding(tmp_path, count):
    """The gate's token is the eight bytes in front of the data: padding in any frame, whatever its number of values
    (a head and its entries end 16 or 48 bytes short of a multiple of 64)."""
    values = [torch.full((k + 1, 3), float(k + 1)) for k in range(count)]
    slot = wire.Slot.open(tmp_path / "feed", writable=True, pinned=False)
    token = 0x0123456789ABCDEF
    start, end = slot.write_gated(values, 1 << 20, token)
    head, _, total = wire.frame_layout(values, wire.GATED_FRAME_MAGIC)
    written = bytes(slot.bytes[:start].numpy())
    assert start == len(head) and end == start + total
    assert written[:8] == wire.GATED_FRAME_MAGIC
    assert written[: start - 8] == head[: start - 8] and not any(head[start - 8 :])
    assert int.from_bytes(written[start - 8 : start], "little") == token
    # Nothing of the data in the slot: the gate copies it into the feed from where the judge laid it out, at the
    # offsets the head names as though the head were in front of the data there too.
    source = torch.zeros(1 << 12, dtype=torch.uint8)
    assert wire.lay_out_data(values, source) == (start, end)
    at = start
    for v in values:
        n = v.numel() * v.element_size()
        assert torch.equal(source[at : at + n].view(v.dtype).view(v.shape), v)
        assert not source[at + n : at + wire._padded(n)].any()  # padding zeroed
        at += wire._padded(n)
    assert at == end and not source[:start].any() and not source[end:].any()


def test_a_gated_frame_too_large_for_the_device_feed_writes_nothing(tmp_path):
    slot = wire.Slot.open(tmp_path / "feed", writable=True, pinned=False)
    assert slot.write_gated([torch.ones(1000)], 1024, 7) is None
    assert slot.size == 0  # the judge then writes the whole frame into the slot
    source = torch.zeros(1024, dtype=torch.uint8)
    assert wire.lay_out_data([torch.ones(1000)], source) is None and not source.any()
