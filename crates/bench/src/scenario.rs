//! The scenarios as data: one table of every case `rtrec bench` runs —
//! name, description, the engine strategies it composes, the background
//! loads, the flusher setting, and the published figure where there is one.
//! `rtrec bench --list` prints it; a test validates the whole table against
//! `docs/studies.md`.
//!
//! Every recording case is an [`rtrec_engine::Config`] built by
//! [`Scenario::config`]: the study's factors are the engine's named
//! strategies (WPRE = `alloc fallocate`, WAPPEND = `alloc append`, SDATA =
//! `flush sfr`, SALL = `flush fdatasync`), never a separate code path.

use rtrec_engine::{Alloc, Config, Flush, Framing, Io, Mode};
use serde::{Deserialize, Serialize};

use crate::protocol::Protocol;
pub use crate::study::Study;

/// Which engine configuration a recording case uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategies {
    /// The study's factors on the `direct` path (the caller's thread calls
    /// `write()`, timed as in the paper) with `raw` framing (the byte
    /// stream is exactly the study's 16 KiB writes).
    Paper {
        /// WPRE (`fallocate`) or WAPPEND (`append`).
        alloc: Alloc,
        /// SDATA (`sfr`) or SALL (`fdatasync`).
        flush: Flush,
    },
    /// `Config::default()`: rtrec's own design, whatever it currently is.
    EngineDefault,
    /// `Config::default()` with another write back-end (`--io`): the
    /// RTREC-DIRECT and RTREC-URING cases.
    Backend(Io),
}

/// What one period of a case does, and so what its latency times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// Record one record through the engine; the latency is its `write()`
    /// (and, in ring mode, also `record()` on the producer).
    Write(Strategies),
    /// `fallocate()` of the file size into a fresh file (S2).
    Fallocate,
    /// A memcpy of the record size instead of `write()`: the noise floor.
    Memcpy,
    /// `write()` of the record size into a file on a tmpfs of the case's
    /// own: the page-cache floor (a copy into the page cache, no
    /// filesystem journal, no writeback).
    PageCache,
}

impl Timed {
    /// The name of the timed call, as stored in the JSON (`timed_call`).
    pub fn call_name(self) -> &'static str {
        match self {
            Timed::Write(_) => "write",
            Timed::Fallocate => "fallocate",
            Timed::Memcpy => "memcpy",
            Timed::PageCache => "pagecache-write",
        }
    }
}

/// The kernel flusher during a case (S1's FON / FOFF).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flusher {
    /// The `vm.dirty_*` values found at start (FON).
    On,
    /// `vm.dirty_ratio=100`, `vm.dirty_background_ratio=100`,
    /// `vm.dirty_expire_centisecs=300000` (FOFF).
    Off,
}

/// A background load, run as a separate process on other files of the
/// same filesystem (see [`crate::bgload`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Load {
    /// From a 100 MB file, `ftruncate()` 256 KiB off every period,
    /// refilling with `fallocate()` when empty (S1's BGTRUNC).
    Trunc,
    /// Every period `fallocate()` 100 MB into a fresh file and remove the
    /// previous one (with [`Load::Trunc`], S1's BGALL).
    Falloc,
    /// Read another 100 MB file sequentially in 2 MiB records, dropping
    /// its cache before each pass (S1 Table 3).
    Read,
    /// As [`Load::Trunc`] with an `fsync()` after every `ftruncate()`
    /// (S2's "ftruncate + fsync on another file").
    TruncSync,
    /// Buffered overwrites of a large file as fast as they go, as S3's
    /// `dd` does; with a window, bounded by `sync_file_range()` as rtrec's
    /// flush window bounds a recording.
    Stream,
    /// S4's interfering reader: sequential reads of the request size,
    /// direct or buffered, as fast as they go.
    JobRead,
    /// S4's interfering writer: sequential overwrites of the request size,
    /// direct or buffered, as fast as they go.
    JobWrite,
}

impl Load {
    /// Every load, in documentation order, with its name.
    pub const ALL: [(Load, &'static str); 7] = [
        (Load::Trunc, "trunc"),
        (Load::Falloc, "falloc"),
        (Load::Read, "read"),
        (Load::TruncSync, "trunc-sync"),
        (Load::Stream, "stream"),
        (Load::JobRead, "job-read"),
        (Load::JobWrite, "job-write"),
    ];

    /// The name on the `__bgload` command line and in the JSON.
    pub fn name(self) -> &'static str {
        Load::ALL
            .iter()
            .find(|(l, _)| *l == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }

    /// Parses [`Load::name`].
    pub fn from_name(s: &str) -> Option<Load> {
        Load::ALL.iter().find(|(_, n)| *n == s).map(|(l, _)| *l)
    }
}

/// A published figure: the latency of the timed call in µs, as printed in
/// the study (any of them may be missing), and for Table 3 the reader's
/// throughput as a percentage of its throughput alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    /// Where it is published.
    pub source: &'static str,
    /// Minimum, µs.
    pub min_us: Option<u64>,
    /// Average, µs.
    pub avg_us: Option<u64>,
    /// Maximum, µs.
    pub max_us: Option<u64>,
    /// The background reader's throughput during the case, % of alone.
    pub reader_throughput_pct: Option<u32>,
}

/// One case of the bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// Name, exactly as published where it is.
    pub name: &'static str,
    /// The study it reproduces.
    pub study: Study,
    /// One sentence.
    pub description: &'static str,
    /// What each period does.
    pub timed: Timed,
    /// FON or FOFF.
    pub flusher: Flusher,
    /// Background loads, started before and stopped after each set.
    pub loads: &'static [Load],
    /// The published figure, if any.
    pub published: Option<Published>,
    /// The case whose maximum this one's is compared with ("max ÷ ref").
    pub reference: Option<&'static str>,
}

const fn s1(min: u64, max: u64, avg: u64) -> Option<Published> {
    Some(Published {
        source: "S1 Table 1",
        min_us: Some(min),
        avg_us: Some(avg),
        max_us: Some(max),
        reader_throughput_pct: None,
    })
}

const fn paper(alloc: Alloc, flush: Flush) -> Timed {
    Timed::Write(Strategies::Paper { alloc, flush })
}

const WPRE: Alloc = Alloc::Fallocate;
const WAPPEND: Alloc = Alloc::Append;
const SDATA: Flush = Flush::Sfr;
const SALL: Flush = Flush::Fdatasync;
const BGTRUNC: &[Load] = &[Load::Trunc];
const BGALL: &[Load] = &[Load::Trunc, Load::Falloc];
const NO_LOAD: &[Load] = &[];
const BGREAD: &[Load] = &[Load::Read];

/// The table. Order is the order of the run and of the output.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "NOISE-FLOOR",
        study: Study::Platform,
        description: "the same timing loop copying the record in memory instead of write(): what the platform itself adds",
        timed: Timed::Memcpy,
        flusher: Flusher::On,
        loads: NO_LOAD,
        published: None,
        reference: None,
    },
    Scenario {
        name: "PAGECACHE-FLOOR",
        study: Study::Platform,
        description: "the same timing loop calling write() into a file on a tmpfs of its own: the minimum needed to copy into the page cache, with no filesystem journal and no writeback",
        timed: Timed::PageCache,
        flusher: Flusher::On,
        loads: NO_LOAD,
        published: None,
        reference: None,
    },
    Scenario {
        name: "NONE",
        study: Study::S1Table1,
        description: "conventional design: append writes, fdatasync() every 2 MB from a background thread, default flusher (WAPPEND-SALL-FON)",
        timed: paper(WAPPEND, SALL),
        flusher: Flusher::On,
        loads: NO_LOAD,
        published: s1(141, 4_454, 259),
        reference: Some("ALL"),
    },
    Scenario {
        name: "ALL",
        study: Study::S1Table1,
        description: "proposed design: fallocate() first, sync_file_range() every 2 MB, flusher off (WPRE-SDATA-FOFF)",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::Off,
        loads: NO_LOAD,
        published: s1(89, 309, 176),
        reference: None,
    },
    Scenario {
        name: "ALL-BGTRUNC",
        study: Study::S1Table1,
        description: "ALL with ftruncate() of another file in the background",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::Off,
        loads: BGTRUNC,
        published: s1(88, 9_178, 176),
        reference: Some("ALL"),
    },
    Scenario {
        name: "ALL-BGALL",
        study: Study::S1Table1,
        description: "ALL with ftruncate() and fallocate() of other files in the background",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::Off,
        loads: BGALL,
        published: s1(88, 12_482, 189),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WAPPEND-SDATA-FOFF",
        study: Study::S1Table1,
        description: "ALL with append writes instead of pre-allocation",
        timed: paper(WAPPEND, SDATA),
        flusher: Flusher::Off,
        loads: NO_LOAD,
        published: s1(142, 107_546, 298),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WAPPEND-SALL-FOFF",
        study: Study::S1Table1,
        description: "append writes, fdatasync() every 2 MB, flusher off",
        timed: paper(WAPPEND, SALL),
        flusher: Flusher::Off,
        loads: NO_LOAD,
        published: s1(140, 4_821, 275),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WPRE-SALL-FOFF",
        study: Study::S1Table1,
        description: "ALL with fdatasync() instead of sync_file_range()",
        timed: paper(WPRE, SALL),
        flusher: Flusher::Off,
        loads: NO_LOAD,
        published: s1(89, 486, 173),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WPRE-SALL-FOFF-BGTRUNC",
        study: Study::S1Table1,
        description: "WPRE-SALL-FOFF with ftruncate() of another file in the background",
        timed: paper(WPRE, SALL),
        flusher: Flusher::Off,
        loads: BGTRUNC,
        published: s1(90, 9_334, 182),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WPRE-SALL-FOFF-BGALL",
        study: Study::S1Table1,
        description: "WPRE-SALL-FOFF with ftruncate() and fallocate() of other files in the background",
        timed: paper(WPRE, SALL),
        flusher: Flusher::Off,
        loads: BGALL,
        published: s1(87, 13_431, 178),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WPRE-SDATA-FON",
        study: Study::S1Table1,
        description: "ALL with the kernel flusher on (default vm.dirty_* values)",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::On,
        loads: NO_LOAD,
        published: s1(90, 361, 178),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WPRE-SDATA-FON-BGTRUNC",
        study: Study::S1Table1,
        description: "WPRE-SDATA-FON with ftruncate() of another file in the background",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::On,
        loads: BGTRUNC,
        published: s1(88, 13_273, 177),
        reference: Some("ALL"),
    },
    Scenario {
        name: "WPRE-SDATA-FON-BGALL",
        study: Study::S1Table1,
        description: "WPRE-SDATA-FON with ftruncate() and fallocate() of other files in the background",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::On,
        loads: BGALL,
        published: s1(88, 121_756, 201),
        reference: Some("ALL"),
    },
    Scenario {
        name: "NONE-BGREAD",
        study: Study::S1Table3,
        description: "NONE with another 100 MB file read sequentially in 2 MB records in the background",
        timed: paper(WAPPEND, SALL),
        flusher: Flusher::On,
        loads: &[Load::Read],
        published: Some(Published {
            source: "S1 Table 3, Fig. 5",
            min_us: Some(142),
            avg_us: Some(392),
            max_us: Some(355_958),
            reader_throughput_pct: Some(79),
        }),
        reference: Some("NONE"),
    },
    Scenario {
        name: "ALL-BGREAD",
        study: Study::S1Table3,
        description: "ALL with another 100 MB file read sequentially in 2 MB records in the background",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::Off,
        loads: &[Load::Read],
        published: Some(Published {
            source: "S1 Table 3, Fig. 5",
            min_us: Some(88),
            avg_us: Some(179),
            max_us: Some(418),
            reader_throughput_pct: Some(78),
        }),
        reference: Some("ALL"),
    },
    Scenario {
        name: "FALLOCATE",
        study: Study::S2,
        description: "latency of fallocate() of 100 MB into a fresh file, flusher off",
        timed: Timed::Fallocate,
        flusher: Flusher::Off,
        loads: NO_LOAD,
        published: Some(Published {
            source: "S2 Table 1",
            min_us: None,
            avg_us: Some(141),
            max_us: Some(4_299),
            reader_throughput_pct: None,
        }),
        reference: None,
    },
    Scenario {
        name: "FALLOCATE-BGTRUNCSYNC",
        study: Study::S2,
        description: "FALLOCATE with ftruncate() + fsync() of another file in the background",
        timed: Timed::Fallocate,
        flusher: Flusher::Off,
        loads: &[Load::TruncSync],
        published: Some(Published {
            source: "S2 Table 1",
            min_us: None,
            avg_us: Some(813),
            max_us: Some(208_440),
            reader_throughput_pct: None,
        }),
        reference: Some("FALLOCATE"),
    },
    Scenario {
        name: "ALL-BGTRUNCSYNC",
        study: Study::S2,
        description: "ALL with ftruncate() + fsync() of another file in the background",
        timed: paper(WPRE, SDATA),
        flusher: Flusher::Off,
        loads: &[Load::TruncSync],
        published: Some(Published {
            source: "S2 Table 1",
            min_us: None,
            avg_us: Some(181),
            max_us: Some(1_043),
            reader_throughput_pct: None,
        }),
        reference: Some("ALL"),
    },
    Scenario {
        name: "RTREC",
        study: Study::Rtrec,
        description: "rtrec's default configuration (ring mode): write() on the writer thread, record() on the producer; default flusher",
        timed: Timed::Write(Strategies::EngineDefault),
        flusher: Flusher::On,
        loads: NO_LOAD,
        published: None,
        reference: Some("ALL"),
    },
    floor(BGTRUNC, "NOISE-FLOOR-BGTRUNC", "NOISE-FLOOR with ftruncate() of another file in the background: the floor RTREC-BGTRUNC's record() is judged against"),
    Scenario {
        name: "RTREC-BGTRUNC",
        study: Study::Rtrec,
        description: "RTREC with ftruncate() of another file in the background",
        timed: Timed::Write(Strategies::EngineDefault),
        flusher: Flusher::On,
        loads: BGTRUNC,
        published: None,
        reference: Some("RTREC"),
    },
    floor(BGALL, "NOISE-FLOOR-BGALL", "NOISE-FLOOR with ftruncate() and fallocate() of other files in the background: the floor RTREC-BGALL's record() is judged against"),
    Scenario {
        name: "RTREC-BGALL",
        study: Study::Rtrec,
        description: "RTREC with ftruncate() and fallocate() of other files in the background",
        timed: Timed::Write(Strategies::EngineDefault),
        flusher: Flusher::On,
        loads: BGALL,
        published: None,
        reference: Some("RTREC"),
    },
    floor(BGREAD, "NOISE-FLOOR-BGREAD", "NOISE-FLOOR with a sequential reader of another file in the background: the floor RTREC-BGREAD's record() is judged against"),
    Scenario {
        name: "RTREC-BGREAD",
        study: Study::Rtrec,
        description: "RTREC with a sequential reader of another file in the background",
        timed: Timed::Write(Strategies::EngineDefault),
        flusher: Flusher::On,
        loads: BGREAD,
        published: None,
        reference: Some("RTREC"),
    },
    backend("RTREC-DIRECT", Io::Direct, NO_LOAD, "RTREC with O_DIRECT writes (--io direct): no page cache, durability points are a device cache flush"),
    backend("RTREC-DIRECT-BGTRUNC", Io::Direct, BGTRUNC, "RTREC-DIRECT with ftruncate() of another file in the background"),
    backend("RTREC-DIRECT-BGALL", Io::Direct, BGALL, "RTREC-DIRECT with ftruncate() and fallocate() of other files in the background"),
    backend("RTREC-DIRECT-BGREAD", Io::Direct, BGREAD, "RTREC-DIRECT with a sequential reader of another file in the background"),
    backend("RTREC-URING", Io::Uring, NO_LOAD, "RTREC with O_DIRECT block writes submitted through io_uring (--io uring); the latency is submit-to-complete"),
    backend("RTREC-URING-BGTRUNC", Io::Uring, BGTRUNC, "RTREC-URING with ftruncate() of another file in the background"),
    backend("RTREC-URING-BGALL", Io::Uring, BGALL, "RTREC-URING with ftruncate() and fallocate() of other files in the background"),
    backend("RTREC-URING-BGREAD", Io::Uring, BGREAD, "RTREC-URING with a sequential reader of another file in the background"),
];

/// NOISE-FLOOR under `loads`: the memcpy loop with the same background
/// loads, started and stopped around each set as for the case it is the
/// floor of ([`same_load_floor`]).
///
/// Design choice: the flusher is on (FON), as in the rtrec cases it
/// serves; its reference is the quiet NOISE-FLOOR, so its "max ÷ reference
/// max" is what the load alone does to a memcpy.
const fn floor(loads: &'static [Load], name: &'static str, description: &'static str) -> Scenario {
    Scenario {
        name,
        study: Study::Platform,
        description,
        timed: Timed::Memcpy,
        flusher: Flusher::On,
        loads,
        published: None,
        reference: Some("NOISE-FLOOR"),
    }
}

/// An rtrec case with write back-end `io`, compared with RTREC under the
/// same load (RTREC itself without one). Their own study (`--study
/// backends`), out of the default run.
const fn backend(
    name: &'static str,
    io: Io,
    loads: &'static [Load],
    description: &'static str,
) -> Scenario {
    Scenario {
        name,
        study: Study::Backends,
        description,
        timed: Timed::Write(Strategies::Backend(io)),
        flusher: Flusher::On,
        loads,
        published: None,
        reference: Some(match loads {
            [] => "RTREC",
            [Load::Trunc] => "RTREC-BGTRUNC",
            [Load::Trunc, Load::Falloc] => "RTREC-BGALL",
            _ => "RTREC-BGREAD",
        }),
    }
}

/// The names S1 Table 1 publishes, in its order.
pub const S1_TABLE1_NAMES: [&str; 12] = [
    "NONE",
    "ALL",
    "ALL-BGTRUNC",
    "ALL-BGALL",
    "WAPPEND-SDATA-FOFF",
    "WAPPEND-SALL-FOFF",
    "WPRE-SALL-FOFF",
    "WPRE-SALL-FOFF-BGTRUNC",
    "WPRE-SALL-FOFF-BGALL",
    "WPRE-SDATA-FON",
    "WPRE-SDATA-FON-BGTRUNC",
    "WPRE-SDATA-FON-BGALL",
];

/// The scenario named `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// The noise floor run under exactly `loads` (NOISE-FLOOR-BGALL for
/// BGALL's two loads); `None` without loads or when no floor is defined
/// for them (BGTRUNCSYNC: no case that times `record()` runs under it).
pub fn same_load_floor(loads: &[Load]) -> Option<&'static Scenario> {
    if loads.is_empty() {
        return None;
    }
    SCENARIOS
        .iter()
        .find(|s| s.timed == Timed::Memcpy && s.loads == loads)
}

impl Scenario {
    /// True for a noise floor under a background load
    /// (NOISE-FLOOR-BGTRUNC…): a case that runs because a case under that
    /// load runs ([`Scenario::needs_same_load_floor`]).
    pub fn is_loaded_floor(&self) -> bool {
        self.timed == Timed::Memcpy && !self.loads.is_empty()
    }

    /// True for a case whose `record()` is judged against the noise floor
    /// under its own loads: rtrec's own cases (ring mode, `record()` timed
    /// on the producer) under a load that has a floor. A plan adds that
    /// floor before the case when it is not selected already.
    ///
    /// Design choice: the studies' cases (inline `write()`, no `record()`)
    /// do not pull a floor in; when one runs they are divided by it too.
    pub fn needs_same_load_floor(&self) -> bool {
        matches!(
            self.timed,
            Timed::Write(Strategies::EngineDefault | Strategies::Backend(_))
        ) && same_load_floor(self.loads).is_some()
    }

    /// The engine configuration of a recording case under `protocol`
    /// (`None` for the fallocate and memcpy cases).
    ///
    /// The study's cases: `inline` mode, `raw` framing, the case's `alloc`
    /// and `flush`, no durability sync. rtrec's cases: `Config::default()` as it is. Both get the
    /// workload's flush interval and file size, and keep every `write()`
    /// latency.
    pub fn config(&self, protocol: &Protocol) -> Option<Config> {
        let Timed::Write(strategies) = self.timed else {
            return None;
        };
        let base = match strategies {
            // The study had no periodic durability sync: only its flush
            // strategy pushes data to storage.
            Strategies::Paper { alloc, flush } => Config {
                mode: Mode::Inline,
                alloc,
                flush,
                framing: Framing::Raw,
                sync_every_ns: 0,
                ..Config::default()
            },
            Strategies::EngineDefault => Config::default(),
            Strategies::Backend(io) => Config {
                io,
                ..Config::default()
            },
        };
        Some(Config {
            flush_every: protocol.flush_every_bytes,
            file_size: protocol.file_bytes,
            // With --ring, records are exactly --size as with `rtrec record
            // --size` (a ring of a few small records can then be asked for).
            max_record: match protocol.ring_bytes {
                Some(_) => protocol.record_bytes as usize,
                None => base.max_record.max(protocol.record_bytes as usize),
            },
            ring_bytes: protocol.ring_bytes.map_or(base.ring_bytes, |b| b as usize),
            keep_write_samples: protocol.writes as usize,
            prefix: "bench".into(),
            ..base
        })
    }

    /// The strategies in words, for `--list` (`direct append fdatasync raw`).
    pub fn strategies_text(&self) -> String {
        match self.timed {
            Timed::Write(Strategies::Paper { alloc, flush }) => {
                format!("direct, alloc {alloc}, flush {flush}, raw")
            }
            Timed::Write(Strategies::EngineDefault) => {
                let d = Config::default();
                format!(
                    "default: {}, alloc {}, flush {}, {}",
                    d.mode, d.alloc, d.flush, d.framing
                )
            }
            Timed::Write(Strategies::Backend(io)) => {
                let d = Config::default();
                format!(
                    "default with --io {io}: {}, alloc {}, {}",
                    d.mode, d.alloc, d.framing
                )
            }
            Timed::Fallocate => "fallocate() of the file size, fresh file each call".to_string(),
            Timed::Memcpy => "memcpy of the record size".to_string(),
            Timed::PageCache => "write() of the record size to a file on tmpfs".to_string(),
        }
    }

    /// The loads in the study's words (`BGTRUNC`, `BGALL`, `BGREAD`,
    /// `BGTRUNCSYNC`, or `-`).
    pub fn loads_text(&self) -> &'static str {
        match self.loads {
            [] => "-",
            [Load::Trunc] => "BGTRUNC",
            [Load::Trunc, Load::Falloc] => "BGALL",
            [Load::Read] => "BGREAD",
            [Load::TruncSync] => "BGTRUNCSYNC",
            _ => "other",
        }
    }
}
