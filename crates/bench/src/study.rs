//! The published studies a case can come from, and each study's own
//! protocol. A base type below both [`crate::scenario`] (which tags each
//! case with its study) and [`crate::protocol`] (which reads the study's
//! sets and calls), so neither of those imports the other back.

use serde::{Deserialize, Serialize};

/// Which study a case comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Study {
    /// S1 Table 1: the 12 design cases.
    #[serde(rename = "S1 Table 1")]
    S1Table1,
    /// S1 Table 3 and Fig. 5: a sequential reader in the background.
    #[serde(rename = "S1 Table 3")]
    S1Table3,
    /// S2 Table 1: fallocate and write with ftruncate + fsync in the
    /// background.
    #[serde(rename = "S2")]
    S2,
    /// rtrec's own design (no published figure).
    #[serde(rename = "rtrec")]
    Rtrec,
    /// rtrec's other write back-ends (`--io direct`, `--io uring`) beside
    /// its default under the same loads (no published figure): `--study
    /// backends`, not in the default run.
    #[serde(rename = "backends")]
    Backends,
    /// What the platform itself adds (no published figure).
    #[serde(rename = "platform")]
    Platform,
}

impl Study {
    /// The study's own protocol, run by `--paper`: (sets, calls per set).
    /// S1 measured 5 sets of 10,000 writes; S2 measured 8,000 calls.
    pub fn paper_protocol(self) -> (u32, u64) {
        match self {
            Study::S2 => (1, 8_000),
            _ => (5, 10_000),
        }
    }

    /// Short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Study::S1Table1 => "S1 T1",
            Study::S1Table3 => "S1 T3",
            Study::S2 => "S2",
            Study::Rtrec => "rtrec",
            Study::Backends => "backends",
            Study::Platform => "platform",
        }
    }
}
