"""Recordings: which one a path means, its verification, its records and
gaps one at a time, and the whole of it as a NumPy array or a DataFrame.

Everything comes from the ``rtrec`` binary (``rtrec ls --json``, ``rtrec
verify --json``, ``rtrec export --format jsonl`` for :meth:`records`,
``rtrec export --format numpy`` for the arrays and frames, ``--format
arrow-stream`` for :meth:`Recording.to_arrow`); see the
package docstring for why.
"""

import base64
import calendar
import contextlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _binary, _rows
from ._binary import RtrecError

#: Gap reasons that are not losses: records a loop recording's budget
#: retired on purpose, and those between two flight-recorder windows.
#: rtrec exports them as gaps without ``--allow-gaps``; they are in
#: ``.gaps`` but get no rows (a loop may have retired millions).
NOT_LOST = frozenset({"retired", "not_saved"})


class VerifyError(RtrecError):
    """``rtrec verify`` found the recording not clean. The message is its
    report; ``.result`` is the :class:`Verification`."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class GapError(RtrecError):
    """Records are missing and ``on_gap="raise"`` was asked: rtrec's
    sentence, which says how many and why."""


@dataclass(frozen=True)
class Record:
    """One record, as ``rtrec export`` gives it."""

    seq: int
    """Its sequence number."""
    wall_ns: int
    """``CLOCK_REALTIME`` ns since the epoch (the file header's mapping)."""
    mono_ns: int
    """``CLOCK_MONOTONIC`` ns, as the recorder stamped it."""
    exact: bool
    """False for a packed record between its frame's first and last: its
    time is interpolated (docs/export.md)."""
    payload: bytes
    """Its bytes."""


@dataclass(frozen=True)
class Gap:
    """Records that are not in the recording."""

    first_seq: int
    """The first missing sequence number."""
    count: int
    """How many; ``None`` when no file tells it (the recording continues
    after its last file present in files that are missing)."""
    reason: str
    """Why: ``ring_full``, ``too_large``, ``writer_failed``,
    ``overwritten``, ``crash_hole``, ``missing``, ``retired``,
    ``not_saved`` (docs/export.md)."""

    @property
    def lost(self):
        """True unless the records were left out on purpose (``retired``,
        ``not_saved``)."""
        return self.reason not in NOT_LOST


@dataclass(frozen=True)
class Verification:
    """What ``rtrec verify --json`` said about a recording's files."""

    clean: bool
    """True when rtrec verify exits 0 on them."""
    report: dict
    """Its whole ``--json`` document (``files``, ``records``,
    ``lost_records``, ``missing_records``, …)."""


class Records(np.ndarray):
    """A structured array of rows (see :meth:`Recording.to_numpy`) that
    also carries ``.gaps``: the recording's :class:`Gap` list."""

    def __array_finalize__(self, obj):
        self.gaps = getattr(obj, "gaps", [])


#: The version of ``rtrec ls/verify/events --json`` documents this package
#: reads (docs/recordings-schema.md).
SCHEMA_VERSION = 1


def _versioned(doc, what):
    """``doc`` when its ``schema_version`` is the one this package reads."""
    v = doc.get("schema_version") if isinstance(doc, dict) else None
    if v != SCHEMA_VERSION:
        raise RtrecError(
            f"`rtrec {what} --json` printed schema version {v}; this package reads version "
            f"{SCHEMA_VERSION}: use the rtrec package of the same rtrec version"
        )
    return doc


def ls(directory, recording=None):
    """The recordings of ``directory``, oldest first: ``rtrec ls --json``'s
    ``recordings`` (dicts with ``id``, ``state``, ``records``, ``lost``,
    ``dropped``, ``missing``, ``cut``, ``lost_after``, ``files``, …;
    docs/recordings-schema.md). With ``recording`` (an id, a unique
    prefix, a file name) only that one: rtrec resolves it, and its
    sentence is the :class:`RtrecError` when none or several match."""
    args = ["ls", "--json", os.fspath(directory)]
    if recording is not None:
        args += ["--recording", str(recording)]
    return _versioned(_binary.run_json(args)[1], "ls")["recordings"]


def verify(*paths):
    """``rtrec verify PATH...``: files, or directories of recordings.

    Returns:
        Verification: when rtrec says clean (exit 0).

    Raises:
        VerifyError: not clean (exit 1); the message is rtrec's report.
        RtrecError: usage or I/O error (exit 2).
    """
    args = [os.fspath(p) for p in paths]
    code, doc = _binary.run_json(["verify", "--json", *args], ok=(0, 1))
    result = Verification(clean=code == 0, report=_versioned(doc, "verify"))
    if code != 0:
        _, text, _ = _binary.run(["verify", *args], ok=(1,))
        raise VerifyError(text.strip(), result)
    return result


def open(path, recording=None):  # noqa: A001 (the package's verb, as in rtrec.open)
    """The recording at ``path``.

    Args:
        path: a recording directory, or one recording file (then that file
            alone is read, as ``rtrec export FILE`` does).
        recording: in a directory, which recording: its id or a unique
            prefix of it (as ``rtrec ls`` shows), or one of its files'
            names. Default: the newest (the last ``rtrec ls`` lists, as
            ``rtrec export DIR`` takes).

    Raises:
        RtrecError: no such recording, or rtrec refused the path.
    """
    p = Path(path)
    if not p.is_dir():
        if recording is not None:
            raise ValueError("recording= picks one recording of a directory, not of a file")
        return Recording(p, _id_of_file(p), [p])
    if recording is not None:
        # rtrec resolves the id, prefix or file name (one rule for all).
        return Recording._listed(p, ls(p, recording)[0])
    listed = [r for r in ls(p) if r["id"] != "-"]
    if not listed:
        raise RtrecError(f"'{p}' holds no recordings")
    sources = [r for r in listed if not r.get("copy")] or listed
    return Recording._listed(p, sources[-1])


def fetch(url, directory, endpoint=None, region=None, ca_file=None):
    """Downloads the recording at ``url`` from object storage into
    ``directory`` (new, or empty of its files) and opens it.

    ``url`` is ``s3://BUCKET/…/RECORDING_ID``, as ``rtrec ls
    s3://BUCKET/PREFIX`` lists it. ``rtrec fetch`` does the download: each
    file is checked against the manifest's size and CRC32C before it takes
    its name, then the record and loss counts against the manifest's, so
    what opens is what the device shipped (docs/ship.md, "The fleet
    side"). Credentials come from ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY`` as rtrec reads them; the endpoint from
    ``endpoint`` or ``AWS_ENDPOINT_URL``.

    Args:
        url: the recording's location in the bucket.
        directory: where its files go.
        endpoint, region, ca_file: ``rtrec fetch``'s ``--endpoint``,
            ``--region`` and ``--ca-file``.

    Raises:
        RtrecError: rtrec's sentence: no such recording, a file that does
            not match its manifest (nothing of it is written), a name
            already in ``directory``, refused credentials.
    """
    args = ["fetch", str(url), os.fspath(directory)]
    for flag, value in (("--endpoint", endpoint), ("--region", region), ("--ca-file", ca_file)):
        if value is not None:
            args += [flag, os.fspath(value)]
    _binary.run(args)
    rid = str(url).rstrip("/").rsplit("/", 1)[-1]
    return open(directory, recording=rid)


def _id_of_file(path):
    """The recording id (16 hex digits) in a file's header, by rtrec."""
    _, doc = _binary.run_json(["verify", "--json", os.fspath(path)], ok=(0, 1))
    rid = _versioned(doc, "verify")["files"][0].get("recording_id")
    if rid is None:
        raise RtrecError(f"'{path}' is {'; '.join(doc['files'][0]['notes']) or 'not an rtrec recording'}")
    return f"{rid:016x}"


def _wall_ns(text):
    """``2026-11-27T23:18:19.728625487Z`` (rtrec's form) as ns since the
    epoch."""
    secs = calendar.timegm(
        (int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]), int(text[17:19]))
    )
    return secs * 1_000_000_000 + int(text[20:29])


class Recording:
    """One recording (see :func:`open`)."""

    def __init__(self, path, rid, inputs, pick=None):
        self.path = Path(path)
        """The directory or file it was opened from."""
        self.id = rid
        """Its recording id, 16 hex digits."""
        self._inputs = inputs
        # How rtrec is told which recording of a directory: its id, or
        # for a framed copy (which has its source's id) its file name.
        self._pick = pick or rid

    @classmethod
    def _listed(cls, directory, entry):
        """The recording ``rtrec ls --json`` listed as ``entry``."""
        pick = Path(entry["first_file"]).name if entry.get("copy") else entry["id"]
        return cls(directory, entry["id"], [directory], pick)

    def __repr__(self):
        return f"<rtrec.Recording {self.id} in '{self.path}'>"

    @property
    def info(self):
        """``rtrec ls --json``'s entry for this recording (read now: a
        recording in progress grows). For a file opened alone, the entry of
        the recording it belongs to, in its directory."""
        directory = self.path if self.path.is_dir() else self.path.parent
        if self.path.is_dir():
            return ls(directory, self._pick)[0]
        return next((r for r in ls(directory) if r["id"] == self.id and not r.get("copy")), None)

    @property
    def layout(self):
        """The layout the recording stores (``rtrec record --layout``): its
        canonical text, e.g. ``"t:u32,x:f32,y:f32"``, from ``rtrec ls
        --json``'s ``layout`` (docs/recordings-schema.md); ``None`` when it
        stores none. :meth:`to_numpy`, :meth:`to_pandas` and
        :meth:`to_polars` decode by it unless told another."""
        entry = self.info
        return entry.get("layout") if entry else None

    def _args(self):
        args = [os.fspath(p) for p in self._inputs]
        if self.path.is_dir():
            args += ["--recording", self._pick]
        return args

    def verify(self):
        """Verifies the recording's files as ``rtrec verify`` does.

        In a directory of one recording it is ``rtrec verify DIR`` (the
        pool and leftover temporary files count too); in a directory of
        several, ``rtrec verify`` on this recording's files only.

        Returns:
            Verification: clean.

        Raises:
            VerifyError: not clean, with rtrec's report as the message.
        """
        if not self.path.is_dir():
            return verify(self.path)
        _, doc = _binary.run_json(["verify", "--json", os.fspath(self.path)], ok=(0, 1))
        mine = [
            f["path"] for f in doc["files"] if f.get("recording_id") == int(self.id, 16)
            and bool(f.get("copy")) == (self._pick != self.id)
        ]
        if len(mine) == len(doc["files"]):
            return verify(self.path)
        return verify(*mine)

    @contextlib.contextmanager
    def _export(self, extra, allow_gaps):
        """``rtrec export ... -o -``'s stdout (binary, buffered), for the
        ``with`` block; afterwards rtrec's exit is checked (its sentence as
        :class:`GapError` or :class:`RtrecError`). Leaving the block early
        (an error, a caller that stopped reading) ends our own child."""
        args = [_binary.find(), "export", *self._args(), *extra, "-o", "-"]
        if allow_gaps:
            args.append("--allow-gaps")
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
            try:
                yield proc.stdout
            except BaseException:
                proc.kill()
                proc.stdout.close()
                # Exited on its own before the kill (a read that failed
                # at its end of output): rtrec's sentence says why.
                if proc.wait() > 0:
                    raise _failed(err, proc.returncode, allow_gaps) from None
                raise
            proc.stdout.close()
            if proc.wait() != 0:
                raise _failed(err, proc.returncode, allow_gaps)

    def _rows(self, extra, allow_gaps=True):
        """The export's JSON rows, streamed from rtrec's stdout."""
        with self._export(["--format", "jsonl", *extra], allow_gaps) as out:
            for line in out:
                yield json.loads(line)

    def records(self, on_gap="yield"):
        """Every record and gap in sequence order: :class:`Record` and
        :class:`Gap` items, streamed (constant memory).

        Args:
            on_gap: ``"yield"`` (default) gives each gap where it is;
                ``"skip"`` gives the records only; ``"raise"`` refuses a
                recording with lost records up front (rtrec's rule:
                :class:`GapError`, nothing yielded).
        """
        allow = _allow(on_gap, ("yield", "skip"))
        for row in self._rows(["--payload", "base64"], allow_gaps=allow):
            if row["kind"] == "gap":
                if on_gap == "yield":
                    yield Gap(row["seq"], row["count"], row["reason"])
            else:
                yield Record(
                    row["seq"], _wall_ns(row["wall_time"]), row["mono_ns"], row["exact"],
                    base64.b64decode(row["payload"]),
                )

    def _columns(self, layout, on_gap, alloc):
        """The recording's rows in columns that ``alloc(n)`` makes (it
        returns a container and a dict of 1-D arrays by name), read from
        ``rtrec export --format numpy`` (:mod:`rtrec._rows`). Returns
        (container, columns, gaps, rows)."""
        allow = _allow(on_gap, ("rows", "skip"))
        extra = ["--format", "numpy", *(["--layout", layout] if layout is not None else [])]
        with self._export(extra, allow) as out:
            h = _rows.read_header(out)
            cols = _rows.columns(h)
            container, arrays, gaps, n = _rows.read(out, h, lambda k: alloc(cols, k), on_gap, Gap)
        _rows.finish(arrays, n)
        return container, arrays, gaps, n

    def to_numpy(self, layout=None, on_gap="rows"):
        """The recording as a structured array, one row per record AND one
        per lost record, in sequence order: never silently shorter.

        Fields: ``seq`` (u8), ``wall_ns`` and ``mono_ns`` (i8, ns),
        ``exact`` (bool), ``lost`` (bool: True for a record that is not in
        the recording), ``len`` (u4), then the layout's columns with their
        types (``rtrec export --layout`` grammar, docs/export.md), in
        native byte order: the recording's own layout (:attr:`layout`,
        stored by ``rtrec record --layout``) unless ``layout`` names
        another; without either, ``payload`` (bytes objects).

        A lost row has its ``seq``; ``len`` 0; ``payload`` b""; integer fields 0, float
        fields NaN; its times interpolated evenly by sequence number
        between the records either side (the nearest record's at an end;
        0 with no record at all), ``exact`` False. ``.gaps`` lists every
        :class:`Gap` with its reason; ``retired`` and ``not_saved`` gaps
        (not losses) get no rows, nor does a gap whose count no file tells
        (``count`` None: the recording's last files are missing; it is
        the last entry of ``.gaps``).

        Read from ``rtrec export --format numpy`` (binary rows, one
        ``np.frombuffer`` per chunk; see :mod:`rtrec._rows`).

        Args:
            layout: e.g. ``"t:u32,x:f32,y:f32"`` or ``"<Iff"``; ``None``
                (default): the recording's own (:attr:`layout`), if it
                stores one; ``"none"``: the bytes as ``payload`` even
                then.
            on_gap: ``"rows"`` (default); ``"skip"``: the records only
                (``lost`` all False), the gaps still in ``.gaps``;
                ``"raise"`` refuses a recording with lost records
                (:class:`GapError`).
        """

        def alloc(cols, n):
            a = np.zeros(n, dtype=cols).view(Records)
            return a, {name: a[name] for name, _ in cols}

        out, _, gaps, n = self._columns(layout, on_gap, alloc)
        if n != len(out):
            out = out[:n].copy()
        out.gaps = gaps
        return out

    def _column_dict(self, layout, on_gap):
        """The columns as separate arrays (no structured array between
        the stream and a DataFrame), trimmed to the rows read."""

        def alloc(cols, n):
            d = {name: np.zeros(n, dtype=t) for name, t in cols}
            return d, d

        _, cols, gaps, n = self._columns(layout, on_gap, alloc)
        return {k: v[:n] for k, v in cols.items()}, gaps

    def to_pandas(self, layout=None, on_gap="rows", nullable=False):
        """:meth:`to_numpy` as a pandas DataFrame, with ``wall_time``
        (datetime64[ns, UTC]) after ``seq``; ``df.attrs["gaps"]`` is the
        gap list. The columns are the arrays read, not copied again.

        Args:
            nullable: the layout's columns as pandas' nullable types
                (``UInt32``, ``Int64``, ``Float32``, …; an ``f16`` field as
                ``Float32``, which holds it exactly) with ``<NA>`` in
                lost rows, so a recorded NaN and a lost value differ and
                integers stay integers (default: NumPy types, 0 and NaN in
                lost rows, ``lost`` says which). Text fields (``sN``) are
                ``str`` (pandas' ``string`` with ``nullable``).

        Raises:
            ImportError: pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                "to_pandas needs pandas: python3 -m pip install pandas (or pip install './python[pandas]')"
            ) from e
        cols, gaps = self._column_dict(layout, on_gap)
        data = {"seq": cols["seq"]}
        data["wall_time"] = pd.DatetimeIndex(cols["wall_ns"].view("M8[ns]")).tz_localize("UTC")
        fixed = dict(_rows.FIXED)
        for name, col in cols.items():
            if name == "seq":
                continue
            if col.dtype.kind == "S":
                # Text (a layout's sN): str, as the other exports give it.
                col = np.char.decode(col, "utf-8").astype(object)
                if nullable:
                    col = pd.array(col, dtype="string")
                    col[cols["lost"]] = pd.NA
            elif nullable and name not in fixed and col.dtype.kind in "iufb":
                cls = {"f": pd.arrays.FloatingArray, "b": pd.arrays.BooleanArray}.get(
                    col.dtype.kind, pd.arrays.IntegerArray)
                if col.dtype == np.float16:
                    # pandas has no nullable float16: Float32 holds every
                    # f16 exactly.
                    col = col.astype(np.float32)
                col = cls(col, cols["lost"].copy())
            data[name] = col
        df = pd.DataFrame(data, copy=False)
        df.attrs["gaps"] = gaps
        return df

    def to_polars(self, layout=None, on_gap="rows"):
        """:meth:`to_numpy` as a polars DataFrame: ``wall_time``
        (``Datetime("ns", "UTC")``) after ``seq``, the layout's columns
        null in lost rows (polars' nulls keep the column's type).

        Returns:
            (DataFrame, gaps): polars frames have no attributes, so the
            :class:`Gap` list comes beside it.

        Raises:
            ImportError: polars is not installed.
        """
        try:
            import polars as pl
        except ImportError as e:
            raise ImportError("to_polars needs polars: python3 -m pip install polars") from e
        cols, gaps = self._column_dict(layout, on_gap)
        fixed = dict(_rows.FIXED)
        lost = cols["lost"]
        series = [pl.Series("seq", cols["seq"]),
                  pl.Series("wall_time", cols["wall_ns"]).cast(pl.Datetime("ns", "UTC"))]
        for name, col in cols.items():
            if name == "seq":
                continue
            if col.dtype.kind == "S":
                col = np.char.decode(col, "utf-8")  # text (sN): polars' String
            s = pl.Series(name, list(col) if col.dtype.kind == "O" else col)
            if name not in fixed and lost.any():
                s = pl.select(pl.when(pl.lit(lost)).then(None).otherwise(s).alias(name)).to_series()
            series.append(s)
        return pl.DataFrame(series), gaps

    def to_arrow(self, layout=None, on_gap="rows"):
        """The recording as a ``pyarrow.Table``, read from ``rtrec export
        --format arrow-stream`` (Arrow's IPC stream, no text between):
        the export's table as it is, a row per record and per gap in
        sequence order, each layout field in its own Arrow type
        (``uint16`` stays ``uint16``), ``wall_time`` as ``timestamp[ns,
        tz=UTC]``, a gap row's record columns null (Arrow's nulls keep
        every column's type), ``kind`` saying which, and the recording's
        id, layout and counts in ``table.schema.metadata[b"rtrec.recording"]``
        (docs/export.md, "Arrow IPC").

        Args:
            layout: as :meth:`to_numpy`.
            on_gap: ``"rows"`` (default): gap rows with ``count`` and
                ``reason``; ``"skip"``: the record rows only;
                ``"raise"``: :class:`GapError` for a recording with lost
                records.

        Raises:
            ImportError: pyarrow is not installed.
        """
        try:
            import pyarrow.compute as pc
            import pyarrow.ipc
        except ImportError as e:
            raise ImportError("to_arrow needs pyarrow: python3 -m pip install pyarrow") from e
        allow = _allow(on_gap, ("rows", "skip"))
        extra = ["--format", "arrow-stream", *(["--layout", layout] if layout is not None else [])]
        with self._export(extra, allow) as out:
            table = pyarrow.ipc.open_stream(out).read_all()
        if on_gap == "skip":
            table = table.filter(pc.equal(table["kind"], "record"))
        return table


def _failed(err, code, allow_gaps):
    """rtrec's sentence from its stderr file, as the error to raise."""
    err.seek(0)
    why = _binary._sentence(err.read().decode(errors="replace"), code)
    return (GapError if "--allow-gaps" in why and not allow_gaps else RtrecError)(why)


def _allow(on_gap, modes):
    """Whether ``on_gap`` (one of ``modes``, or ``"raise"``) lets gaps through."""
    if on_gap not in (*modes, "raise"):
        want = ", ".join(f'"{m}"' for m in (*modes, "raise"))
        raise ValueError(f"on_gap is one of {want}, not {on_gap!r}")
    return on_gap != "raise"
