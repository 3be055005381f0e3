//! Device profiles as data: one JSON object per device, its sizes and
//! durations written in rtrec's units grammar (`"300us"`, `"40MB"`), parsed
//! and checked into a [`Profile`]. The shipped profiles (`profiles/*.json`
//! in the repository) are compiled in and found by name; anything else is
//! read from a file. docs/devices.md documents the format and how each
//! shipped profile was calibrated.
//!
//! Design choice: strings in the units grammar rather than bare numbers, so
//! a profile reads like the rest of rtrec's input (`"15ms"`, never `15000`
//! whose unit must be guessed), and a wrong unit is one clear sentence.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The profiles shipped in the repository, by name: (name, JSON).
pub const BUILTIN: [(&str, &str); 4] = [
    ("emmc", include_str!("../../../profiles/emmc.json")),
    ("sd", include_str!("../../../profiles/sd.json")),
    ("hdd-5400", include_str!("../../../profiles/hdd-5400.json")),
    ("native", include_str!("../../../profiles/native.json")),
];

/// A profile that cannot be used, as one sentence.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProfileError {
    /// Not a shipped name and no such file.
    #[error("'{0}' is neither a device profile ({names}) nor a readable file: {1}", names = builtin_names())]
    NotFound(String, String),
    /// The JSON does not parse or misses a field.
    #[error("the device profile {0} is not valid: {1}")]
    Syntax(String, String),
    /// A field parses but its value cannot be used.
    #[error("the device profile {0} is not valid: {1}")]
    Value(String, String),
}

fn builtin_names() -> String {
    BUILTIN.map(|(n, _)| n).join(", ")
}

/// A profile as written (every size and duration a units-grammar string).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
    /// Short name (`emmc`), shown in the bench table and JSON.
    pub name: String,
    /// What device this is.
    pub description: String,
    /// How the figures were obtained (published source, or `rtrec device
    /// probe` with the date and directory).
    pub calibration: String,
    /// Hardware queues. Only 1 is served (eMMC without command queuing and
    /// SD cards have one); larger values are refused.
    pub queues: u32,
    /// Fixed cost of a read request (duration).
    pub read_latency: String,
    /// Fixed cost of a write request (duration).
    pub write_latency: String,
    /// Bytes per second read (size; `0B`: no limit).
    pub read_bandwidth: String,
    /// Bytes per second written (size; `0B`: no limit).
    pub write_bandwidth: String,
    /// Extra cost of a request that does not start where the previous one
    /// ended (duration; a disk's seek plus rotation).
    pub seek: String,
    /// Cost of a cache flush (`fsync` reaching the device; duration).
    pub flush: String,
    /// Cost of every `flush_tail_every`-th flush instead (duration).
    pub flush_tail: String,
    /// Which flushes cost `flush_tail` (0: none).
    pub flush_tail_every: u32,
    /// Bytes written between garbage-collection pauses (size; `0B`: never).
    pub gc_every: String,
    /// Length of a garbage-collection pause (duration).
    pub gc_pause: String,
    /// Volatile write cache (size; `0B`, the default: none, every write
    /// costs `write_bandwidth`). With a cache, writes enter it at
    /// `cache_bandwidth` and it drains to the medium at `write_bandwidth`;
    /// a write finding it full waits for room, and a flush waits until it
    /// is empty.
    #[serde(default = "zero_size")]
    pub cache: String,
    /// Bytes per second into the cache: the bus rate (size; `0B`: no
    /// limit). Used only with `cache`.
    #[serde(default = "zero_size")]
    pub cache_bandwidth: String,
    /// The largest command the device takes (size; `0B`, the default:
    /// requests are served whole). A longer read or write is served in commands
    /// of this size, and the queue is looked at again between them, as
    /// the block layer splits at the host's `max_hw_sectors` and the I/O
    /// scheduler dispatches in between.
    #[serde(default = "zero_size")]
    pub max_request: String,
    /// In which order waiting requests are served: `sync-first` (the
    /// default; flushes and writes to ext4's journal first, then reads,
    /// then other writes, as CFQ, BFQ and mq-deadline dispatch synchronous
    /// I/O ahead of writeback) or `arrival` (first come, first served).
    #[serde(default = "sync_first")]
    pub order: String,
}

fn zero_size() -> String {
    "0B".to_string()
}

fn sync_first() -> String {
    "sync-first".to_string()
}

/// The order in which a device serves waiting requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Order {
    /// Flushes and journal writes, then reads, then other writes (with
    /// bounds so writeback is not starved).
    SyncFirst,
    /// First come, first served.
    Arrival,
}

/// A checked profile: durations in ns, sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// Short name.
    pub name: String,
    /// The file form, kept to report and to write back.
    pub file: ProfileFile,
    /// Read request cost, ns.
    pub read_latency_ns: u64,
    /// Write request cost, ns.
    pub write_latency_ns: u64,
    /// Read bandwidth, bytes/s (0: unlimited).
    pub read_bytes_per_s: u64,
    /// Write bandwidth, bytes/s (0: unlimited).
    pub write_bytes_per_s: u64,
    /// Non-sequential request cost, ns.
    pub seek_ns: u64,
    /// Flush cost, ns.
    pub flush_ns: u64,
    /// Tail flush cost, ns.
    pub flush_tail_ns: u64,
    /// Every how many flushes the tail cost applies (0: never).
    pub flush_tail_every: u32,
    /// Bytes between GC pauses (0: never).
    pub gc_every_bytes: u64,
    /// GC pause, ns.
    pub gc_pause_ns: u64,
    /// Volatile write cache, bytes (0: none).
    pub cache_bytes: u64,
    /// Rate into the cache, bytes/s (0: unlimited).
    pub cache_bytes_per_s: u64,
    /// Largest device command, bytes (0: requests served whole).
    pub max_request_bytes: u64,
    /// Serving order.
    pub order: Order,
}

/// The longest any single cost may be: one minute. A longer one is a typo
/// (`15s` for `15ms`) that would hang the machine's I/O.
const MAX_COST_NS: u64 = 60_000_000_000;

impl Profile {
    /// Parses and checks `json`; `origin` names it in errors.
    ///
    /// # Errors
    /// [`ProfileError::Syntax`] or [`ProfileError::Value`], one sentence.
    pub fn from_json(json: &str, origin: &str) -> Result<Profile, ProfileError> {
        // From the bytes: `from_slice` is the JSON reader the rest of the
        // record-only binary uses; a second one costs its board budget
        // (docs/embedded.md).
        let file: ProfileFile = serde_json::from_slice(json.as_bytes())
            .map_err(|e| ProfileError::Syntax(origin.to_string(), e.to_string()))?;
        Profile::from_file(file, origin)
    }

    /// Checks a parsed profile.
    ///
    /// # Errors
    /// [`ProfileError::Value`] naming the field.
    pub fn from_file(file: ProfileFile, origin: &str) -> Result<Profile, ProfileError> {
        let bad = |field: &str, why: String| {
            ProfileError::Value(origin.to_string(), format!("{field}: {why}"))
        };
        let dur = |field: &str, v: &str| -> Result<u64, ProfileError> {
            let ns = rtrec_units::parse_duration(v).map_err(|e| bad(field, e.to_string()))?;
            if ns > MAX_COST_NS {
                return Err(bad(field, format!("'{v}' is longer than a minute")));
            }
            Ok(ns)
        };
        let size = |field: &str, v: &str| {
            rtrec_units::parse_size(v).map_err(|e| bad(field, e.to_string()))
        };
        if file.name.is_empty() {
            return Err(bad("name", "is empty".into()));
        }
        if file.queues != 1 {
            return Err(bad(
                "queues",
                format!("{} queues are not emulated; only 1 is", file.queues),
            ));
        }
        let p = Profile {
            name: file.name.clone(),
            read_latency_ns: dur("read_latency", &file.read_latency)?,
            write_latency_ns: dur("write_latency", &file.write_latency)?,
            read_bytes_per_s: size("read_bandwidth", &file.read_bandwidth)?,
            write_bytes_per_s: size("write_bandwidth", &file.write_bandwidth)?,
            seek_ns: dur("seek", &file.seek)?,
            flush_ns: dur("flush", &file.flush)?,
            flush_tail_ns: dur("flush_tail", &file.flush_tail)?,
            flush_tail_every: file.flush_tail_every,
            gc_every_bytes: size("gc_every", &file.gc_every)?,
            gc_pause_ns: dur("gc_pause", &file.gc_pause)?,
            cache_bytes: size("cache", &file.cache)?,
            cache_bytes_per_s: size("cache_bandwidth", &file.cache_bandwidth)?,
            max_request_bytes: size("max_request", &file.max_request)?,
            order: match file.order.as_str() {
                "sync-first" => Order::SyncFirst,
                "arrival" => Order::Arrival,
                other => {
                    return Err(bad(
                        "order",
                        format!("'{other}' is neither 'sync-first' nor 'arrival'"),
                    ))
                }
            },
            file,
        };
        if p.gc_every_bytes > 0 && p.gc_pause_ns == 0 {
            return Err(bad("gc_pause", "is zero while gc_every is set".into()));
        }
        if p.flush_tail_every > 0 && p.flush_tail_ns < p.flush_ns {
            return Err(bad("flush_tail", "is shorter than flush".into()));
        }
        if p.cache_bytes > 0 && p.write_bytes_per_s == 0 {
            return Err(bad(
                "cache",
                "needs a write_bandwidth to drain at (it is 0B, no limit)".into(),
            ));
        }
        Ok(p)
    }

    /// A shipped profile by name, else a profile file.
    ///
    /// # Errors
    /// [`ProfileError::NotFound`] when it is neither; otherwise as
    /// [`from_json`](Profile::from_json).
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some((_, json)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Profile::from_json(json, &format!("'{name_or_path}'"));
        }
        let path = Path::new(name_or_path);
        let json = std::fs::read_to_string(path)
            .map_err(|e| ProfileError::NotFound(name_or_path.to_string(), e.to_string()))?;
        Profile::from_json(&json, &format!("'{}'", path.display()))
    }

    /// Whether this profile emulates nothing (every cost zero, no limit):
    /// the image then stays on the machine's own disk, without FUSE.
    pub fn is_native(&self) -> bool {
        self.read_latency_ns == 0
            && self.write_latency_ns == 0
            && self.read_bytes_per_s == 0
            && self.write_bytes_per_s == 0
            && self.seek_ns == 0
            && self.flush_ns == 0
            && self.flush_tail_ns == 0
            && self.gc_every_bytes == 0
            && self.cache_bytes == 0
    }

    /// Whether the device seeks (a request off the sequential path costs
    /// `seek`): what the kernel calls rotational. The emulated device's
    /// loop device says so (`queue/rotational`), so the recorder and
    /// `doctor` see a disk as they would on the real one.
    pub fn rotating(&self) -> bool {
        self.seek_ns > 0
    }

    /// Draining a full write cache to the medium, ns (0 without a cache).
    pub fn cache_drain_ns(&self) -> u64 {
        crate::rate::transfer_ns(self.cache_bytes, self.write_bytes_per_s)
    }

    /// The longest a single write can wait on this device: a GC pause, the
    /// costlier flush it may queue behind (with a full write cache to
    /// drain), a seek and the request's own latency. What the ring must ride out
    /// (`rtrec_engine::sizing::auto_ring`).
    pub fn worst_stall_ns(&self) -> u64 {
        self.gc_pause_ns
            .saturating_add(self.flush_ns.max(self.flush_tail_ns))
            .saturating_add(self.cache_drain_ns())
            .saturating_add(self.seek_ns)
            .saturating_add(self.write_latency_ns)
    }

    /// The profile as a JSON file (pretty, with a final newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.file).expect("plain data");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses_and_only_native_is_native() {
        for (name, json) in BUILTIN {
            let p = Profile::from_json(json, name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.name, name);
            assert_eq!(p.is_native(), name == "native", "{name}");
        }
        let emmc = Profile::load("emmc").unwrap();
        assert_eq!(emmc.write_latency_ns, 150_000);
        assert_eq!(emmc.write_bytes_per_s, 40_000_000);
        assert_eq!(emmc.cache_bytes, 4 << 20);
        assert_eq!(emmc.cache_bytes_per_s, 160_000_000);
    }

    fn emmc_with(field: &str, value: serde_json::Value) -> String {
        let mut v: serde_json::Value = serde_json::from_str(BUILTIN[0].1).unwrap();
        v[field] = value;
        v.to_string()
    }

    #[test]
    fn a_bad_profile_is_one_sentence_naming_the_field() {
        let cases = [
            ("write_latency", serde_json::json!("300"), "write_latency"),
            ("flush", serde_json::json!("2 parsecs"), "flush"),
            (
                "gc_pause",
                serde_json::json!("2min"),
                "longer than a minute",
            ),
            ("queues", serde_json::json!(4), "only 1"),
            ("read_bandwidth", serde_json::json!(12), "invalid type"),
            ("surprise", serde_json::json!(1), "unknown field"),
            (
                "order",
                serde_json::json!("elevator"),
                "neither 'sync-first'",
            ),
            ("max_request", serde_json::json!("big"), "max_request"),
            (
                "write_bandwidth",
                serde_json::json!("0B"),
                "needs a write_bandwidth",
            ),
        ];
        for (field, value, expect) in cases {
            let e = Profile::from_json(&emmc_with(field, value), "'x.json'")
                .unwrap_err()
                .to_string();
            assert!(e.contains(expect), "{field}: {e}");
            assert!(
                e.starts_with("the device profile 'x.json' is not valid"),
                "{e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        let e = Profile::load("/nonexistent/board.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("emmc, sd, hdd-5400, native"), "{e}");
    }

    #[test]
    fn a_profile_written_back_reads_the_same() {
        let p = Profile::load("hdd-5400").unwrap();
        assert_eq!(Profile::from_json(&p.to_json(), "x").unwrap(), p);
    }
}
