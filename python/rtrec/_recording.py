"""Recordings: which one a path means, its verification, its records and
gaps one at a time, and the whole of it as a NumPy array or a DataFrame.

Everything comes from the ``rtrec`` binary (``rtrec ls --json``, ``rtrec
verify --json``, ``rtrec export --format jsonl --allow-gaps``); see the
package docstring for why.
"""

import base64
import calendar
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _binary, _layout
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

    def _rows(self, extra, allow_gaps=True):
        """The export's JSON rows, streamed from rtrec's stdout."""
        args = [_binary.find(), "export", *self._args(), "--format", "jsonl", *extra, "-o", "-"]
        if allow_gaps:
            args.append("--allow-gaps")
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
            read_all = False
            try:
                for line in proc.stdout:
                    yield json.loads(line)
                read_all = True
            finally:
                if not read_all:
                    # The caller stopped early: end our own child.
                    proc.kill()
                proc.stdout.close()
                code = proc.wait()
            if not read_all:
                return
            if code != 0:
                err.seek(0)
                why = _binary._sentence(err.read().decode(errors="replace"), code)
                raise (GapError if "--allow-gaps" in why and not allow_gaps else RtrecError)(why)

    def records(self, on_gap="yield"):
        """Every record and gap in sequence order: :class:`Record` and
        :class:`Gap` items, streamed (constant memory).

        Args:
            on_gap: ``"yield"`` (default) gives each gap where it is;
                ``"raise"`` refuses a recording with lost records up front
                (rtrec's rule: :class:`GapError`, nothing yielded).
        """
        for row in self._rows(["--payload", "base64"], allow_gaps=_allow(on_gap, "yield")):
            if row["kind"] == "gap":
                yield Gap(row["seq"], row["count"], row["reason"])
            else:
                yield Record(
                    row["seq"], _wall_ns(row["wall_time"]), row["mono_ns"], row["exact"],
                    base64.b64decode(row["payload"]),
                )

    def to_numpy(self, layout=None, on_gap="rows"):
        """The recording as a structured array, one row per record AND one
        per lost record, in sequence order: never silently shorter.

        Fields: ``seq`` (u8), ``wall_ns`` and ``mono_ns`` (i8, ns),
        ``exact`` (bool), ``lost`` (bool: True for a record that is not in
        the recording), ``len`` (u4), then ``payload`` (bytes objects), or
        with ``layout`` its columns with their types (rtrec decodes them,
        ``rtrec export --layout`` grammar, docs/export.md).

        A lost row has its ``seq``; ``len`` 0; ``payload`` b""; integer fields 0, float
        fields NaN; its times interpolated evenly by sequence number
        between the records either side (the nearest record's at an end;
        0 with no record at all), ``exact`` False. ``.gaps`` lists every
        :class:`Gap` with its reason; ``retired`` and ``not_saved`` gaps
        (not losses) get no rows, nor does a gap whose count no file tells
        (``count`` None: the recording's last files are missing; it is
        the last entry of ``.gaps``).

        Args:
            layout: e.g. ``"t:u32,x:f32,y:f32"`` or ``"<Iff"``.
            on_gap: ``"rows"`` (default), or ``"raise"`` to refuse a
                recording with lost records (:class:`GapError`).
        """
        allow = _allow(on_gap, "rows")
        cols = _columns(layout)
        names = [n for n, _ in cols] if cols is not None else ["payload"]
        seqs, walls, monos, exact, lens = [], [], [], [], []
        values = {n: [] for n in names}
        gaps, at = [], []
        extra = ["--layout", layout] if layout is not None else ["--payload", "base64"]
        for row in self._rows(extra, allow_gaps=allow):
            if row["kind"] == "gap":
                gaps.append(Gap(row["seq"], row["count"], row["reason"]))
                at.append(len(seqs))
                continue
            if cols is None and layout is not None:
                raise RtrecError(f"rtrec accepted the layout '{layout}', which this package does not read")
            seqs.append(row["seq"])
            walls.append(_wall_ns(row["wall_time"]))
            monos.append(row["mono_ns"])
            exact.append(row["exact"])
            lens.append(row["len"])
            for n in names:
                values[n].append(row[n])
        if layout is not None and cols is None:
            raise RtrecError(f"rtrec accepted the layout '{layout}', which this package does not read")
        if layout is None:
            values["payload"] = [base64.b64decode(v) for v in values["payload"]]
            cols = [("payload", "O")]
        out = _assemble(cols, seqs, walls, monos, exact, lens, values, gaps, at)
        out.gaps = gaps
        return out

    def to_pandas(self, layout=None, on_gap="rows"):
        """:meth:`to_numpy` as a pandas DataFrame, with ``wall_time``
        (datetime64[ns, UTC]) after ``seq``; ``df.attrs["gaps"]`` is the
        gap list.

        Raises:
            ImportError: pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                "to_pandas needs pandas: python3 -m pip install pandas (or pip install './python[pandas]')"
            ) from e
        arr = self.to_numpy(layout, on_gap)
        df = pd.DataFrame(np.asarray(arr))
        df.insert(1, "wall_time", pd.to_datetime(df["wall_ns"], unit="ns", utc=True))
        df.attrs["gaps"] = list(arr.gaps)
        return df


def _allow(on_gap, default):
    if on_gap not in (default, "raise"):
        raise ValueError(f'on_gap is "{default}" or "raise", not {on_gap!r}')
    return on_gap == default


def _columns(layout):
    """The layout's columns with their dtypes (``None``: not read here)."""
    if layout is None:
        return None
    cols = _layout.columns(layout)
    clash = [n for n, _ in cols or [] if n in _FIXED]
    if clash:
        raise ValueError(f"the layout's field '{clash[0]}' has the name of a column every row has ({', '.join(_FIXED)})")
    return cols


_FIXED = ("seq", "wall_ns", "mono_ns", "exact", "lost", "len")

#: rtrec's JSON spellings of the floats JSON numbers cannot hold
#: (docs/export.md, "Every value as recorded"). NaN comes back as NumPy's
#: NaN: its sign and payload bits are not kept.
_NON_FINITE = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}


def _assemble(cols, seqs, walls, monos, exact, lens, values, gaps, at):
    """The array: the records at their places, the lost rows between."""
    lost_gaps = [(g, a) for g, a in zip(gaps, at) if g.lost and g.count is not None]
    n_rec = len(seqs)
    total = n_rec + sum(g.count for g, _ in lost_gaps)
    dtype = [("seq", "u8"), ("wall_ns", "i8"), ("mono_ns", "i8"), ("exact", "?"), ("lost", "?"), ("len", "u4"), *cols]
    out = np.zeros(total, dtype=dtype).view(Records)
    # Each record moves down by the lost rows before it.
    shift = np.zeros(n_rec + 1, dtype=np.int64)
    for g, a in lost_gaps:
        shift[a] += g.count
    idx = np.arange(n_rec, dtype=np.int64) + np.cumsum(shift)[:n_rec]
    lost = np.ones(total, dtype=bool)
    lost[idx] = False
    out["lost"] = lost
    out["seq"][idx] = np.array(seqs, dtype=np.uint64)
    before = 0
    for g, a in lost_gaps:
        start = a + before
        out["seq"][start : start + g.count] = g.first_seq + np.arange(g.count, dtype=np.uint64)
        before += g.count
    for name, data in (("wall_ns", walls), ("mono_ns", monos), ("exact", exact), ("len", lens)):
        out[name][idx] = np.array(data, dtype=out.dtype[name])
    for name, code in cols:
        data = values[name]
        if np.dtype(code).kind == "f":
            data = [_NON_FINITE.get(v, v) if isinstance(v, str) else v for v in data]
        # A float32 column: JSON's shortest f32 digits read as the nearest
        # float64, then rounded to float32: the recorded value (docs/export.md).
        out[name][idx] = np.array(data, dtype=code)
        if np.dtype(code).kind == "f":
            out[name][lost] = np.nan
        elif np.dtype(code).kind == "O":
            out[name][lost] = b""
    if n_rec and lost.any():
        for name, data in (("wall_ns", walls), ("mono_ns", monos)):
            # Relative to the first record, so float64 keeps the nanoseconds.
            base = np.int64(data[0])
            rel = np.array(data, dtype=np.int64) - base
            at_seq = out["seq"][lost].astype(np.float64)
            out[name][lost] = base + np.rint(np.interp(at_seq, np.array(seqs, dtype=np.float64), rel)).astype(np.int64)
    return out
