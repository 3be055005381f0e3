"""The arrays and frames come from ``rtrec export --format numpy``: they
agree with the JSON rows value for value, place every loss (at the start,
in the middle, at the end) as ``on_gap`` asks, and refuse what rtrec
refuses."""

import base64
import json
import struct

import numpy as np
import pytest

import rtrec
from conftest import export_rows, run, sample


def recorded(tmp_path, too_large, n=20):
    """``n`` records of ``sample(i)`` as lines; those in ``too_large`` are
    40 B (over ``--max-line 16B``), so rtrec stores a loss for each."""
    d = tmp_path / "rec"
    d.mkdir()
    recs = [b"A" * 40 if i in too_large else sample(i) for i in range(n)]
    run("record", "--stdin", "--lines", "--max-line", "16B", "--dir", d, "--quiet",
        stdin=b"\n".join(recs) + b"\n")
    return d


def agrees_with_json_rows(a, path, layout):
    """Every record of ``a`` is the JSON export's row, field for field."""
    rows = [r for r in export_rows(path, "--layout", layout) if r["kind"] == "record"]
    kept = a[~a["lost"]]
    assert len(kept) == len(rows)
    for r, row in zip(kept, rows):
        assert int(r["seq"]) == row["seq"] and int(r["mono_ns"]) == row["mono_ns"]
        assert int(r["wall_ns"]) == rtrec._recording._wall_ns(row["wall_time"])
        assert bool(r["exact"]) == row["exact"] and int(r["len"]) == row["len"]


@pytest.mark.parametrize("where", [[0], [7], [19], [0, 1, 10, 18, 19]])
def test_losses_at_the_start_middle_and_end_are_rows_or_skipped_or_refused(tmp_path, where):
    d = recorded(tmp_path, set(where))
    rec = rtrec.open(d)
    a = rec.to_numpy("a:u16,b:i16,x:f32")
    assert a["seq"].tolist() == list(range(20))
    assert np.flatnonzero(a["lost"]).tolist() == where
    assert [(g.first_seq, g.reason) for g in a.gaps] == [
        (r["seq"], r["reason"]) for r in export_rows(d) if r["kind"] == "gap"
    ]
    assert sum(g.count for g in a.gaps) == len(where)
    agrees_with_json_rows(a, d, "a:u16,b:i16,x:f32")
    for r in a[~a["lost"]]:
        want = struct.unpack("<Hhf", sample(int(r["seq"])))
        assert (r["a"], r["b"], r["x"]) == (want[0], want[1], np.float32(want[2]))
    lost = a[a["lost"]]
    assert np.isnan(lost["x"]).all() and (lost["a"] == 0).all() and (lost["len"] == 0).all()
    assert not lost["exact"].any()
    # Times stay in order: a lost row's are between its neighbours'.
    assert (np.diff(a["mono_ns"]) >= 0).all() and (np.diff(a["wall_ns"]) >= 0).all()

    s = rec.to_numpy("a:u16,b:i16,x:f32", on_gap="skip")
    assert s["seq"].tolist() == [i for i in range(20) if i not in where]
    assert not s["lost"].any() and s.gaps == a.gaps
    assert (s[["seq", "wall_ns", "mono_ns", "a", "b", "x"]] == a[~a["lost"]][["seq", "wall_ns", "mono_ns", "a", "b", "x"]]).all()
    assert [i.seq for i in rec.records(on_gap="skip")] == s["seq"].tolist()

    with pytest.raises(rtrec.GapError, match="records are missing"):
        rec.to_numpy("a:u16,b:i16,x:f32", on_gap="raise")
    with pytest.raises(ValueError, match='on_gap is one of "rows", "skip", "raise"'):
        rec.to_numpy(on_gap="yield")


def test_nullable_pandas_columns_keep_integers_and_tell_a_loss_from_a_nan(tmp_path):
    pd = pytest.importorskip("pandas")
    d = recorded(tmp_path, {0, 7})
    df = rtrec.open(d).to_pandas("a:u16,b:i16,x:f32", nullable=True)
    assert [str(df[c].dtype) for c in ("a", "b", "x")] == ["UInt16", "Int16", "Float32"]
    assert df["a"].isna().tolist() == df["lost"].tolist() and df["x"].isna().sum() == 2
    assert df.loc[3, "a"] == 1003 and df.loc[3, "b"] == -9
    plain = rtrec.open(d).to_pandas("a:u16,b:i16,x:f32")
    assert str(plain["a"].dtype) == "uint16" and plain.loc[0, "a"] == 0 and np.isnan(plain.loc[0, "x"])
    assert str(plain["wall_time"].dtype) == "datetime64[ns, UTC]"
    assert list(plain.columns[:3]) == ["seq", "wall_time", "wall_ns"]
    assert (plain["wall_time"] == pd.to_datetime(plain["wall_ns"], unit="ns", utc=True)).all()
    assert plain.attrs["gaps"] == [rtrec.Gap(0, 1, "too_large"), rtrec.Gap(7, 1, "too_large")]


def test_polars_has_the_same_rows_with_nulls_for_lost_values(tmp_path):
    pl = pytest.importorskip("polars")
    d = recorded(tmp_path, {7})
    df, gaps = rtrec.open(d).to_polars("a:u16,b:i16,x:f32")
    a = rtrec.open(d).to_numpy("a:u16,b:i16,x:f32")
    assert df.schema["a"] == pl.UInt16 and df.schema["x"] == pl.Float32
    assert df.schema["wall_time"] == pl.Datetime("ns", "UTC")
    assert df["seq"].to_list() == a["seq"].tolist() and gaps == a.gaps
    assert df["a"].null_count() == 1 and df["a"][7] is None and df["a"][8] == 1008
    assert df["x"].drop_nulls().to_list() == a["x"][~a["lost"]].tolist()


def test_big_endian_layouts_and_pads_decode_as_rtrec_decodes_them(tmp_path):
    d = tmp_path / "be"
    d.mkdir()
    recs = b"".join(struct.pack(">Hxxd", 65535 - i, -1.5 * i) for i in range(50))
    run("record", "--stdin", "--size", "12B", "--dir", d, "--quiet", stdin=recs)
    a = rtrec.open(d).to_numpy(">H2xd")
    assert a.dtype["f0"] == np.dtype("u2") and a.dtype["f1"] == np.dtype("f8")
    assert a["f0"].tolist() == [65535 - i for i in range(50)]
    assert a["f1"].tolist() == [-1.5 * i for i in range(50)]
    agrees_with_json_rows(a, d, ">H2xd")


@pytest.mark.parametrize("gap", [False, True])
def test_records_of_any_length_come_back_as_their_bytes(tmp_path, gap):
    d = tmp_path / "var"
    d.mkdir()
    lines = [b"x" * (i % 7) + b"%d" % i for i in range(30)]
    if gap:
        lines[12] = b"y" * 40
    run("record", "--stdin", "--lines", "--max-line", "16B", "--dir", d, "--quiet", stdin=b"\n".join(lines) + b"\n")
    a = rtrec.open(d).to_numpy()
    rows = [r for r in export_rows(d) if r["kind"] == "record"]
    assert a["payload"][~a["lost"]].tolist() == [base64.b64decode(r["payload"]) for r in rows]
    assert a["lost"].sum() == int(gap) and (a["payload"][a["lost"]] == b"").all()
    assert a["len"][~a["lost"]].tolist() == [len(lines[i]) for i in a["seq"][~a["lost"]]]


def test_a_damaged_copy_is_not_read_into_an_array(synthetic, tmp_path):
    (src,) = synthetic.glob("*.rtr")
    data = bytearray(src.read_bytes())
    data[len(data) // 2] ^= 0x01
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / src.name).write_bytes(bytes(data))
    for call in (lambda r: r.to_numpy(), lambda r: r.to_numpy("n:u64,_:pad56"), lambda r: r.to_pandas()):
        with pytest.raises(rtrec.RtrecError, match="corrupt"):
            call(rtrec.open(bad))


def test_the_stream_is_a_header_line_and_rows_numpy_reads_in_one_call(synthetic):
    out = run("export", synthetic, "--format", "numpy", "--layout", "n:u64,_:pad56", "-o", "-")
    head, _, body = out.partition(b"\n")
    h = json.loads(head)
    assert (h["format"], h["version"], h["record_bytes"], h["records"]) == ("rtrec-numpy", 1, 64, 200)
    rows = np.frombuffer(body, dtype=rtrec._rows.row_dtype(h, 64))
    assert rows["seq"].tolist() == rows["n"].tolist() == list(range(200))
    exact = [r["exact"] for r in export_rows(synthetic)]
    assert ((rows["flags"] & h["flags"]["exact"]) != 0).tolist() == exact
