"""The blob pack: every small blob stored is also appended to `texts.pack`, which a reading
block (a scan of every private text) reads in one go. It is only a way to read: a record
counts only when its bytes hash to its name, and whatever it lacks or holds wrongly is read
from the blob's own file, exactly as outside the block."""

from __future__ import annotations

import errno
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.model.errors import StorageError
from loopx.store import fsio
from loopx.store.blobs import PACK, PACK_BLOB_BYTES, BlobStore, pack_index, pack_record
from loopx.store.filestore import FileStore


def _store(tmp_path: Path) -> BlobStore:
    fsio.confine(tmp_path / "project")
    return BlobStore(tmp_path / "project" / ".loopx" / "private" / "blobs")


def _file_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The blob files a reading block opens (by name, through its shard's descriptor)."""
    names: list[str] = []
    real = fsio.read_regular_at

    def counting(dir_fd: int, name: str, cap: int) -> bytes | None:
        names.append(name)
        return real(dir_fd, name, cap)

    monkeypatch.setattr(fsio, "read_regular_at", counting)
    return names


def _hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _packed(data: bytes) -> dict[str, bytes]:
    """What `pack_index` finds in a pack: the bytes of each record."""
    return pack_index(data)


def _read(store: BlobStore, refs: list[str], how: str) -> list[bytes | None]:
    """Every blob of `refs`, in a reading block one by one, or together (`get_many`)."""
    if how == "together":
        return list(store.get_many(refs).values())
    with store.reading():
        return [store.get(r) for r in refs]


READS = pytest.mark.parametrize("how", ["one by one", "together"])


@READS
def test_a_reading_block_reads_every_small_blob_from_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    store = _store(tmp_path)
    small = [f"private note number {i}".encode() for i in range(40)]
    large = b"x" * (PACK_BLOB_BYTES + 1)
    refs = [store.put(d) for d in [*small, large]]
    assert store.put(small[0]) == refs[0]  # stored again: not appended again
    assert _packed((store.base / PACK).read_bytes()) == {_hex(d): d for d in small}
    outside = {ref: store.get(ref) for ref in refs}
    reads = _file_reads(monkeypatch)
    inside = dict(zip(refs, _read(store, refs, how), strict=True))
    assert inside == outside and outside[refs[-1]] == large
    assert reads == [_hex(large)[2:]]  # only the blob too large for the pack


@READS
def test_what_the_pack_holds_wrongly_or_lacks_is_read_from_the_blobs_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A record edited, torn by a crash (with records appended after it), or one claiming a
    blob it does not hold (a later intact record of that blob counts): each blob without an
    intact record is read from its file, and appended to the pack when the block ends, so
    the next block reads no file."""
    store = _store(tmp_path)
    datas = [f"private text {i} of the pack".encode() for i in range(6)]
    refs = [store.put(d) for d in datas]
    pack = store.base / PACK
    records = [pack_record(_hex(d), d) for d in datas]
    edited = records[1].replace(b"text 1", b"TEXT 1")
    torn = records[2][:-5]
    foreign = pack_record(_hex(datas[3]), b"not what its name says")
    pack.write_bytes(b"".join([records[0], edited, torn, foreign, records[3], *records[4:]]))
    reads = _file_reads(monkeypatch)
    assert _read(store, refs, how) == datas
    assert sorted(reads) == sorted(_hex(d)[2:] for d in datas[1:3])
    reads.clear()
    assert _read(store, refs, how) == datas
    assert reads == []


@READS
def test_a_store_from_before_the_pack_gets_one_from_its_first_reading_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    store = _store(tmp_path)
    datas = [f"an older private note {i}".encode() for i in range(5)]
    refs = [store.put(d) for d in datas]
    (store.base / PACK).unlink()
    reads = _file_reads(monkeypatch)
    assert _read(store, refs, how) == datas
    assert len(reads) == 5
    assert _packed((store.base / PACK).read_bytes()).keys() == {_hex(d) for d in datas}
    reads.clear()
    assert _read(store, refs, how) == datas
    assert reads == []


def test_the_pack_is_a_copy_of_the_blob(tmp_path: Path) -> None:
    """A blob whose file is gone or damaged is read from its pack record (whose bytes hash
    to its name), in a reading block and outside one alike; storing it again writes its
    file again."""
    store = _store(tmp_path)
    ref = store.put(b"kept in the pack too")
    store.path(ref).unlink()
    assert BlobStore(store.base).get(ref) == b"kept in the pack too"
    with store.reading():
        assert store.get(ref) == b"kept in the pack too"
    store.path(ref).write_bytes(b"damaged")
    assert BlobStore(store.base).get(ref) == b"kept in the pack too"
    assert store.put(b"kept in the pack too") == ref
    assert store.path(ref).read_bytes() == b"kept in the pack too"


def test_a_record_larger_than_a_packed_blob_may_be_is_not_taken(tmp_path: Path) -> None:
    big = b"y" * (PACK_BLOB_BYTES + 1)
    small = b"a small blob"
    data = pack_record(_hex(big), big) + pack_record(_hex(small), small)
    assert _packed(data) == {_hex(small): small}


@pytest.mark.parametrize("how", ["link", "hard link", "fifo", "folder", "too large"])
def test_a_pack_that_is_not_a_plain_file_of_ours_is_neither_read_nor_written(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    ref = store.put(b"a blob in its own file")
    pack = store.base / PACK
    pack.unlink()
    outside = tmp_path / "outside.pack"
    planted = pack_record(_hex(b"a blob in its own file"), b"a blob in its own file")
    outside.write_bytes(planted)
    if how == "link":
        pack.symlink_to(outside)
    elif how == "hard link":
        os.link(outside, pack)
    elif how == "fifo":
        os.mkfifo(pack)
    elif how == "folder":
        pack.mkdir()
    else:
        pack.write_bytes(planted)
        monkeypatch.setattr("loopx.store.blobs.PACK_BYTES", len(planted) - 1)
    reads = _file_reads(monkeypatch)
    with store.reading():  # a FIFO never waits
        assert store.get(ref) == b"a blob in its own file"
    # From its file; a hard-linked pack is read (what it holds is hashed as ever), never
    # written.
    assert reads == ([] if how == "hard link" else [_hex(b"a blob in its own file")[2:]])
    store.put(b"another blob, stored with the pack refused")
    assert outside.read_bytes() == planted  # never written through a link
    if how == "folder":
        assert pack.is_dir() and not any(pack.iterdir())


def test_a_pack_that_cannot_be_written_never_fails_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    real = fsio.FileSystem.write_all

    def full(self: Any, fd: int, data: bytes) -> None:
        if data.startswith(b"\nloopx-blob "):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, fd, data)

    monkeypatch.setattr(fsio.FileSystem, "write_all", full)
    ref = store.put(b"stored although the pack is full")
    assert store.get(ref) == b"stored although the pack is full"


def test_a_blob_read_that_fails_is_an_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileStore(tmp_path)

    def failing(ref: str) -> bytes | None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(store.blobs, "get", failing)
    with pytest.raises(StorageError) as raised:
        store.get_blob("sha256:" + "0" * 64)
    assert raised.value.code == "io_error" and "read a private blob" in str(raised.value)


_BLOBS = st.lists(st.binary(max_size=200), min_size=1, max_size=12, unique=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BLOBS, st.data())
def test_the_index_of_a_pack_takes_only_records_whole(blobs: list[bytes], data: Any) -> None:
    """An untouched pack gives every blob. Whatever is cut out of one or put between its
    records, each record left whole and followed by the next record's mark (or the end) is
    found, and whatever is found for a blob's name is that blob or fails its hash."""
    mark = b"\nloopx-blob "
    records = [pack_record(_hex(b), b) for b in blobs]
    assert _packed(b"".join(records)) == {_hex(b): b for b in blobs if mark not in b}
    pack, whole = b"", []
    for record, blob in zip(records, blobs, strict=True):
        how = data.draw(st.sampled_from(["whole", "torn", "garbage before"]))
        if how == "torn":
            pack += record[: data.draw(st.integers(0, len(record) - 1))]
            continue
        if how == "garbage before":
            pack += data.draw(st.binary(max_size=30))
        whole.append((len(pack) + len(record), blob))
        pack += record
    found = _packed(pack)
    for h, got in found.items():
        assert got == next((b for b in blobs if _hex(b) == h), got) or _hex(got) != h
    for end, blob in whole:
        if mark not in blob and (end == len(pack) or pack.startswith(mark, end)):
            assert found.get(_hex(blob)) == blob


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40),
            st.just(b"\nloopx-blob "),
            st.builds(lambda b: pack_record(_hex(b), b), st.binary(max_size=40)),
            st.from_regex(rb"\nloopx-blob [0-9a-f]{64} [0-9]{1,7}\n", fullmatch=True),
            # headers nearly right: a digest too short, too long or in capitals, a size
            # with a sign, a space or an eighth digit
            st.from_regex(rb"\nloopx-blob [0-9a-fA-F]{63,65}[ ][ +0-9]{1,8}\n", fullmatch=True),
        ),
        max_size=12,
    )
)
def test_any_bytes_as_a_pack_give_what_a_walk_mark_by_mark_gives(pieces: list[bytes]) -> None:
    """`pack_index` cuts the pack at every mark in one pass; it takes the very records the
    walk from mark to mark it replaced took (kept here as the reference), none larger than
    a packed blob, and raises nothing."""
    data = b"".join(pieces)
    found = pack_index(data)
    assert found == _walked(data)
    for h, record in found.items():
        assert len(h) == 64 and record in data and len(record) <= PACK_BLOB_BYTES


def _walked(data: bytes) -> dict[str, bytes]:
    """The records of a pack as `pack_index` found them before it split the pack: from each
    mark to the next, the header matched by a regex, the size compared with the record."""
    header = re.compile(rb"([0-9a-f]{64}) ([0-9]{1,6})\n")
    mark = b"\nloopx-blob "
    index: dict[str, bytes] = {}
    at = data.find(mark)
    while at >= 0:
        following = data.find(mark, at + len(mark))
        stop = len(data) if following < 0 else following
        head = header.match(data, at + len(mark), stop)
        if head is not None:
            size = int(head.group(2))
            if size <= PACK_BLOB_BYTES and head.end() + size == stop:
                index[head.group(1).decode("ascii")] = data[head.end() : stop]
        at = following
    return index


@pytest.mark.parametrize(
    "header",
    [
        b"%s +5\n",  # a sign: int() reads it, the header is still not a size
        b"%s  5\n",
        b"%s 5 \n",
        b"%s 05x\n",
        b"%s 0000005\n",  # seven digits
    ],
)
def test_a_record_whose_size_is_not_one_to_six_digits_is_not_taken(header: bytes) -> None:
    blob = b"hello"
    h = _hex(blob).encode()
    pack = b"\nloopx-blob " + header % h + blob
    assert pack_index(pack) == _walked(pack) == {}
    assert pack_index(pack_record(_hex(blob), blob)) == {_hex(blob): blob}


def test_a_record_named_by_capitals_is_not_taken_and_spares_the_others() -> None:
    good, bad = b"kept", b"named in capitals"
    pack = pack_record(_hex(good), good) + pack_record(_hex(bad).upper(), bad)
    assert pack_index(pack) == _walked(pack) == {_hex(good): good}


@pytest.mark.parametrize(
    "asked",
    [
        ["{h63}", "{h}0"],  # as long as two digests together, neither one (in a shard there)
        ["{H}"],
        ["sha256:" + "0" * 63 + "g"],
        ["0" * 62 + "é"],
    ],
)
def test_references_read_together_are_each_checked(tmp_path: Path, asked: list[str]) -> None:
    from loopx.model.errors import InvalidInput

    store = _store(tmp_path)
    h = store.put(b"kept")[7:]
    with pytest.raises(InvalidInput) as caught:
        store.get_many([a.format(h=h, h63=h[:63], H=h.upper()) for a in asked])
    assert caught.value.code == "invalid_ref"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], True),
        (["ab" * 32, "0" * 64], True),
        (["ab" * 32, "AB" * 32], False),  # capitals
        (["a" * 63, "a" * 65], False),  # as long as two together, neither one
        (["0" * 62 + "é" + "0"], False),
        (["0" * 62 + " 0"], False),
        (["g" * 64], False),
        ([b"0" * 64], False),  # a digest is text
        ([None], False),
        ([type("Text", (str,), {})("ab" * 32)], True),  # text of a kind of its own
    ],
)
def test_hex_digests_are_64_lowercase_hex_digits_each(values: list[Any], expected: bool) -> None:
    from loopx.model.ids import hex_digests

    assert hex_digests(values) is expected
