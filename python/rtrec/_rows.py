"""Reading ``rtrec export --format numpy`` into column arrays: the fast
path of :meth:`Recording.to_numpy` and :meth:`Recording.to_pandas`.

Design choice (decided): **rtrec writes binary rows, NumPy reads them.**
The stream is a JSON header line, then a fixed-width row per record and
per gap: a 32-byte stamp (``seq``, ``wall_ns``, ``mono_ns``, ``len``,
``flags``, ``reason``) and the record's bytes (docs/export.md, "``--format
numpy``"). The binary verifies every frame's CRC-32C and decides the gaps
as for every export, so nothing here re-reads ``.rtr`` frames or checks
CRCs; the header gives the row's dtype (the layout's types, offsets and
byte order), so the layout is never parsed here. The rows are read from
the pipe in chunks into arrays allocated once at the size the header
hints: memory is the result plus one chunk, time is one ``frombuffer``
and a copy per column per chunk.

Lost rows (``on_gap="rows"``) are placed as the gap rows come, at the
output position the records before them reach; their times are
interpolated at the end (:func:`_interpolate`).
"""

import json
import struct

import numpy as np

from ._binary import RtrecError

#: The stream version this package reads.
VERSION = 1

#: Rows read from the pipe per chunk.
CHUNK_ROWS = 1 << 16

#: The columns every row of the result has, before the layout's.
FIXED = (("seq", "u8"), ("wall_ns", "i8"), ("mono_ns", "i8"), ("exact", "?"), ("lost", "?"), ("len", "u4"))


def read_header(stream):
    """The header line's document, checked for format and version."""
    line = stream.readline()
    try:
        h = json.loads(line)
    except ValueError:
        h = None
    if not isinstance(h, dict) or h.get("format") != "rtrec-numpy":
        raise RtrecError("rtrec's numpy export did not begin with its header line")
    if h.get("version") != VERSION:
        raise RtrecError(
            f"rtrec's numpy export is version {h.get('version')}; this package reads version "
            f"{VERSION}: use the rtrec package of the same rtrec version"
        )
    return h


def columns(h):
    """``[(name, dtype)]`` of the result: the fixed columns, then the
    layout's fields in native byte order (or ``payload``, objects)."""
    fields = [(n, np.dtype(t).newbyteorder("=")) for n, t, _ in h["fields"]]
    clash = [n for n, _ in fields if n in dict(FIXED)]
    if clash:
        raise ValueError(
            f"the layout's field '{clash[0]}' has the name of a column every row has "
            f"({', '.join(n for n, _ in FIXED)})"
        )
    return [(n, np.dtype(t)) for n, t in FIXED] + (fields if h["record_bytes"] is not None else [("payload", np.dtype("O"))])


def row_dtype(h, record_bytes):
    """The dtype of one row of the stream, with ``record_bytes`` of record."""
    names, formats, offsets = [], [], []
    for n, t, at in h["stamp"]:
        names.append(n), formats.append(t), offsets.append(at)
    if h["record_bytes"] is not None:
        for n, t, at in h["fields"]:
            names.append(n), formats.append(t), offsets.append(h["stamp_bytes"] + at)
    else:
        names.append("payload"), formats.append(f"V{record_bytes}"), offsets.append(h["stamp_bytes"])
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": h["stamp_bytes"] + record_bytes})


class Sink:
    """The result's columns, allocated by ``alloc(n)`` (which returns the
    container and a dict of 1-D arrays by name), grown if the header's
    hint was short."""

    def __init__(self, alloc, n):
        self.alloc = alloc
        self.container, self.cols = alloc(max(n, 1))
        self.pos = 0

    def room(self, k):
        """Makes room for ``k`` more rows."""
        have = len(self.cols["seq"])
        if self.pos + k <= have:
            return
        container, cols = self.alloc(max(2 * have, self.pos + k))
        for name, col in cols.items():
            col[: self.pos] = self.cols[name][: self.pos]
        self.container, self.cols = container, cols


def read(stream, h, alloc, on_gap, gap_type):
    """Reads the rows after the header into columns ``alloc`` makes.

    Returns:
        (container, cols, gaps, n): ``n`` rows are filled.
    """
    lost_rows = on_gap == "rows"
    hint = h["records"] + (h["lost"] if lost_rows else 0)
    sink = Sink(alloc, hint)
    gaps = []
    if h["record_bytes"] is not None:
        dt = row_dtype(h, h["record_bytes"])
        buf = bytearray(dt.itemsize * CHUNK_ROWS)
        view = memoryview(buf)
        while True:
            got = _fill(stream, view)
            if got % dt.itemsize:
                raise RtrecError("rtrec's numpy export ended inside a row")
            if not got:
                break
            _chunk(np.frombuffer(buf, dtype=dt, count=got // dt.itemsize), h, sink, gaps, lost_rows, gap_type)
    else:
        for rows in _variable(stream.read(), h):
            _chunk(rows, h, sink, gaps, lost_rows, gap_type)
    return sink.container, sink.cols, gaps, sink.pos


def _fill(stream, view):
    """Reads into ``view`` until it is full or the stream ends."""
    got = 0
    while got < len(view):
        n = stream.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def _variable(body, h):
    """Rows without a layout (records of any length), as arrays of the
    row dtype: one ``frombuffer`` when every row has the first record's
    length (no gap row), else walked stamp by stamp."""
    sb = h["stamp_bytes"]
    if not body:
        return
    length = struct.unpack_from("<I", body, 24)[0]
    width = sb + length
    dt = row_dtype(h, length)
    if len(body) % width == 0:
        rows = np.frombuffer(body, dtype=dt)
        # Row 0 is at 0 and each row's len says where the next begins:
        # all equal to the first's, every row is where the stride puts it.
        if (rows["len"] == length).all() and not (rows["flags"] & h["flags"]["gap"]).any():
            yield _objects(rows, h)
            return
    at, end = 0, len(body)
    while at < end:
        n = struct.unpack_from("<I", body, at + 24)[0]
        if at + sb + n > end:
            raise RtrecError("rtrec's numpy export ended inside a row")
        yield _objects(np.frombuffer(body, dtype=row_dtype(h, n), count=1, offset=at), h)
        at += sb + n


def _objects(rows, h):
    """``rows`` with its ``payload`` as ``bytes`` objects."""
    names = [n for n, _, _ in h["stamp"]]
    out = np.empty(len(rows), dtype=[*((n, rows.dtype[n]) for n in names), ("payload", "O")])
    for n in names:
        out[n] = rows[n]
    out["payload"] = rows["payload"].tolist() if rows.dtype["payload"].itemsize else [b""] * len(rows)
    return out


def _chunk(rows, h, sink, gaps, lost_rows, gap_type):
    """Copies one chunk of rows into the sink; gap rows become ``gaps``
    entries and, for ``lost_rows``, rows of their own."""
    gap_bit = h["flags"]["gap"]
    at_gap = np.flatnonzero(rows["flags"] & gap_bit)
    start = 0
    for g in at_gap.tolist():
        _records(rows[start:g], h, sink)
        r = rows[g]
        unknown = bool(r["flags"] & h["flags"]["count_unknown"])
        gap = gap_type(int(r["seq"]), None if unknown else int(r["mono_ns"]), h["reasons"][int(r["reason"])])
        gaps.append(gap)
        if lost_rows and gap.lost and gap.count is not None:
            sink.room(gap.count)
            p, c = sink.pos, sink.cols
            c["seq"][p : p + gap.count] = gap.first_seq + np.arange(gap.count, dtype=np.uint64)
            c["lost"][p : p + gap.count] = True
            sink.pos += gap.count
        start = g + 1
    _records(rows[start:], h, sink)


def _records(rows, h, sink):
    """Copies record rows (no gap among them) into the sink."""
    k = len(rows)
    if not k:
        return
    sink.room(k)
    p, c = sink.pos, sink.cols
    for name, col in c.items():
        if name == "exact":
            col[p : p + k] = (rows["flags"] & h["flags"]["exact"]) != 0
        elif name != "lost":
            col[p : p + k] = rows[name]
    sink.pos += k


def finish(cols, n):
    """Lost rows' values: NaN in float columns, ``b""`` payloads, times
    interpolated evenly by sequence number between the records either side
    (the nearest record's at an end; 0 with no record)."""
    lost = cols["lost"][:n]
    if not lost.any():
        return
    for name, col in cols.items():
        if col.dtype.kind == "f":
            col[:n][lost] = np.nan
        elif col.dtype.kind == "O":
            col[:n][lost] = b""
    kept = np.flatnonzero(~lost)
    if not len(kept):
        return
    at_seq = cols["seq"][:n][lost].astype(np.float64)
    seqs = cols["seq"][:n][kept].astype(np.float64)
    for name in ("wall_ns", "mono_ns"):
        data = cols[name][:n][kept]
        # Relative to the first record, so float64 keeps the nanoseconds.
        base = data[0]
        rel = (data - base).astype(np.float64)
        cols[name][:n][lost] = base + np.rint(np.interp(at_seq, seqs, rel)).astype(np.int64)
