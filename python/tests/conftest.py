"""Recordings made by the real ``rtrec`` binary for the tests, and the
binary itself (``RTREC``, as the package finds it)."""

import json
import struct
import subprocess

import pytest

import rtrec


def run(*args, ok=(0,), stdin=None):
    """Runs rtrec; returns its stdout (bytes)."""
    p = subprocess.run([rtrec.find_rtrec(), *map(str, args)], input=stdin, capture_output=True)
    assert p.returncode in ok, (args, p.returncode, p.stderr.decode())
    return p.stdout


def export_rows(path, *extra):
    """``rtrec export --format jsonl --allow-gaps`` of ``path``, parsed: the
    rows the package must agree with."""
    out = run("export", path, "--format", "jsonl", "--allow-gaps", *(extra or ("--payload", "base64")), "-o", "-")
    return [json.loads(line) for line in out.splitlines()]


def sample(i):
    """Record ``i`` of the lossy recording, layout ``a:u16,b:i16,x:f32``
    (never a newline byte: it is recorded as lines)."""
    return struct.pack("<Hhf", 1000 + i, -3 * i, i * 0.5 + 0.25)


@pytest.fixture
def synthetic(tmp_path):
    """200 synthetic records of 64 B every 1 ms (the first 8 bytes of each
    are its sequence number, little-endian)."""
    d = tmp_path / "synthetic"
    d.mkdir()
    run("record", "--count", 200, "--period", "1ms", "--size", "64B", "--dir", d, "--quiet")
    return d


@pytest.fixture
def lossy(tmp_path):
    """20 records of 8 B with a real loss, as tests/export_tables.rs makes
    one: record 7 is too large (40 B > --max-line 16B), so rtrec stores a
    `too_large` loss in its place."""
    d = tmp_path / "lossy"
    d.mkdir()
    recs = [sample(i) for i in range(20)]
    assert all(b"\n" not in r for r in recs)
    recs[7] = b"A" * 40
    run("record", "--stdin", "--lines", "--max-line", "16B", "--dir", d, "--quiet",
        stdin=b"\n".join(recs) + b"\n")
    return d
