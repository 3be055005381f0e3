//! Every value arrives as recorded (docs/export.md, "Every value as
//! recorded"): random layouts and records — NaN, ±inf, subnormals, −0.0,
//! the extremes of every integer width, f16, f32 and f64, bools, text (empty,
//! quotes, commas, line breaks, digits), arrays, either byte order,
//! both layout spellings — with gaps at the start, middle and end, are
//! exported as CSV, JSON lines, MCAP, Parquet and Arrow IPC and read back by the
//! readers people use (`tests/export_exact_read.py`: pandas with the
//! documented dtype recipe, polars and DuckDB on the CSV, Python's json on
//! the JSON lines, MCAP's Python reader with each message checked against
//! its channel's JSON Schema, pyarrow, polars and DuckDB on the Parquet
//! file, pyarrow and polars on the Arrow IPC file and stream (each
//! column's type checked too), and the rtrec package's `to_numpy`,
//! `to_pandas` (NumPy and nullable dtypes), `to_polars` and `to_arrow`).
//! Each
//! reader's every value must have the recorded bits (NaN as NaN: its
//! payload is not kept), and its gaps must be the lost records.
//!
//! The seed is fixed (`RTREC_EXACT_SEED` replays another) and printed.
//! Without python3 and numpy, pandas and mcap the test skips with one line
//! (and fails under `RTREC_REQUIRE_PRIVILEGED=1`, as CI installs them);
//! so do polars, DuckDB, jsonschema and pyarrow, after the other readers
//! are checked.

#![cfg(feature = "tables")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use rtrec_engine::{Config, Recorder};
use rtrec_host::tools;
use serde_json::{json, Value as Json};

mod common;
use common::{rtrec, show, Rng};

const INSTALL: &str = "python3 -m pip install numpy pandas mcap polars duckdb jsonschema pyarrow";
/// One round per layout type at least: round K's first field is of type
/// `TYPES[K]`, so every type is drawn whatever the seed.
const ROUNDS: u64 = TYPES.len() as u64;

/// A layout type: its named spelling, `struct` code, size and NumPy type.
struct Ty {
    named: &'static str,
    code: char,
    size: usize,
    numpy: &'static str,
}

const TYPES: [Ty; 13] = [
    Ty {
        named: "u8",
        code: 'B',
        size: 1,
        numpy: "u1",
    },
    Ty {
        named: "i8",
        code: 'b',
        size: 1,
        numpy: "i1",
    },
    Ty {
        named: "u16",
        code: 'H',
        size: 2,
        numpy: "u2",
    },
    Ty {
        named: "i16",
        code: 'h',
        size: 2,
        numpy: "i2",
    },
    Ty {
        named: "u32",
        code: 'I',
        size: 4,
        numpy: "u4",
    },
    Ty {
        named: "i32",
        code: 'i',
        size: 4,
        numpy: "i4",
    },
    Ty {
        named: "u64",
        code: 'Q',
        size: 8,
        numpy: "u8",
    },
    Ty {
        named: "i64",
        code: 'q',
        size: 8,
        numpy: "i8",
    },
    Ty {
        named: "f32",
        code: 'f',
        size: 4,
        numpy: "f4",
    },
    Ty {
        named: "f64",
        code: 'd',
        size: 8,
        numpy: "f8",
    },
    Ty {
        named: "bool",
        code: '?',
        size: 1,
        numpy: "b1",
    },
    // Text: `5s` in `struct` notation (one field of 5 bytes).
    Ty {
        named: "s5",
        code: 's',
        size: 5,
        numpy: "S5",
    },
    // IEEE binary16: `e` in `struct` notation.
    Ty {
        named: "f16",
        code: 'e',
        size: 2,
        numpy: "f2",
    },
];

/// A random layout: its spec, the type of each field and its array
/// length if it is one (Err: a pad of that many bytes), big-endian or not.
struct Layout {
    spec: String,
    fields: Vec<Result<(&'static Ty, Option<usize>), usize>>,
    big: bool,
}

impl Layout {
    /// A random layout whose first field is of type `first`.
    fn random(rng: &mut Rng, first: &'static Ty) -> Layout {
        let big = rng.below(2) == 0;
        let named = rng.below(2) == 0;
        let mut fields = vec![Ok((first, None))];
        for _ in 0..rng.below(6) {
            fields.push(if rng.below(8) == 0 {
                Err(1 + rng.below(3) as usize)
            } else {
                // Arrays in the named spelling only (`struct` has none).
                let array = (named && rng.below(4) == 0).then(|| 1 + rng.below(4) as usize);
                Ok((&TYPES[rng.below(TYPES.len() as u64) as usize], array))
            });
        }
        let mut spec = String::from(if big { ">" } else { "<" });
        for (i, f) in fields.iter().enumerate() {
            match (named, f) {
                (true, Ok((t, None))) => spec.push_str(&format!("c{i}:{},", t.named)),
                (true, Ok((t, Some(n)))) => spec.push_str(&format!("c{i}:{}[{n}],", t.named)),
                (true, Err(n)) => spec.push_str(&format!("_p{i}:pad{n},")),
                (false, Ok((t, _))) if t.code == 's' => spec.push_str(&format!("{}s", t.size)),
                (false, Ok((t, _))) => spec.push(t.code),
                (false, Err(n)) => spec.push_str(&format!("{n}x")),
            }
        }
        let spec = spec.trim_end_matches(',').to_string();
        Layout { spec, fields, big }
    }

    fn size(&self) -> usize {
        self.fields
            .iter()
            .map(|f| f.map_or_else(|n| n, |(t, a)| t.size * a.unwrap_or(1)))
            .sum()
    }

    /// The columns' names as the export names them, with NumPy types.
    fn columns(&self) -> Vec<(String, &'static str)> {
        let named = self.spec.contains(':');
        let mut k = 0;
        let mut out = Vec::new();
        for (i, f) in self.fields.iter().enumerate() {
            match f {
                // An array's columns: NAME_0, NAME_1, … (docs/export.md).
                Ok((t, Some(n))) => out.extend((0..*n).map(|j| (format!("c{i}_{j}"), t.numpy))),
                Ok((t, None)) => {
                    out.push((
                        if named {
                            format!("c{i}")
                        } else {
                            format!("f{k}")
                        },
                        t.numpy,
                    ));
                    k += 1;
                }
                Err(_) => {}
            }
        }
        out
    }

    /// A random record and the canonical text of each of its values.
    fn record(&self, rng: &mut Rng) -> (Vec<u8>, Vec<String>) {
        let (mut bytes, mut values) = (Vec::new(), Vec::new());
        for f in &self.fields {
            match f {
                Err(n) => bytes.extend((0..*n).map(|_| rng.below(256) as u8)),
                Ok((t, array)) if t.code == 's' => {
                    for _ in 0..array.unwrap_or(1) {
                        let text = random_text(rng, t.size);
                        values.push(text.clone());
                        let mut b = text.into_bytes();
                        b.resize(t.size, 0);
                        bytes.extend(b);
                    }
                }
                Ok((t, array)) => {
                    for _ in 0..array.unwrap_or(1) {
                        let le = value_bits(t, rng).to_le_bytes();
                        values.push(canon(t, &le[..t.size]));
                        let mut b = le[..t.size].to_vec();
                        if self.big {
                            b.reverse();
                        }
                        bytes.extend(b);
                    }
                }
            }
        }
        (bytes, values)
    }
}

/// Random UTF-8 text of at most `max` bytes, often what CSV and type
/// guessing get wrong: empty, a comma, a quote, a line break, digits with a
/// leading zero, a two-byte character, words a reader takes for others.
fn random_text(rng: &mut Rng, max: usize) -> String {
    const PIECES: [&str; 12] = [
        "", ",", "\"", "\n", "007", "\u{e9}", "a", "NaN", "true", " ", "1e5", "x;y",
    ];
    let mut s = String::new();
    for _ in 0..rng.below(4) {
        let p = PIECES[rng.below(PIECES.len() as u64) as usize];
        if s.len() + p.len() <= max {
            s.push_str(p);
        }
    }
    s
}

/// Random bits for a value of `t`, often one of the values exports get
/// wrong: NaN (quiet, signalling, negative), ±inf, subnormals, ±0, the
/// largest, 0.1 (which an f32 prints widened), integer extremes.
fn value_bits(t: &Ty, rng: &mut Rng) -> u64 {
    if t.named == "bool" {
        // A bool's only bytes; any other is refused (tests/export_tables.rs).
        return rng.below(2);
    }
    let random = rng.below(u64::MAX) ^ (rng.below(u64::MAX) << 1);
    let special: &[u64] = match t.named {
        "f32" => &[
            0x7fc0_0000,
            0xffc0_0001,
            0x7f80_0001,
            0x7f80_0000,
            0xff80_0000,
            1,
            0x007f_ffff,
            0x8000_0001,
            0x8000_0000,
            0,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x0080_0000,
            0x3dcc_cccd,
            0x3f80_0000,
            0x15ae_43fd,
        ],
        "f16" => &[
            0x7e00, 0xfe01, 0x7c01, 0x7c00, 0xfc00, 1, 0x03ff, 0x8001, 0x8000, 0, 0x7bff, 0xfbff,
            0x0400, 0x2e66, 0x3c00, 0x3555,
        ],
        "f64" => &[
            0x7ff8_0000_0000_0000,
            0xfff8_0000_0000_0001,
            0x7ff0_0000_0000_0001,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            1,
            0x000f_ffff_ffff_ffff,
            0x8000_0000_0000_0001,
            0x8000_0000_0000_0000,
            0,
            0x7fef_ffff_ffff_ffff,
            0x7fe1_ccf3_85eb_c8a0,
            0x3fb9_9999_9999_999a,
            0x4330_0000_0000_0001,
        ],
        _ => &[0, u64::MAX, 1 << 63, (1 << 63) - 1, 1, (1 << 60) + 1],
    };
    let bits = if rng.below(2) == 0 {
        special[rng.below(special.len() as u64) as usize]
    } else {
        random
    };
    // Integers: the extremes of this width (the top bit of the width set
    // or not), not only of 64 bits.
    match (t.numpy.as_bytes()[0], bits) {
        (b'u' | b'i', b) if b == 1 << 63 => 1 << (8 * t.size - 1),
        (b'u' | b'i', b) if b == (1 << 63) - 1 => (1 << (8 * t.size - 1)) - 1,
        _ => bits,
    }
}

/// The canonical text of a value from its little-endian bytes, as the
/// reader script makes it: an integer in decimal, a float's bits in hex at
/// its width, NaN as "nan".
fn canon(t: &Ty, le: &[u8]) -> String {
    let mut raw = [0u8; 8];
    raw[..le.len()].copy_from_slice(le);
    let u = u64::from_le_bytes(raw);
    match t.named {
        "f16" if u & 0x7c00 == 0x7c00 && u & 0x03ff != 0 => "nan".into(),
        "f16" => format!("{u:04x}"),
        "f32" if f32::from_bits(u as u32).is_nan() => "nan".into(),
        "f64" if f64::from_bits(u).is_nan() => "nan".into(),
        "f32" => format!("{u:08x}"),
        "f64" => format!("{u:016x}"),
        "bool" => (u == 1).to_string(),
        n if n.starts_with('i') => {
            let shift = 64 - 8 * t.size as u32;
            (((u << shift) as i64) >> shift).to_string()
        }
        _ => u.to_string(),
    }
}

/// One round: its layout, records (None: lost) and export files.
struct Round {
    layout: Layout,
    slots: Vec<Option<Vec<String>>>,
    case: Json,
}

/// Records round `k` into `root/rK` and exports it in every format.
fn round(rng: &mut Rng, root: &Path, k: u64) -> Round {
    let layout = Layout::random(rng, &TYPES[k as usize % TYPES.len()]);
    let dir = root.join(format!("r{k}"));
    std::fs::create_dir(&dir).unwrap();
    let n = 1 + rng.below(30);
    let cfg = Config {
        max_record: layout.size(),
        file_size: 1 << 20,
        ..Config::default()
    };
    let mut rec = Recorder::create(&dir, cfg).unwrap();
    let mut slots = Vec::new();
    for i in 0..n {
        // Gaps at the start (every third round), at the end (the next)
        // and anywhere; a record one byte too large is a stored loss.
        let lost = (k % 3 == 0 && i == 0) || (k % 3 == 1 && i == n - 1) || rng.below(6) == 0;
        let (mut bytes, values) = layout.record(rng);
        // At least one record is kept: a recording of losses alone has no layout to check.
        let last_chance = i + 1 == n && slots.iter().all(Option::is_none);
        if lost && !last_chance {
            bytes.push(0);
            slots.push(None);
        } else {
            slots.push(Some(values));
        }
        let _ = rec.record(&bytes);
    }
    let summary = rec.finish().unwrap();
    let lost = slots.iter().filter(|s| s.is_none()).count() as u64;
    assert_eq!(summary.records_dropped, lost, "layout {}", layout.spec);
    let mut case = json!({
        "dir": dir, "layout": layout.spec, "columns": layout.columns(),
    });
    // Arrow IPC's file (.arrow) and stream (.arrows) where the build has
    // them (feature `arrow`).
    let arrow: &[&str] = if cfg!(feature = "arrow") {
        &["arrow", "arrow-stream"]
    } else {
        &[]
    };
    for format in ["csv", "jsonl", "mcap", "parquet"].iter().chain(arrow) {
        let out = root.join(format!("r{k}.{format}"));
        let o = rtrec(&[
            "export",
            "--format",
            *format,
            "--allow-gaps",
            "--layout",
            &layout.spec,
            dir.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}: {}", layout.spec, show(&o));
        case[*format] = json!(out);
    }
    Round {
        layout,
        slots,
        case,
    }
}

fn have_python_modules() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy, pandas, mcap"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What one reader got, or why it differs from the recording.
fn compare(reader: &str, got: &Json, r: &Round) -> Result<(), String> {
    let want: Vec<(u64, &Vec<String>)> = (0u64..)
        .zip(&r.slots)
        .filter_map(|(s, v)| v.as_ref().map(|v| (s, v)))
        .collect();
    if let Some(e) = got.get("error") {
        return Err(format!(
            "{reader} failed on layout '{}': {e}",
            r.layout.spec
        ));
    }
    let recs = got[0].as_array().ok_or(format!("{reader}: {got}"))?;
    for (i, row) in recs.iter().enumerate() {
        let (seq, vals) = (row[0].as_u64(), &row[1]);
        let Some((ws, wv)) = want.get(i) else {
            return Err(format!("{reader}: record {row} was not recorded"));
        };
        if seq != Some(*ws) || vals != &json!(wv) {
            return Err(format!(
                "{reader}: seq {ws} of layout '{}' recorded {wv:?}, read back {row}",
                r.layout.spec
            ));
        }
    }
    if recs.len() != want.len() {
        return Err(format!(
            "{reader}: {} records of {}",
            recs.len(),
            want.len()
        ));
    }
    let mut lost = Vec::new();
    for g in got[1].as_array().unwrap() {
        let (first, count) = (g[0].as_u64().unwrap(), g[1].as_u64().unwrap());
        lost.extend(first..first + count);
    }
    let want_lost: Vec<u64> = (0u64..)
        .zip(&r.slots)
        .filter(|(_, v)| v.is_none())
        .map(|(s, _)| s)
        .collect();
    if lost != want_lost {
        return Err(format!("{reader}: gaps at {lost:?}, lost {want_lost:?}"));
    }
    Ok(())
}

#[test]
fn every_value_of_random_layouts_reads_back_bit_exact_from_every_export() {
    if !have_python_modules() {
        tools::skip(
            "every_value_of_random_layouts_reads_back_bit_exact_from_every_export",
            &format!("needs python3 with numpy, pandas and mcap ({INSTALL})"),
        );
        return;
    }
    let seed = std::env::var("RTREC_EXACT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x45_0001u64);
    let mut rng = Rng::from_env_or("RTREC_EXACT_SEED", seed);
    let tmp = tempfile::tempdir().unwrap();
    let rounds: Vec<Round> = (0..ROUNDS)
        .map(|k| round(&mut rng, tmp.path(), k))
        .collect();
    let cases = tmp.path().join("cases.json");
    let all: Vec<&Json> = rounds.iter().map(|r| &r.case).collect();
    std::fs::write(&cases, serde_json::to_vec(&all).unwrap()).unwrap();
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new("python3")
        .arg(checkout.join("tests").join("export_exact_read.py"))
        .arg(&cases)
        .env("PYTHONPATH", checkout.join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RTREC", env!("CARGO_BIN_EXE_rtrec"))
        .output()
        .unwrap();
    assert!(o.status.success(), "the readers failed: {}", show(&o));
    let got: Vec<BTreeMap<String, Json>> = serde_json::from_slice(&o.stdout).unwrap();
    let (mut bad, mut missing) = (Vec::new(), Vec::new());
    for (r, readers) in rounds.iter().zip(&got) {
        for (reader, result) in readers {
            match result.as_str() {
                Some(why) => missing.push(format!("{reader}: {why}")),
                None => bad.extend(compare(reader, result, r).err()),
            }
        }
    }
    assert!(
        bad.is_empty(),
        "altered values (replay: RTREC_EXACT_SEED={seed}):\n{}",
        bad.join("\n")
    );
    missing.dedup();
    if !missing.is_empty() {
        tools::skip(
            "every_value_of_random_layouts_reads_back_bit_exact_from_every_export's other readers",
            &format!("{} ({INSTALL})", missing.join("; ")),
        );
    }
}
