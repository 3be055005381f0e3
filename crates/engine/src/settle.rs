//! Settling a configuration: the one step that turns what a front-end
//! was told (`rtrec record`'s flags, the C API's `rtrec_config`) into the
//! configuration a recorder is created with. It sizes what the user left
//! unset by the rules of [`crate::sizing`], and refuses, in one order for
//! every front-end, what cannot work: the rules of [`Config::validate`]
//! (a record larger than a file, a ring or window that cannot hold one
//! record, …) and a ring larger than the memory it needs.
//!
//! Design choices:
//! - **Unset is 0.** `file_size` 0 and a flight window's `pre_bytes` 0 are
//!   sized here; the ring is an argument (`None`: auto), since the CLI
//!   reports how it was sized ([`RingSizing`]) and the C API does not.
//!   Neither front-end can ask for 0 bytes: the command line's parsers
//!   refuse a zero size, and the C API's 0 means "default".
//! - **One order of refusals**: [`Config::validate`]'s, then the memory
//!   check; the front-ends only word them (the CLI names its flags, the C
//!   API its fields), so a rule changes in one place for both.
//! - **The memory check is a fact of the machine, not a rule between
//!   fields**, so it is a [`SettleError`] of its own and not a
//!   [`ConfigError`]: [`Config::validate`] stays free of I/O, while this
//!   step reads `/proc` and `sysconf` (through `rtrec-sys`).

use crate::config::{Config, Mode};
use crate::error::ConfigError;
use crate::sizing::{RingSizing, Workload};

/// Why a configuration cannot be settled: a rule of
/// [`Config::validate`], or a ring the machine cannot hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettleError {
    /// A rule between the fields is broken.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The ring is larger than the machine's memory.
    #[error("the ring ({ring_bytes} bytes) is more than this machine's memory ({memory_bytes} bytes); use a smaller ring")]
    RingOverMemory {
        /// The ring's capacity, bytes.
        ring_bytes: u64,
        /// The machine's memory, bytes.
        memory_bytes: u64,
    },
    /// The process locks its memory (`mlockall`) without the privilege to
    /// exceed `RLIMIT_MEMLOCK`, and the ring is larger than what the limit
    /// leaves.
    #[error("the ring ({ring_bytes} bytes) is more than the {left_bytes} bytes RLIMIT_MEMLOCK leaves this process, which locks its memory (mlockall); use a smaller ring or raise the limit")]
    RingOverLockedMemory {
        /// The ring's capacity, bytes.
        ring_bytes: u64,
        /// What `RLIMIT_MEMLOCK` leaves after the memory already locked.
        left_bytes: u64,
    },
    /// The ring is larger than one allocation of this process can be
    /// (`isize::MAX` bytes: 2 GiB on a 32-bit board, where the machine's
    /// memory can be larger than the process can address).
    #[error("the ring ({ring_bytes} bytes) is more than one allocation of this {bits}-bit process can hold ({limit_bytes} bytes); use a smaller ring")]
    RingOverAddressSpace {
        /// The ring's capacity, bytes.
        ring_bytes: u64,
        /// The largest allocation, bytes (`isize::MAX`).
        limit_bytes: u64,
        /// The process's pointer width, bits.
        bits: u32,
    },
}

impl Config {
    /// Sizes what is unset and refuses what cannot work (see the module
    /// docs): `file_size` 0 and a flight window's `pre_bytes` 0 get the
    /// sizing rules' figures for `workload` ([`Config::sizes_for`]); the
    /// ring is `ring` bytes, or the auto rule's size when `None`; then the
    /// configuration is validated and, in ring mode, the ring checked
    /// against the machine's memory ([`ring_fits`]).
    ///
    /// Returns how the ring was sized (for a summary to report).
    ///
    /// # Errors
    ///
    /// The first rule broken, in [`Config::validate`]'s order, then the
    /// memory check.
    pub fn settle(
        &mut self,
        workload: &Workload,
        ring: Option<usize>,
    ) -> Result<RingSizing, SettleError> {
        let sizes = self.sizes_for(workload);
        if self.file_size == 0 {
            self.file_size = sizes.file_size;
            self.file_size_basis = sizes.file_size_basis;
        }
        if let Some(f) = self.flight.as_mut().filter(|f| f.pre_bytes == 0) {
            f.pre_bytes = sizes.pre_bytes;
        }
        let ring = match ring {
            None => sizes.ring,
            Some(bytes) => sizes.ring.fixed(bytes, self.max_record, workload.period_ns),
        };
        self.ring_bytes = ring.ring_bytes;
        self.validate()?;
        if self.mode == Mode::Ring {
            ring_fits(self.ring_bytes)?;
        }
        Ok(ring)
    }
}

/// Refuses a ring that cannot be allocated: larger than the machine's
/// memory, larger than one allocation may be (`isize::MAX`: on a 32-bit
/// process the address space, not the memory, is the bound), or, when the process locks its memory (`mlockall`) without the
/// privilege to exceed it (not root), larger than what `RLIMIT_MEMLOCK`
/// leaves. A process that has locked nothing yet is not held to the limit
/// here: `rtrec record --rt` locks its memory only after the recorder
/// exists, and warns about the limit itself.
///
/// # Errors
///
/// [`SettleError::RingOverMemory`], [`SettleError::RingOverAddressSpace`],
/// [`SettleError::RingOverLockedMemory`].
pub fn ring_fits(ring_bytes: usize) -> Result<(), SettleError> {
    let ring = ring_bytes as u64;
    let memory = rtrec_sys::physical_memory();
    if memory > 0 && ring > memory {
        return Err(SettleError::RingOverMemory {
            ring_bytes: ring,
            memory_bytes: memory,
        });
    }
    let limit = isize::MAX as u64;
    if ring > limit {
        return Err(SettleError::RingOverAddressSpace {
            ring_bytes: ring,
            limit_bytes: limit,
            bits: usize::BITS,
        });
    }
    let locked = rtrec_sys::locked_memory();
    let root = rtrec_sys::effective_uid() == 0;
    let limit = rtrec_sys::memlock_limit().filter(|_| locked > 0 && !root);
    if let Some(limit) = limit {
        let left = limit.saturating_sub(locked);
        if ring > left {
            return Err(SettleError::RingOverLockedMemory {
                ring_bytes: ring,
                left_bytes: left,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FlightConfig;
    use crate::sizing::{DEFAULT_FILE_SIZE, DEFAULT_PRE_BYTES, DEFAULT_RING_BYTES};

    #[test]
    fn what_is_unset_gets_the_sizing_rules_figures_and_what_is_set_stays() {
        let mut c = Config {
            file_size: 0,
            flight: Some(FlightConfig {
                pre_bytes: 0,
                ..FlightConfig::default()
            }),
            ..Config::default()
        };
        let ring = c.settle(&Workload::UNKNOWN, None).unwrap();
        assert!(c.file_size > 0);
        assert_eq!(c.flight.unwrap().pre_bytes, DEFAULT_PRE_BYTES);
        assert!(ring.auto);
        assert_eq!(c.ring_bytes, DEFAULT_RING_BYTES);
        let mut c = Config {
            file_size: 2 * DEFAULT_FILE_SIZE,
            ..Config::default()
        };
        let ring = c.settle(&Workload::UNKNOWN, Some(4 << 20)).unwrap();
        assert_eq!(c.file_size, 2 * DEFAULT_FILE_SIZE);
        assert!(!ring.auto);
        assert_eq!((ring.ring_bytes, c.ring_bytes), (4 << 20, 4 << 20));
    }

    #[test]
    fn a_broken_rule_is_the_validate_error_and_a_ring_over_memory_is_refused() {
        let mut c = Config {
            file_size: 4096,
            max_record: 8192,
            ..Config::default()
        };
        assert!(matches!(
            c.settle(&Workload::UNKNOWN, None),
            Err(SettleError::Config(ConfigError::RecordOverFile { .. }))
        ));
        // Over the machine's memory where a pointer can say so (64-bit);
        // on a 32-bit process (armv7 under qemu-user on a larger host) the
        // memory may exceed what it can address, and the bound is
        // `isize::MAX`.
        let memory = rtrec_sys::physical_memory();
        let mut c = Config::default();
        match usize::try_from(memory.saturating_add(4096)) {
            Ok(over_memory) if memory > 0 => assert!(matches!(
                c.settle(&Workload::UNKNOWN, Some(over_memory)),
                Err(SettleError::RingOverMemory { .. })
            )),
            _ => assert!(matches!(
                c.settle(&Workload::UNKNOWN, Some(isize::MAX as usize + 1)),
                Err(SettleError::RingOverAddressSpace { bits: 32, .. })
            )),
        }
        // Inline mode has no ring to allocate.
        let mut c = Config {
            mode: Mode::Inline,
            ..Config::default()
        };
        assert!(c.settle(&Workload::UNKNOWN, Some(usize::MAX / 2)).is_ok());
    }
}
