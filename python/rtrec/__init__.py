"""Read rtrec recordings from Python.

Open a recording (a directory: its newest recording, or one by id; or one
file), verify it, iterate its records with their sequence numbers and
times, or load it into a NumPy structured array or a pandas DataFrame with
``rtrec export``'s ``--layout`` grammar. A loss is a row (``lost`` True)
and an entry in ``.gaps``, never a silently shorter array::

    import rtrec
    rec = rtrec.open("rtrec-data")
    rec.verify()                                  # VerifyError if not clean
    for item in rec.records():                    # Record(seq, wall_ns, mono_ns, exact, payload) / Gap
        ...
    a = rec.to_numpy("t:u32,x:f32,y:f32")         # a["seq"], a["x"], a["lost"], a.gaps
    a = rec.to_numpy()                            # by rec.layout, stored by `rtrec record --layout`
    df = rec.to_pandas("<Iff")                    # needs pandas; nullable=True: <NA> in lost rows
    pf, gaps = rec.to_polars("<Iff")              # needs polars
    t = rec.to_arrow("<Iff")                      # needs pyarrow: the Arrow IPC export's table
    rec = rtrec.fetch("s3://fleet/plant/dev1/2026-12-07/5c2b4613d1412984", "got")
                                                  # from the bucket, verified (rtrec fetch)

Design (decided): a thin, pure-Python layer over the ``rtrec`` command,
not a second reader. Verification (every frame's CRC-32C), gap detection
and the layout's grammar are the binary's — ``rtrec verify --json``,
``rtrec ls --json``, ``rtrec export --format jsonl`` for :meth:`records`,
and for the arrays ``rtrec export --format numpy``: a JSON header line
that gives the row's dtype, then fixed-width binary rows (a 32-byte stamp
and the record's bytes) read with ``np.frombuffer`` a chunk at a time
(``rtrec._rows``), so 1M records arrive at NumPy speed with no text per
record, the rules are rtrec's byte for byte, and ``pip install ./python``
needs no compiler. The binary is the ``RTREC`` environment variable, else
``rtrec`` on ``PATH``, else ``target/release/rtrec`` of the checkout the
package was installed from; without one, :class:`RtrecNotFound` says how
to get it.
"""

from ._binary import RtrecError, RtrecNotFound, find as find_rtrec
from ._recording import (
    NOT_LOST,
    Gap,
    GapError,
    Record,
    Recording,
    Records,
    Verification,
    VerifyError,
    fetch,
    ls,
    open,
    verify,
)

__all__ = [
    "NOT_LOST", "Gap", "GapError", "Record", "Recording", "Records", "RtrecError",
    "RtrecNotFound", "Verification", "VerifyError", "fetch", "find_rtrec", "ls", "open", "verify",
]
