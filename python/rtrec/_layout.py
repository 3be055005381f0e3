"""The NumPy type of each column of a ``--layout``.

rtrec decodes the records (``rtrec export --layout L``); this module only
reads the same grammar far enough to give each column its dtype, which the
exported JSON cannot tell (``7`` may be a u8 or an i64). The grammar is
``src/export/layout.rs``'s: ``NAME:TYPE`` pairs (``u8 i8 u16 i16 u32 i32
u64 i64 f32 f64``, ``padN``), or Python ``struct`` codes (``<Iff``) with
columns ``f0``, ``f1``, …. Whether a layout is valid, and whether a record
fits it, is rtrec's word: this parser returns ``None`` for anything it does
not read, and the caller then lets rtrec say why; a column list that
disagrees with rtrec's is an error, never a guess.
"""

import re

_NAMED = {
    "u8": "u1", "u16": "u2", "u32": "u4", "u64": "u8",
    "i8": "i1", "i16": "i2", "i32": "i4", "i64": "i8",
    "f32": "f4", "f64": "f8",
}
_CODES = {
    "b": "i1", "B": "u1", "h": "i2", "H": "u2", "i": "i4", "I": "u4",
    "l": "i4", "L": "u4", "q": "i8", "Q": "u8", "f": "f4", "d": "f8",
}


def columns(spec):
    """``[(name, numpy type code), ...]`` of the layout's columns (pads
    left out), or ``None`` when this parser does not read ``spec``."""
    body = spec.strip()
    if body[:1] in "<>!=" and body:
        body = body[1:]
    if ":" in body:
        cols = []
        for part in body.split(","):
            name, _, ty = part.strip().partition(":")
            name, ty = name.strip(), ty.strip()
            if ty.startswith("pad"):
                continue
            if ty not in _NAMED or not re.fullmatch(r"[A-Za-z0-9_]+", name):
                return None
            cols.append((name, _NAMED[ty]))
        return cols or None
    cols = []
    for count, code in re.findall(r"(\d*)(\S)", re.sub(r"\s", "", body)):
        n = int(count) if count else 1
        if code == "x":
            continue
        if code not in _CODES:
            return None
        base = len(cols)
        cols.extend((f"f{base + k}", _CODES[code]) for k in range(n))
    return cols or None
