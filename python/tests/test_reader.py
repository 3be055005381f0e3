"""The Python reader agrees with ``rtrec export`` record for record, shows
every loss as a row and a gap, decodes layouts into their dtypes, and
refuses a damaged recording with rtrec's own words."""

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rtrec
from conftest import export_rows, run, sample


def test_the_package_under_test_is_the_pip_installed_one():
    target = os.environ.get("RTREC_PY_TARGET")
    if not target:
        pytest.skip("RTREC_PY_TARGET is not set: run through tests/python_reader.rs to test the installed package")
    assert Path(rtrec.__file__).resolve().is_relative_to(Path(target).resolve()), rtrec.__file__


def test_records_are_exports_rows_with_their_sequence_numbers_times_and_bytes(synthetic):
    rec = rtrec.open(synthetic)
    items = list(rec.records())
    rows = export_rows(synthetic, "--payload", "base64")
    assert len(items) == len(rows) == 200
    for it, row in zip(items, rows):
        assert isinstance(it, rtrec.Record)
        assert (it.seq, it.mono_ns, it.exact) == (row["seq"], row["mono_ns"], row["exact"])
        assert rtrec._recording._wall_ns(row["wall_time"]) == it.wall_ns
        # The synthetic source's record begins with its sequence number.
        assert len(it.payload) == 64 and int.from_bytes(it.payload[:8], "little") == it.seq
    assert [it.seq for it in items] == list(range(200))
    assert rec.info["records"] == 200 and rec.info["lost"] == 0
    assert rec.verify().clean


def test_wall_time_text_is_read_to_the_nanosecond():
    assert rtrec._recording._wall_ns("1970-01-01T00:00:01.000000002Z") == 1_000_000_002
    assert rtrec._recording._wall_ns("2001-09-09T01:46:40.000000123Z") == 1_000_000_000_000_000_123


def test_a_layout_decodes_into_its_dtype(synthetic):
    a = rtrec.open(synthetic).to_numpy("n:u64,_:pad56")
    assert a.dtype["n"] == np.uint64 and a.dtype["seq"] == np.uint64
    assert a.dtype["wall_ns"] == np.int64 and a.dtype["mono_ns"] == np.int64
    assert (a["n"] == a["seq"]).all() and len(a) == 200 and not a["lost"].any()
    b = rtrec.open(synthetic).to_numpy("<Q56x")
    assert b.dtype.names[-1] == "f0" and (b["f0"] == a["n"]).all()
    assert (b["wall_ns"] == a["wall_ns"]).all()
    rows = export_rows(synthetic)
    assert [r["mono_ns"] for r in rows] == a["mono_ns"].tolist()


def test_a_stored_layout_is_the_default_and_an_explicit_one_overrides_it(tmp_path):
    d = tmp_path / "stored"
    d.mkdir()
    recs = b"".join(struct.pack("<Iff", i, i * 0.5, -i * 0.25) for i in range(50))
    run("record", "--stdin", "--size", "12B", "--layout", "t:u32,x:f32,y:f32", "--dir", d, "--quiet", stdin=recs)
    rec = rtrec.open(d)
    assert rec.layout == "t:u32,x:f32,y:f32"
    a = rec.to_numpy()
    b = rec.to_numpy("t:u32,x:f32,y:f32")
    assert a.dtype == b.dtype and (a == b).all() and len(a) == 50
    assert a["t"].tolist() == list(range(50)) and a["y"][3] == np.float32(-0.75)
    c = rec.to_numpy("<Iff")
    assert c.dtype.names[-3:] == ("f0", "f1", "f2") and (c["f1"] == a["x"]).all()
    raw = rec.to_numpy("none")
    assert raw["payload"][1] == recs[12:24]
    assert [r.payload for r in rec.records()][:2] == [recs[:12], recs[12:24]]


def test_a_recording_without_a_layout_has_none(synthetic):
    rec = rtrec.open(synthetic)
    assert rec.layout is None and "payload" in rec.to_numpy().dtype.names


def test_a_loss_is_a_row_and_a_gap_never_a_shorter_array(lossy):
    rec = rtrec.open(lossy)
    info = rec.info
    assert (info["records"], info["lost"]) == (19, 1)
    a = rec.to_numpy("a:u16,b:i16,x:f32")
    assert [a.dtype[n] for n in ("a", "b", "x")] == [np.uint16, np.int16, np.float32]
    assert len(a) == info["records"] + info["lost"]
    assert a["lost"].sum() == info["lost"]
    assert a["seq"].tolist() == list(range(20))
    assert a.gaps == [rtrec.Gap(7, 1, "too_large")]
    row = a[a["lost"]][0]
    assert (row["seq"], row["a"], row["b"], row["len"], row["exact"]) == (7, 0, 0, 0, False)
    assert np.isnan(row["x"])
    # Times of a lost row: between its neighbours.
    assert a["mono_ns"][6] <= row["mono_ns"] <= a["mono_ns"][8]
    assert (np.diff(a["wall_ns"]) >= 0).all()
    kept = a[~a["lost"]]
    for r in kept:
        want = np.frombuffer(sample(int(r["seq"])), dtype=[("a", "<u2"), ("b", "<i2"), ("x", "<f4")])[0]
        assert (r["a"], r["b"], r["x"]) == (want["a"], want["b"], want["x"])
    # The gap items of records() are export's gap rows.
    gaps = [g for g in rec.records() if isinstance(g, rtrec.Gap)]
    assert [(g.first_seq, g.count, g.reason) for g in gaps] == [
        (r["seq"], r["count"], r["reason"]) for r in export_rows(lossy) if r["kind"] == "gap"
    ]
    with pytest.raises(rtrec.GapError, match="1 records are missing"):
        rec.to_numpy("a:u16,b:i16,x:f32", on_gap="raise")
    with pytest.raises(rtrec.GapError):
        list(rec.records(on_gap="raise"))


def test_a_missing_file_is_a_gap_of_its_records(tmp_path):
    d = tmp_path / "files"
    d.mkdir()
    run("record", "--count", 300, "--period", "100us", "--size", "1KiB", "--file-size", "64KiB", "--dir", d, "--quiet")
    files = sorted(d.glob("*.rtr"))
    assert len(files) >= 3
    files[1].unlink()
    rec = rtrec.open(d)
    a = rec.to_numpy()
    info = rec.info
    assert info["missing"] > 0 and a["lost"].sum() == info["lost"]
    assert len(a) == info["records"] + info["lost"] and a["seq"].tolist() == list(range(len(a)))
    assert [g.reason for g in a.gaps] == ["missing"]
    assert all(p == b"" for p in a["payload"][a["lost"]])
    with pytest.raises(rtrec.VerifyError):
        rec.verify()


def test_pandas_has_wall_time_and_the_gaps(lossy):
    pd = pytest.importorskip("pandas")
    df = rtrec.open(lossy).to_pandas("<Hhf")
    assert str(df["wall_time"].dtype) == "datetime64[ns, UTC]"
    assert len(df) == 20 and int(df["lost"].sum()) == 1
    rows = [r for r in export_rows(lossy) if r["kind"] == "record"]
    kept = df[~df["lost"]]
    assert list(kept["wall_time"]) == list(pd.to_datetime([r["wall_time"] for r in rows], utc=True))
    assert df.attrs["gaps"] == [rtrec.Gap(7, 1, "too_large")]
    assert df["f2"].isna().sum() == 1


def test_a_damaged_copy_fails_verify_and_is_not_read(synthetic, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (src,) = synthetic.glob("*.rtr")
    data = bytearray(src.read_bytes())
    data[len(data) // 3] ^= 0xFF
    (bad / src.name).write_bytes(bytes(data))
    rec = rtrec.open(bad)
    with pytest.raises(rtrec.VerifyError, match="CORRUPT") as e:
        rec.verify()
    assert e.value.result.clean is False and e.value.result.report["damaged_ranges"] >= 1
    with pytest.raises(rtrec.RtrecError, match="corrupt"):
        list(rec.records())
    with pytest.raises(rtrec.VerifyError):
        rtrec.verify(bad / src.name)


def test_a_directory_of_two_recordings_opens_the_newest_or_the_one_named(synthetic, lossy):
    for f in lossy.glob("*.rtr"):
        shutil.copy(f, synthetic)
    listed = rtrec.ls(synthetic)
    assert len(listed) == 2
    assert rtrec.open(synthetic).id == listed[-1]["id"]
    for r in listed:
        rec = rtrec.open(synthetic, recording=r["id"][:6])
        assert rec.id == r["id"] and rec.info["records"] == r["records"]
        assert sum(1 for i in rec.records() if isinstance(i, rtrec.Record)) == r["records"]
        assert rec.verify().clean
    name = Path(listed[0]["first_file"]).name
    assert rtrec.open(synthetic, recording=name).id == listed[0]["id"]
    with pytest.raises(rtrec.RtrecError, match="no recording has the id or a file named 'zz'"):
        rtrec.open(synthetic, recording="zz")
    one = rtrec.open(synthetic / name)
    assert one.id == listed[0]["id"] and len(one.to_numpy()) == listed[0]["records"] + listed[0]["lost"]


def test_stopping_early_ends_the_export(synthetic):
    it = rtrec.open(synthetic).records()
    first = [next(it) for _ in range(5)]
    it.close()
    assert [r.seq for r in first] == list(range(5))


def test_a_layout_that_does_not_fit_is_rtrecs_sentence(synthetic):
    with pytest.raises(rtrec.RtrecError, match="is 64 bytes, but the layout 't:u32' is 4 bytes"):
        rtrec.open(synthetic).to_numpy("t:u32")
    with pytest.raises(rtrec.RtrecError, match="is not a type"):
        rtrec.open(synthetic).to_numpy("t:u33")


def test_the_binary_is_rtrec_env_then_path_then_the_checkout(tmp_path):
    env = dict(os.environ, RTREC=str(tmp_path / "none"))
    code = "import rtrec\ntry:\n    rtrec.find_rtrec()\nexcept rtrec.RtrecNotFound as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout
    assert "is not an executable file" in out
    built = Path(__file__).resolve().parents[2] / "target" / "release" / "rtrec"
    if not built.exists():
        pytest.skip(f"{built} is not built")
    env = {k: v for k, v in os.environ.items() if k != "RTREC"}
    env["PATH"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", "import rtrec; print(rtrec.find_rtrec())"],
                         env=env, capture_output=True, text=True)
    assert Path(out.stdout.strip()) == built, out.stderr


@pytest.fixture
def split(tmp_path):
    """300,000 records of 12 B in files of 1 MiB: a recording of four
    files."""
    d = tmp_path / "split"
    d.mkdir()
    lines = b"".join(b"%011d\n" % i for i in range(30000))
    run("record", "--stdin", "--size", "12B", "--file-size", "1MiB", "--dir", d, "--quiet", stdin=lines * 10)
    return d


@pytest.mark.parametrize("which", ["first", "middle", "last"])
def test_a_missing_file_is_lost_rows_and_a_gap_never_an_absence(split, which):
    files = sorted(split.glob("*.rtr"))
    assert len(files) >= 3, files
    gone = {"first": files[0], "middle": files[1], "last": files[-1]}[which]
    gone.unlink()
    rec = rtrec.open(split)
    info = rec.info
    a = rec.to_numpy()
    missing = [g for g in a.gaps if g.reason == "missing"]
    assert len(missing) == 1, a.gaps
    if which == "last":
        # No file tells how many records the last one held.
        assert info["state"] == "unfinished" and missing[0].count is None
        assert missing[0].first_seq == info["lost_after"] == info["records"]
        assert len(a) == info["records"]
    else:
        assert info["state"] == "incomplete" and missing[0].count == info["lost"] > 0
        assert len(a) == info["records"] + info["lost"] == 300000
        assert int(a["lost"].sum()) == info["lost"]
        assert a["seq"].tolist() == list(range(300000))
    with pytest.raises(rtrec.GapError):
        rec.to_numpy(on_gap="raise")
    with pytest.raises(rtrec.GapError):
        list(rec.records(on_gap="raise"))


def test_arrow_is_the_exports_table_with_every_type_its_own(lossy):
    pa = pytest.importorskip("pyarrow")
    rec = rtrec.open(lossy)
    t = rec.to_arrow("a:u16,b:i16,x:f32")
    assert [t.schema.field(n).type for n in ("seq", "a", "b", "x")] == [
        pa.uint64(), pa.uint16(), pa.int16(), pa.float32()]
    assert str(t.schema.field("wall_time").type) == "timestamp[ns, tz=UTC]"
    rows = export_rows(lossy, "--layout", "a:u16,b:i16,x:f32")
    assert t.num_rows == len(rows) == 20
    got = t.to_pylist()
    for r, want in zip(got, rows):
        assert (r["kind"], r["seq"]) == (want["kind"], want["seq"])
        if want["kind"] == "gap":
            assert (r["count"], r["reason"], r["a"], r["x"], r["wall_time"]) == (1, "too_large", None, None, None)
            continue
        a, b, x = struct.unpack("<Hhf", sample(r["seq"]))
        assert (r["a"], r["b"], r["x"], r["len"]) == (a, b, x, 8)
        assert r["mono_ns"] == want["mono_ns"]
    meta = json.loads(t.schema.metadata[b"rtrec.recording"])
    assert (meta["records"], meta["lost"], meta["layout"]) == (19, 1, "a:u16,b:i16,x:f32")
    kept = rec.to_arrow("a:u16,b:i16,x:f32", on_gap="skip")
    assert kept.num_rows == 19 and set(kept["kind"].to_pylist()) == {"record"}
    with pytest.raises(rtrec.GapError):
        rec.to_arrow("a:u16,b:i16,x:f32", on_gap="raise")
    with pytest.raises(ValueError, match="on_gap"):
        rec.to_arrow(on_gap="yield")
