"""Reads one recording's exports back the way docs/export.md tells people
to, for tests/export_exact.rs: CSV with pandas (the documented dtype
recipe), polars and DuckDB; JSON lines with Python's json and the
documented non-finite spellings; MCAP with MCAP's Python reader (each
message checked against its channel's own JSON Schema); Parquet with
pyarrow, polars and DuckDB, and Arrow IPC (file and stream) with pyarrow
and polars (each column's type checked); and the rtrec package's
to_numpy, to_pandas, to_polars and to_arrow.

Usage: export_exact_read.py CASES.json, a list of cases. A case names the export files, the
layout (spec and columns with their NumPy types) and the recording.
Prints a JSON list, an object per case: for each reader, its records as
``[seq, [value, ...]]`` and its gaps as ``[first_seq, count]``, every value
in the canonical text the Rust test also makes from the recorded bytes: an
integer in decimal, a float as its bits in hex at its width, NaN as "nan"
(NaN payload and sign bits are not kept, docs/export.md).
"""

import json
import sys

import numpy as np

# docs/export.md, "Every value as recorded": the JSON spellings.
NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
# docs/export.md: the pandas dtype of each layout type (nullable integers,
# so gap rows leave integers integers; floats at their own width, an f16
# as float32, which holds it exactly and which pandas reads text into).
PANDAS = {"u1": "UInt8", "u2": "UInt16", "u4": "UInt32", "u8": "UInt64",
          "i1": "Int8", "i2": "Int16", "i4": "Int32", "i8": "Int64",
          "f2": "float32", "f4": "float32", "f8": "float64", "b1": "boolean"}
FIXED_DTYPES = {"seq": "UInt64", "mono_ns": "UInt64", "len": "UInt32",
                "count": "UInt64", "exact": "boolean"}


def canon(value, code):
    """The canonical text of one value read as NumPy type ``code``: a bool
    must arrive as a bool (``true``/``false``), never as a number or text."""
    if code[0] == "S":
        # Text: NumPy gives bytes (its zero padding dropped), the rest str.
        if isinstance(value, (bytes, np.bytes_)):
            value = bytes(value).decode()
        if not isinstance(value, str):
            raise ValueError(f"{value!r} ({type(value).__name__}) in a text column")
        return value
    if code == "b1":
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{value!r} ({type(value).__name__}) in a bool column")
        return "true" if value else "false"
    if code[0] == "f":
        v = np.array([value], dtype="f8").astype(code)[0]
        if np.isnan(v):
            return "nan"
        width = int(code[1:]) * 8
        bits = np.array([v], dtype=code).view(f"u{code[1:]}")[0]
        return f"{int(bits):0{width // 4}x}"
    return str(int(value))


def json_value(value, code):
    """A JSON field's value as rtrec writes it (a number, or a string for a
    float that is not finite)."""
    if isinstance(value, str) and code[0] != "S":
        if code[0] != "f":
            raise ValueError(f"string {value!r} in a {code} column")
        return NON_FINITE[value]
    return value


def from_json_rows(rows, cols):
    recs, gaps = [], []
    for row in rows:
        if row.get("kind", "record") == "gap":
            gaps.append([row["seq"], row["count"]])
            continue
        recs.append([row["seq"], [canon(json_value(row[n], c), c) for n, c in cols]])
    return recs, gaps


def read_csv_pandas(path, cols):
    import pandas as pd

    dtype = dict(FIXED_DTYPES, **{n: PANDAS.get(c, "string") for n, c in cols})
    text = [n for n, c in cols if c[0] == "S"]
    if text:
        # docs/export.md: with text columns, pandas' own NA words ("NaN",
        # "NA", "null", "", …) are NA in the other columns only.
        with open(path) as f:
            header = f.readline().strip().split(",")
        na = {n: ["", "NaN"] for n in header if n not in text}
        df = pd.read_csv(path, dtype=dtype, parse_dates=["wall_time"],
                         keep_default_na=False, na_values=na)
    else:
        df = pd.read_csv(path, dtype=dtype, parse_dates=["wall_time"])
    recs = df[df.kind == "record"]
    gaps = df[df.kind == "gap"]
    out = [[int(s), [canon(recs[n].iloc[i], c) for n, c in cols]] for i, s in enumerate(recs.seq)]
    return out, [[int(s), None if pd.isna(k) else int(k)] for s, k in zip(gaps.seq, gaps["count"])]


def read_frame(seqs, kinds, counts, columns, cols):
    """Rows of a column-wise table (polars, DuckDB)."""
    recs, gaps = [], []
    for i, kind in enumerate(kinds):
        if kind == "gap":
            gaps.append([seqs[i], counts[i]])
        else:
            recs.append([seqs[i], [canon(columns[n][i], c) for n, c in cols]])
    return recs, gaps


def read_csv_polars(path, cols):
    import polars as pl

    # docs/export.md: text columns named as text (polars guesses "007" an integer).
    df = pl.read_csv(path, infer_schema_length=None,
                     schema_overrides={n: pl.String for n, c in cols if c[0] == "S"})
    for n, c in cols:
        want = {"f": pl.Float64, "b": pl.Boolean}.get(c[0])
        if want is not None and df.schema[n] != want:
            raise ValueError(f"polars read {c} column {n} as {df.schema[n]}")
    columns = {n: df[n].to_list() for n, _ in cols}
    return read_frame(df["seq"].to_list(), df["kind"].to_list(), df["count"].to_list(), columns, cols)


def read_csv_duckdb(path, cols):
    import duckdb

    text = {n: "VARCHAR" for n, c in cols if c[0] == "S"}
    # docs/export.md: text as VARCHAR, and a quoted "" the empty text (not NULL).
    rel = duckdb.sql(f"select * from read_csv('{path}'"
                     + (f", types={text}, allow_quoted_nulls=false)" if text else ")"))
    for (n, c), t in zip(cols, rel.select(*[f'"{n}"' for n, _ in cols]).types):
        want = {"f": "DOUBLE", "b": "BOOLEAN"}.get(c[0])
        if want is not None and str(t) != want:
            raise ValueError(f"DuckDB read {c} column {n} as {t}")
    names = rel.columns
    rows = rel.fetchall()
    get = {n: [r[names.index(n)] for r in rows] for n in names}
    return read_frame(get["seq"], get["kind"], get["count"], get, cols)


def read_mcap(path, cols):
    from mcap.reader import make_reader

    import jsonschema  # the caller reports it missing

    recs, gaps = [], []
    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            doc = json.loads(message.data)
            jsonschema.validate(doc, json.loads(schema.data))
            if channel.topic.endswith("/gaps"):
                gaps.append([doc["first_seq"], doc["count"]])
            else:
                recs.append([doc["seq"], [canon(json_value(doc[n], c), c) for n, c in cols]])
    return recs, gaps


# The Parquet physical-and-logical type each layout type must arrive as
# (pyarrow's names): the width and signedness kept, floats at their width.
ARROW = {"u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
         "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
         "f2": "halffloat", "f4": "float", "f8": "double", "b1": "bool", "S5": "string"}


def read_parquet_pyarrow(path, cols):
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    for n, c in cols:
        if str(t.schema.field(n).type) != ARROW[c]:
            raise ValueError(f"pyarrow read column {n} ({c}) as {t.schema.field(n).type}")
    if str(t.schema.field("wall_time").type) != "timestamp[ns, tz=UTC]":
        raise ValueError(f"wall_time is {t.schema.field('wall_time').type}")
    meta = json.loads(pq.read_metadata(path).metadata[b"rtrec.recording"])
    if meta.get("layout") is None:
        raise ValueError(f"no layout in the file's metadata: {meta}")
    d = t.to_pydict()
    return read_frame(d["seq"], d["kind"], d["count"], d, cols)


def check_arrow_types(t, cols, what):
    """Each layout column's Arrow type, wall_time's, and the layout in the
    schema's metadata (pyarrow's table ``t``)."""
    for n, c in cols:
        if str(t.schema.field(n).type) != ARROW[c]:
            raise ValueError(f"{what} read column {n} ({c}) as {t.schema.field(n).type}")
    if str(t.schema.field("wall_time").type) != "timestamp[ns, tz=UTC]":
        raise ValueError(f"wall_time is {t.schema.field('wall_time').type}")
    meta = json.loads(t.schema.metadata[b"rtrec.recording"])
    if meta.get("layout") is None:
        raise ValueError(f"no layout in the schema's metadata: {meta}")


def read_arrow_pyarrow(path, cols, stream):
    import pyarrow.ipc as ipc

    with open(path, "rb") as f:
        t = (ipc.open_stream(f) if stream else ipc.open_file(f)).read_all()
    check_arrow_types(t, cols, "pyarrow")
    d = t.to_pydict()
    return read_frame(d["seq"], d["kind"], d["count"], d, cols)


def read_arrow_polars(path, cols, stream):
    import polars as pl

    df = pl.read_ipc_stream(path) if stream else pl.read_ipc(path)
    return from_polars(df, cols)


def from_polars(df, cols):
    """The records and gaps of a polars frame of the export's table (each
    layout column's polars type checked)."""
    import polars as pl

    want = {"u1": pl.UInt8, "u2": pl.UInt16, "u4": pl.UInt32, "u8": pl.UInt64,
            "i1": pl.Int8, "i2": pl.Int16, "i4": pl.Int32, "i8": pl.Int64,
            "f2": pl.Float16, "f4": pl.Float32, "f8": pl.Float64, "b1": pl.Boolean, "S5": pl.String}
    for n, c in cols:
        if df.schema[n] != want[c]:
            raise ValueError(f"polars read column {n} ({c}) as {df.schema[n]}")
    columns = {n: df[n].to_list() for n, _ in cols}
    return read_frame(df["seq"].to_list(), df["kind"].to_list(), df["count"].to_list(), columns, cols)


def read_parquet_polars(path, cols):
    import polars as pl

    return from_polars(pl.read_parquet(path), cols)


def read_parquet_duckdb(path, cols):
    import duckdb

    rel = duckdb.sql(f"select * from read_parquet('{path}')")
    want = {"u1": "UTINYINT", "u2": "USMALLINT", "u4": "UINTEGER", "u8": "UBIGINT",
            "i1": "TINYINT", "i2": "SMALLINT", "i4": "INTEGER", "i8": "BIGINT",
            "f2": "FLOAT", "f4": "FLOAT", "f8": "DOUBLE", "b1": "BOOLEAN", "S5": "VARCHAR"}
    for (n, c), t in zip(cols, rel.select(*[f'"{n}"' for n, _ in cols]).types):
        if str(t) != want[c]:
            raise ValueError(f"DuckDB read column {n} ({c}) as {t}")
    names = rel.columns
    rows = rel.fetchall()
    get = {n: [r[names.index(n)] for r in rows] for n in names}
    return read_frame(get["seq"], get["kind"], get["count"], get, cols)


def from_array(seqs, lost, columns, cols):
    """Records of the package's rows (lost rows are the gaps)."""
    recs, gaps = [], []
    for i, s in enumerate(seqs):
        if lost[i]:
            if gaps and gaps[-1][0] + gaps[-1][1] == s:
                gaps[-1][1] += 1
            else:
                gaps.append([int(s), 1])
        else:
            recs.append([int(s), [canon(columns[n][i], c) for n, c in cols]])
    return recs, gaps


def read_case(case):
    """Every reader's records and gaps of one case; a reader that is not
    installed is ``"not installed: NAME"``, one that fails ``{"error": …}``."""
    import rtrec

    cols = [tuple(c) for c in case["columns"]]

    def jsonl():
        with open(case["jsonl"]) as f:
            return from_json_rows((json.loads(line) for line in f), cols)

    def to_numpy():
        a = rtrec.open(case["dir"]).to_numpy(case["layout"])
        return from_array(a["seq"], a["lost"], {n: a[n] for n, _ in cols}, cols)

    def to_pandas():
        df = rtrec.open(case["dir"]).to_pandas(case["layout"])
        columns = {n: df[n].to_numpy() for n, _ in cols}
        return from_array(df["seq"].tolist(), df["lost"].tolist(), columns, cols)

    def to_pandas_nullable():
        df = rtrec.open(case["dir"]).to_pandas(case["layout"], nullable=True)
        na = {"f": np.nan}
        columns = {n: df[n].array.to_numpy(dtype=object if c[0] == "S" else c,
                                           na_value="" if c[0] == "S" else na.get(c[0], 0))
                   for n, c in cols}
        return from_array(df["seq"].tolist(), df["lost"].tolist(), columns, cols)

    def to_polars():
        df, _ = rtrec.open(case["dir"]).to_polars(case["layout"])
        fill = {"b": False, "S": ""}
        columns = {n: df[n].fill_null(fill.get(c[0], 0)).to_numpy() for n, c in cols}
        return from_array(df["seq"].to_list(), df["lost"].to_list(), columns, cols)

    readers = {
        "jsonl": jsonl,
        "csv pandas": lambda: read_csv_pandas(case["csv"], cols),
        "csv polars": lambda: read_csv_polars(case["csv"], cols),
        "csv duckdb": lambda: read_csv_duckdb(case["csv"], cols),
        "mcap": lambda: read_mcap(case["mcap"], cols),
        "parquet pyarrow": lambda: read_parquet_pyarrow(case["parquet"], cols),
        "parquet polars": lambda: read_parquet_polars(case["parquet"], cols),
        "parquet duckdb": lambda: read_parquet_duckdb(case["parquet"], cols),
        "to_numpy": to_numpy,
        "to_pandas": to_pandas,
        "to_pandas nullable": to_pandas_nullable,
        "to_polars": to_polars,
    }
    if "arrow" in case:  # the build has the Arrow IPC export
        def to_arrow():
            t = rtrec.open(case["dir"]).to_arrow(case["layout"])
            check_arrow_types(t, cols, "to_arrow")
            d = t.to_pydict()
            return read_frame(d["seq"], d["kind"], d["count"], d, cols)

        readers.update({
            "arrow pyarrow": lambda: read_arrow_pyarrow(case["arrow"], cols, False),
            "arrow polars": lambda: read_arrow_polars(case["arrow"], cols, False),
            "arrow-stream pyarrow": lambda: read_arrow_pyarrow(case["arrow-stream"], cols, True),
            "arrow-stream polars": lambda: read_arrow_polars(case["arrow-stream"], cols, True),
            "to_arrow": to_arrow,
        })
    out = {}
    for name, reader in readers.items():
        try:
            out[name] = reader()
        except ImportError as e:
            out[name] = f"not installed: {e.name}"
        except Exception as e:  # the Rust test reports it with the seed
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    return out


json.dump([read_case(c) for c in json.load(open(sys.argv[1]))], sys.stdout)
