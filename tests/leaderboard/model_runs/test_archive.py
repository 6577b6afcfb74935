"""Model-run archives: real zip and tar.gz files built in memory, every refusal with its message, good archives.

Plain functions: no database, no Redis.
"""

from __future__ import annotations

import gzip
import io
import json
import stat
import struct
import tarfile
import zipfile

import pytest

from leaderboard.model_runs.container import ArchiveError
from leaderboard.model_runs.layout import read_archive
from leaderboard.model_runs.writer import EXAMPLE_MANIFEST, build_archive, example_archive, manifest_toml

KNOWN = {
    "collectives/all_reduce": {"suite": "arena", "world_sizes": [2, 4, 8]},
    "collectives/all_gather": {"suite": "arena", "world_sizes": [2, 4, 8]},
    "tensor-parallel/tp_mlp": {"suite": "arena", "world_sizes": [2, 4]},
    "pipeline/old_problem": {"suite": "arena", "world_sizes": [2, 4], "is_active": False},
    "pkb/12_all_gather": {"suite": "pkb", "world_sizes": [4, 8]},
}

MANIFEST = {
    "model": "m-1",
    "provider": "Lab",
    "protocol": "agentic",
    "k": 2,
    "turn_budget": 10,
    "tokens": 5000,
    "wall_time_s": 60.5,
    "hardware": "h200-nvlink-4",
    "date": "2026-11-29",
    "open_weights": False,
}
GOOD = "import torch\n\n\ndef solution(x):\n    return x.clone()\n"
ATTEMPTS = {
    ("collectives/all_reduce", 1): GOOD,
    ("collectives/all_reduce", 2): GOOD,
    ("collectives/all_gather", 1): GOOD,
    ("collectives/all_gather", 2): GOOD,
}


def read(data: bytes, name: str = "run.zip", known=KNOWN, **limits):
    return read_archive(data, name, known, **limits)


def refused(data: bytes, *, name: str = "run.zip", known=KNOWN, **limits) -> str:
    with pytest.raises(ArchiveError) as info:
        read_archive(data, name, known, **limits)
    return str(info.value)


def with_manifest(fmt: str = "zip", **changes) -> bytes:
    manifest = {**MANIFEST, **changes}
    return build_archive({k: v for k, v in manifest.items() if v is not ...}, ATTEMPTS, fmt=fmt)


def raw_zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, content in entries:
            zf.writestr(info, content)
    return out.getvalue()


def raw_tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tf:
        for info, content in members:
            if content is not None:
                info.size = len(content)
            tf.addfile(info, io.BytesIO(content) if content is not None else None)
    return out.getvalue()


def good_zip_entries() -> list[tuple[str, bytes]]:
    return [
        ("manifest.json", json.dumps(MANIFEST).encode()),
        ("attempts/collectives/all_reduce/attempt_1.py", GOOD.encode()),
        ("attempts/collectives/all_reduce/attempt_2.py", GOOD.encode()),
    ]


def good_tar_members() -> list[tuple[tarfile.TarInfo, bytes | None]]:
    return [(tarfile.TarInfo(name), content) for name, content in good_zip_entries()]


def tar_member(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


# --- good archives -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_a_good_archive_is_read_in_full(fmt):
    trajectories = {
        ("collectives/all_reduce", 1): '{"role": "user"}\n{"role": "assistant"}\n',
        ("collectives/all_gather", 2, "md"): "# thoughts\n",
    }
    data = build_archive({**MANIFEST, "notes": "n", "precision": "bf16"}, ATTEMPTS, trajectories, fmt=fmt)
    run = read(data, f"run.{fmt}")
    assert run.manifest.model == "m-1" and run.manifest.k == 2 and run.manifest.suite == "arena"
    assert run.manifest.precision == "bf16" and run.manifest.wall_time_s == 60.5
    assert run.manifest.as_protocol().label() == "agentic · k=2 · 10 turns · 5k tokens · 1 min"
    assert [(a.problem_id, a.index) for a in run.attempts] == [
        ("collectives/all_gather", 1),
        ("collectives/all_gather", 2),
        ("collectives/all_reduce", 1),
        ("collectives/all_reduce", 2),
    ]
    assert run.attempts[0].filename == "attempts/collectives/all_gather/attempt_1.py"
    assert run.attempts[0].source == GOOD
    assert [(t.problem_id, t.index, t.format) for t in run.trajectories] == [
        ("collectives/all_gather", 2, "md"),
        ("collectives/all_reduce", 1, "jsonl"),
    ]
    # tp_mlp is not attempted; the retired problem and the other suite's problem are not counted as missing
    assert run.not_attempted == ("tensor-parallel/tp_mlp",)


def test_a_toml_manifest_with_a_native_date_is_accepted():
    toml = manifest_toml({k: v for k, v in MANIFEST.items() if k != "date"}) + "date = 2026-11-29\n"
    run = read(build_archive(toml, ATTEMPTS, manifest_format="toml", fmt="tar.gz"), "run.tar.gz")
    assert run.manifest.date == "2026-11-29" and run.manifest.open_weights is False


def test_a_zero_shot_run_of_an_imported_suite():
    manifest = {**MANIFEST, "protocol": "zero-shot", "turn_budget": 0, "k": 1, "suite": "pkb"}
    run = read(build_archive(manifest, {("pkb/12_all_gather", 1): GOOD}))
    assert run.problem_ids == ["pkb/12_all_gather"] and run.not_attempted == ()


def test_tar_made_the_usual_way_with_dot_prefix_and_folders_is_accepted():
    members: list[tuple[tarfile.TarInfo, bytes | None]] = [
        (tar_member(".", tarfile.DIRTYPE), None),
        (tar_member("./attempts", tarfile.DIRTYPE), None),
    ]
    members += [(tarfile.TarInfo("./" + name), content) for name, content in good_zip_entries()]
    assert read(raw_tar_gz(members), "run.tar.gz").problem_ids == ["collectives/all_reduce"]


def test_the_example_archive_is_valid_against_the_real_suite():
    from problems.registry import catalogue

    for fmt in ("zip", "tar.gz"):
        run = read_archive(example_archive(fmt), f"example.{fmt}", catalogue())
        assert run.manifest.model == EXAMPLE_MANIFEST["model"] and len(run.attempts) == 2
        assert "collectives/all_gather" in run.not_attempted


def test_build_archive_is_reproducible():
    assert build_archive(MANIFEST, ATTEMPTS) == build_archive(MANIFEST, ATTEMPTS)
    assert build_archive(MANIFEST, ATTEMPTS, fmt="tar.gz") == build_archive(MANIFEST, ATTEMPTS, fmt="tar.gz")


# --- not an archive, too large, bombs ------------------------------------------------------------------------------


def test_not_an_archive_is_refused():
    assert "run.rar: neither a .zip nor a .tar.gz" in refused(b"Rar!\x1a\x07\x00 whatever", name="run.rar")
    assert "run.zip: not a readable zip archive" in refused(b"PK\x03\x04 truncated", name="run.zip")
    assert "not a readable tar.gz" in refused(gzip.compress(b"just some text, no tar"), name="run.tar.gz")
    plain_tar = io.BytesIO()
    with tarfile.open(fileobj=plain_tar, mode="w") as tf:
        tf.addfile(tarfile.TarInfo("manifest.json"), io.BytesIO(b""))
    assert "an uncompressed tar; compress it" in refused(plain_tar.getvalue(), name="run.tar")


def test_too_large_an_upload_is_refused_before_reading():
    data = with_manifest()
    assert "run.zip: 1.1 KiB is more than the 100 bytes an upload may be" in refused(data, max_bytes=100)


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_too_much_uncompressed_content_is_refused(fmt):
    data = build_archive(MANIFEST, ATTEMPTS, {("collectives/all_reduce", 1, "txt"): "x" * 5000}, fmt=fmt)
    message = refused(data, name=f"run.{fmt}", max_total_bytes=4000)
    assert "uncompressed" in message and "3.9 KiB" in message


def test_a_zip_bomb_is_refused_from_declared_sizes_without_inflating():
    bomb = raw_zip(good_zip_entries() + [("trajectories/collectives/all_reduce/attempt_1.txt", b"\0" * (8 << 20))])
    assert "looks like a zip bomb" in refused(bomb)


def test_a_gzip_bomb_is_stopped_while_streaming():
    members = good_tar_members() + [
        (tarfile.TarInfo("trajectories/collectives/all_reduce/attempt_1.txt"), b"\0" * (20 << 20))
    ]
    data = raw_tar_gz(members)
    assert len(data) < 100_000
    assert "looks like a gzip bomb" in refused(data, name="run.tar.gz")
    # with the ratio check relaxed, the member's declared size is checked against the total before its data
    assert "more than 1 MiB uncompressed" in refused(data, name="run.tar.gz", max_ratio=10**6, max_total_bytes=1 << 20)


def test_a_tar_header_that_inflates_past_the_cap_stops_the_stream():
    # A 3 MiB pax header record is read by tarfile itself, before any member size can be checked: only the
    # capped stream stops it (ratio check relaxed to show the total cap does).
    info = tarfile.TarInfo("attempts/collectives/all_reduce/attempt_1.py")
    info.pax_headers = {"comment": "z" * (3 << 20)}
    out = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf,
    ):
        info.size = len(GOOD)
        tf.addfile(info, io.BytesIO(GOOD.encode()))
    message = refused(out.getvalue(), name="run.tar.gz", max_ratio=10**6, max_total_bytes=1 << 20, max_files=10)
    assert "run.tar.gz: inflates past 1.1 MiB" in message
    assert "looks like a gzip bomb" in refused(out.getvalue(), name="run.tar.gz")


def test_zip_entries_claiming_more_compressed_bytes_than_the_file_holds_are_refused():
    data = bytearray(raw_zip(good_zip_entries()))
    cd = data.find(b"PK\x01\x02")
    data[cd + 20 : cd + 24] = struct.pack("<L", 10 << 20)  # compressed size of the first central-directory entry
    assert "its entries overlap" in refused(bytes(data))


def test_a_zip_whose_header_lies_about_its_size_cannot_push_more_through():
    data = bytearray(raw_zip(good_zip_entries()))
    cd = data.rfind(b"PK\x01\x02")  # the last entry: attempt_2.py
    data[cd + 24 : cd + 28] = struct.pack("<L", 5)  # declared uncompressed size 5 bytes
    message = refused(bytes(data))
    assert "attempts/collectives/all_reduce/attempt_2.py cannot be read" in message


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_too_many_files_are_refused(fmt):
    extra = {f"trajectories/collectives/all_reduce/attempt_{i}.txt": "t" for i in range(1, 12)}
    data = build_archive(MANIFEST, ATTEMPTS, fmt=fmt, extra_files=extra)
    message = refused(data, name=f"run.{fmt}", max_files=10)
    assert "10" in message and "entries" in message


def test_a_zip_declaring_a_huge_directory_is_refused_before_zipfile_lists_it():
    data = bytearray(raw_zip(good_zip_entries()))
    eocd = data.rfind(b"PK\x05\x06")
    data[eocd + 8 : eocd + 12] = struct.pack("<HH", 60000, 60000)  # entries on this disk, entries in total
    assert "declares 60000 entries" in refused(bytes(data))


# --- unsafe members ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, message",
    [
        ("../evil.py", "climbs out of the archive with '..'"),
        ("attempts/../../evil.py", "climbs out of the archive with '..'"),
        ("/etc/cron.d/evil", "has an absolute path"),
        ("C:/evil.py", "has an absolute path"),
        ("attempts\\..\\evil.py", "uses backslashes"),
        ("attempts//x.py", "empty or '.' path component"),
    ],
)
def test_unsafe_paths_are_refused_in_zip(name, message):
    assert message in refused(raw_zip(good_zip_entries() + [(name, b"x")]))


@pytest.mark.parametrize(
    "name, message",
    [
        ("../evil.py", "climbs out of the archive with '..'"),
        ("/etc/cron.d/evil", "has an absolute path"),
    ],
)
def test_unsafe_paths_are_refused_in_tar(name, message):
    assert message in refused(raw_tar_gz(good_tar_members() + [(tarfile.TarInfo(name), b"x")]), name="run.tar.gz")


@pytest.mark.parametrize(
    "mode, message",
    [
        (stat.S_IFLNK | 0o777, "is a symbolic link"),
        (stat.S_IFCHR | 0o644, "is a device, FIFO or socket"),
        (stat.S_IFIFO | 0o644, "is a device, FIFO or socket"),
    ],
)
def test_links_and_devices_are_refused_in_zip(mode, message):
    info = zipfile.ZipInfo("attempts/collectives/all_reduce/attempt_1.py")
    info.external_attr = mode << 16
    entries = [good_zip_entries()[0], (info, b"/etc/passwd"), good_zip_entries()[2]]
    assert f"attempts/collectives/all_reduce/attempt_1.py {message}" in refused(raw_zip(entries))


@pytest.mark.parametrize(
    "kind, message",
    [
        (tarfile.SYMTYPE, "is a symbolic link"),
        (tarfile.LNKTYPE, "is a hard link"),
        (tarfile.CHRTYPE, "is a device or FIFO"),
        (tarfile.BLKTYPE, "is a device or FIFO"),
        (tarfile.FIFOTYPE, "is a device or FIFO"),
    ],
)
def test_links_and_devices_are_refused_in_tar(kind, message):
    members = good_tar_members()[:1] + [
        (tar_member("attempts/collectives/all_reduce/attempt_1.py", kind, "/etc/passwd"), None)
    ]
    assert f"attempts/collectives/all_reduce/attempt_1.py {message}" in refused(raw_tar_gz(members), name="run.tar.gz")


def test_encrypted_zip_entries_are_refused():
    data = bytearray(raw_zip(good_zip_entries()))
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 8] |= 0x1  # general-purpose flag bit 0: encrypted
    assert "attempt_2.py is encrypted" in refused(bytes(data))


def test_duplicate_paths_are_refused():
    entries = good_zip_entries() + [("attempts/collectives/all_reduce/attempt_1.py", GOOD.encode())]
    with pytest.warns(UserWarning):  # zipfile warns about the duplicate name while writing it
        data = raw_zip(entries)
    assert "attempt_1.py appears twice" in refused(data)


# --- the manifest --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_a_missing_manifest_is_named(fmt):
    assert "manifest.json is missing at the archive's root" in refused(
        build_archive(None, ATTEMPTS, fmt=fmt), name=f"run.{fmt}"
    )


def test_a_manifest_inside_a_folder_is_explained():
    data = build_archive(None, {}, extra_files={"myrun/manifest.json": json.dumps(MANIFEST)})
    assert "myrun/manifest.json: the manifest is not at the archive's root; archive the contents of myrun/" in refused(
        data
    )


def test_two_manifests_are_refused():
    data = build_archive(MANIFEST, ATTEMPTS, extra_files={"manifest.toml": manifest_toml(MANIFEST)})
    assert "both manifest.json and manifest.toml" in refused(data)


def test_malformed_json_names_the_line_and_column():
    text = '{\n  "model": "m",\n  "k": 2,,\n}'
    assert "manifest.json: not valid JSON at line 3, column 10" in refused(build_archive(text, ATTEMPTS))


def test_malformed_toml_is_named():
    data = build_archive('model = "m"\nk = = 2\n', ATTEMPTS, manifest_format="toml")
    assert "manifest.toml: not valid TOML" in refused(data)


def test_a_manifest_that_is_not_an_object_is_refused():
    assert "manifest.json: must hold one object of fields" in refused(build_archive("[1, 2]", ATTEMPTS))


def test_a_repeated_json_field_is_refused():
    text = json.dumps(MANIFEST)[:-1] + ', "k": 3}'
    assert "the field 'k' appears twice" in refused(build_archive(text, ATTEMPTS))


@pytest.mark.parametrize(
    "field",
    ["model", "provider", "protocol", "k", "turn_budget", "tokens", "wall_time_s", "hardware", "date", "open_weights"],
)
def test_each_missing_field_is_named(field):
    message = refused(with_manifest(**{field: ...}))
    assert f"manifest.json: the field '{field}' is missing; set \"{field}\"" in message


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("model", 3, "'model' must be a string, not an integer (3)"),
        ("k", "3", "'k' must be an integer, not a string ('3')"),
        ("k", True, "'k' must be an integer, not a boolean (True)"),
        ("k", 2.0, "'k' must be an integer, not a number (2.0)"),
        ("k", 0, "'k' is 0, outside 1..100"),
        ("tokens", -1, "'tokens' is -1, outside 0..9223372036854775807"),
        ("turn_budget", None, "'turn_budget' must be an integer, not null"),
        ("wall_time_s", "1h", "'wall_time_s' must be a number, not a string"),
        ("wall_time_s", -5, "'wall_time_s' is -5"),
        ("open_weights", "yes", "'open_weights' must be true or false, not a string ('yes')"),
        ("open_weights", 1, "'open_weights' must be true or false, not an integer (1)"),
        ("protocol", "few-shot", "'protocol' is 'few-shot'; set \"protocol\": one of 'zero-shot', 'agentic'"),
        (
            "hardware",
            "tpu-v5",
            "'hardware' is 'tpu-v5', not a known hardware profile; set \"hardware\": one of cpu-gloo-2",
        ),
        ("date", "29/11/2026", "'date' is '29/11/2026', not a real date written YYYY-MM-DD"),
        ("date", "2026-02-30", "'date' is '2026-02-30', not a real date"),
        ("date", 20261129, "'date' must be a string, not an integer"),
        ("notes", ["a"], "'notes' must be a string, not a list"),
        ("precision", "", "'precision' must be 1 to 32 characters"),
        ("suite", "PKB!", "'suite' is 'PKB!', not a suite name"),
        ("turn_budget", 0, "'turn_budget' is 0 but the protocol is agentic"),
    ],
)
def test_each_wrong_field_is_named(field, value, message):
    assert f"manifest.json: the field {message}" in refused(with_manifest(**{field: value}))


def test_zero_shot_needs_a_turn_budget_of_zero():
    message = refused(with_manifest(protocol="zero-shot", turn_budget=5))
    assert "the field 'turn_budget' is 5 but the protocol is zero-shot" in message


def test_unknown_manifest_fields_are_named():
    assert "manifest.json: unknown field 'temperatur'" in refused(with_manifest(temperatur=0.7))


def test_a_datetime_in_a_toml_manifest_is_refused():
    toml = manifest_toml({k: v for k, v in MANIFEST.items() if k != "date"}) + "date = 2026-11-29T10:00:00\n"
    assert "'date' is a date and time" in refused(build_archive(toml, ATTEMPTS, manifest_format="toml"))


# --- problems and attempts -----------------------------------------------------------------------------------------


def test_unknown_problem_ids_are_named_with_a_suggestion():
    data = build_archive(MANIFEST, {("collectives/all_reduc", 1): GOOD, ("collectives/all_reduc", 2): GOOD})
    message = refused(data)
    assert (
        "attempts/collectives/all_reduc/: unknown problem 'collectives/all_reduc' (did you mean "
        "'collectives/all_reduce'?)" in message
    )
    assert message.count("all_reduc/") == 1  # once per problem, not once per file


def test_problems_of_another_suite_retired_or_unfit_for_the_hardware_are_named():
    attempts = {(pid, i): GOOD for pid in ("pkb/12_all_gather", "pipeline/old_problem") for i in (1, 2)}
    message = refused(build_archive(MANIFEST, attempts))
    assert "'pkb/12_all_gather' belongs to suite 'pkb' but manifest.json says suite 'arena'" in message
    assert "'pipeline/old_problem' is retired" in message
    data = build_archive(
        {**MANIFEST, "hardware": "h200-nvlink-8"},
        {("tensor-parallel/tp_mlp", 1): GOOD, ("tensor-parallel/tp_mlp", 2): GOOD},
    )
    assert "'tensor-parallel/tp_mlp' runs on 2, 4 ranks, not on the 8 of hardware 'h200-nvlink-8'" in refused(data)


def test_a_plain_set_of_known_ids_is_enough():
    run = read(build_archive(MANIFEST, ATTEMPTS), known={"collectives/all_reduce", "collectives/all_gather", "x/y"})
    assert run.not_attempted == ("x/y",)


def test_attempt_indices_outside_1_to_k_are_refused():
    data = build_archive(MANIFEST, {**ATTEMPTS, ("collectives/all_reduce", 3): GOOD})
    message = refused(data)
    assert "attempts/collectives/all_reduce/attempt_3.py: attempt 3 is outside 1..k (k=2 in manifest.json)" in message


def test_every_problem_present_needs_exactly_k_attempts():
    data = build_archive({**MANIFEST, "k": 3}, ATTEMPTS)
    message = refused(data)
    assert "attempts/collectives/all_gather/: has attempt_1.py, attempt_2.py but k=3" in message
    assert "add attempt_3.py or drop the folder" in message
    assert "attempts/collectives/all_reduce/: has attempt_1.py, attempt_2.py but k=3" in message
    assert message.startswith("the archive has 2 problems:")


@pytest.mark.parametrize(
    "path",
    [
        "attempts/all_reduce/attempt_1.py",
        "attempts/collectives/all_reduce/attempt_0.py",
        "attempts/collectives/all_reduce/attempt_01.py",
        "attempts/collectives/all_reduce/solution.py",
        "attempts/collectives/all_reduce/v1/attempt_1.py",
    ],
)
def test_misplaced_attempt_files_are_named(path):
    data = build_archive(MANIFEST, ATTEMPTS, extra_files={path: GOOD})
    assert f"{path}: not where an attempt goes; name attempts attempts/<category>/<name>/attempt_<i>.py" in refused(
        data
    )


def test_an_attempt_with_no_attempts_at_all_is_refused():
    assert "the archive holds no attempts" in refused(build_archive(MANIFEST, {}))


@pytest.mark.parametrize(
    "source, message",
    [
        (
            b"def solution(x):\n    return x\n# caf\xe9\n",
            "not UTF-8 text (byte 0xe9 at line 3); save the file as UTF-8",
        ),
        (b"import torch\n\ndef solution(x)\n    return x\n", "not valid Python at line 3"),
        (b"def solution(x):\n    return x\x00\n", "not Python source (a NUL byte at line 2)"),
        (b"import torch\n\nasync def solution(x):\n    return x\n", "line 3: `solution` is async"),
    ],
)
def test_bad_attempt_files_are_named_with_the_line(source, message):
    data = build_archive(MANIFEST, {**ATTEMPTS, ("collectives/all_gather", 2): source})
    assert f"attempts/collectives/all_gather/attempt_2.py: {message}" in refused(data)


@pytest.mark.parametrize(
    "source",
    [b"import torch\n\ndef solve(x):\n    return x\n", b"class A:\n    def solution(self, x):\n        return x\n"],
)
def test_an_attempt_without_a_top_level_solution_is_named(source):
    """The contract's one check (evaluator.contract.source), as for a single upload, naming the attempt's file."""
    data = build_archive(MANIFEST, {**ATTEMPTS, ("collectives/all_gather", 2): source})
    assert "attempts/collectives/all_gather/attempt_2.py defines no top-level `solution`" in refused(data)


def test_an_oversized_attempt_is_named_and_not_read():
    big = GOOD + "x = 1\n" * 50_000
    data = build_archive(MANIFEST, {**ATTEMPTS, ("collectives/all_gather", 2): big})
    assert (
        "attempts/collectives/all_gather/attempt_2.py: 293 KiB is over the 256 KiB limit for an attempt file"
        in refused(data)
    )


def test_a_bom_at_the_start_of_an_attempt_is_fine():
    run = read(build_archive(MANIFEST, {**ATTEMPTS, ("collectives/all_gather", 2): "\ufeff" + GOOD}))
    assert run.attempts[1].source == GOOD


def test_stray_files_are_listed():
    extra = {"README.md": "hi", "attempts_backup.tar": b"\0", "__MACOSX/._manifest.jsonx": b"\0"}
    message = refused(build_archive(MANIFEST, ATTEMPTS, extra_files=extra))
    assert (
        "files outside manifest, attempts/ and trajectories/: README.md, attempts_backup.tar, "
        "__MACOSX/._manifest.jsonx; remove them" in message
    )


# --- trajectories --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, text, message",
    [
        (("collectives/all_reduce", 1, "json"), "{oops", "not valid JSON at line 1"),
        (("collectives/all_reduce", 1, "jsonl"), '{"a": 1}\nnot json\n', "line 2 is not a JSON value"),
        (("collectives/all_reduce", 3, "md"), "# x", "attempt 3 is outside 1..k (k=2"),
        (("tensor-parallel/tp_mlp", 1, "md"), "# x", "a trajectory for a problem with no attempts"),
        (("collectives/all_reduce", 1, "txt"), b"\xff\xfe", "not UTF-8 text"),
    ],
)
def test_bad_trajectories_are_named(key, text, message):
    data = build_archive(MANIFEST, ATTEMPTS, {key: text})
    path = f"trajectories/{key[0]}/attempt_{key[1]}.{key[2]}"
    assert f"{path}: {message}" in refused(data)


def test_one_trajectory_per_attempt():
    data = build_archive(
        MANIFEST, ATTEMPTS, {("collectives/all_reduce", 1, "md"): "a", ("collectives/all_reduce", 1, "txt"): "b"}
    )
    assert (
        "attempt_1.txt: attempt 1 of collectives/all_reduce already has "
        "trajectories/collectives/all_reduce/attempt_1.md" in refused(data)
    )


def test_misnamed_trajectories_are_named():
    data = build_archive(MANIFEST, ATTEMPTS, extra_files={"trajectories/collectives/all_reduce/log.html": "x"})
    assert "trajectories/collectives/all_reduce/log.html: not where a trajectory goes" in refused(data)


def test_an_oversized_trajectory_is_named():
    data = build_archive(MANIFEST, ATTEMPTS, {("collectives/all_reduce", 1, "txt"): "y" * 3000})
    assert "attempt_1.txt: 2.9 KiB is over the 2 KiB limit for a trajectory file" in refused(
        data, max_trajectory_bytes=2048
    )


# --- several problems at once --------------------------------------------------------------------------------------


def test_content_problems_are_reported_together():
    data = build_archive(
        {**MANIFEST, "hardware": "tpu", "date": "yesterday"},
        {**ATTEMPTS, ("collectives/all_gather", 2): "def solve(): pass\n"},
        extra_files={"notes.txt": "x"},
    )
    with pytest.raises(ArchiveError) as info:
        read(data)
    problems = info.value.problems
    assert len(problems) == 4
    assert any("'hardware' is 'tpu'" in p for p in problems)
    assert any("'date' is 'yesterday'" in p for p in problems)
    assert any("attempt_2.py defines no top-level `solution`" in p for p in problems)
    assert any("notes.txt" in p for p in problems)
    assert str(info.value).startswith("the archive has 4 problems:\n- ")


def test_known_problems_may_be_objects_with_an_id():
    class Row:
        def __init__(self, id, world_sizes):
            self.id, self.suite, self.world_sizes, self.is_active = id, "arena", world_sizes, True

    rows = [
        Row("collectives/all_reduce", [2, 4, 8]),
        Row("collectives/all_gather", [2, 4, 8]),
        Row("tensor-parallel/tp_mlp", [2, 4]),
        Row("collectives/broadcast", [4, 8]),
    ]
    run = read(build_archive({**MANIFEST, "hardware": "h200-nvlink-8"}, ATTEMPTS), known=rows)
    # tp_mlp cannot run on 8 ranks, so it is not counted as a problem the run left out
    assert run.not_attempted == ("collectives/broadcast",)
