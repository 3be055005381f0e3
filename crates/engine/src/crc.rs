//! CRC-32C (Castagnoli), the checksum of every header, frame, raw chunk
//! and retirement record (docs/format.md): the one function the engine,
//! its reader and the bench's cost floor call.
//!
//! Design choice: on aarch64 it is computed here, with the CPU's CRC32C
//! instructions (`crc32cx`/`crc32cb`, the ARMv8 CRC extension, present on
//! every 64-bit Cortex-A core and required from ARMv8.1) eight bytes at a time,
//! and with a 1 KiB table one byte at a time on a core without them. The
//! `crc32c` crate, used on the other targets (SSE 4.2 on x86-64, a
//! slice-by-8 table on armv7), carries 16 KiB of tables on aarch64 (its
//! software table and the two that combine three interleaved hardware
//! streams): a sixtieth of the board's record-only binary, whose budget
//! is 1 MB (docs/embedded.md, "Under 1 MB, position-independent"). One
//! stream of `crc32cx` still checks several GB/s, far above any storage
//! the recorder writes to. The same polynomial and conventions (initial
//! and final inversion, reflected): the bytes on disk do not change, and
//! a test holds both implementations to the same values.

/// The CRC-32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

/// The CRC-32C of the bytes whose CRC-32C is `crc` followed by `data`.
#[cfg(not(target_arch = "aarch64"))]
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// The CRC-32C of the bytes whose CRC-32C is `crc` followed by `data`.
#[cfg(target_arch = "aarch64")]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    if std::arch::is_aarch64_feature_detected!("crc") {
        // SAFETY: the CPU has the CRC extension (detected just above).
        !unsafe { hardware(!crc, data) }
    } else {
        !table(!crc, data)
    }
}

/// The CRC-32C update of `crc` (not inverted) with `data`, eight bytes
/// per instruction and the rest one by one.
///
/// # Safety
/// The CPU must have the ARMv8 CRC extension.
#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "crc")]
unsafe fn hardware(mut crc: u32, data: &[u8]) -> u32 {
    use std::arch::aarch64::{__crc32cb, __crc32cd};
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        // SAFETY: the caller checked the CRC extension.
        crc = unsafe { __crc32cd(crc, u64::from_le_bytes(b)) };
    }
    for &b in words.remainder() {
        // SAFETY: as above.
        crc = unsafe { __crc32cb(crc, b) };
    }
    crc
}

/// CRC-32C's polynomial, bit-reversed.
#[cfg(any(target_arch = "aarch64", test))]
const POLYNOMIAL: u32 = 0x82F6_3B78;

/// The CRC-32C update of each byte value, computed at compile time.
#[cfg(any(target_arch = "aarch64", test))]
const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ POLYNOMIAL
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// The CRC-32C update of `crc` (not inverted) with `data`, one byte at a
/// time: a core without the CRC extension.
#[cfg(any(target_arch = "aarch64", test))]
fn table(crc: u32, data: &[u8]) -> u32 {
    data.iter()
        .fold(crc, |c, &b| TABLE[usize::from(c as u8 ^ b)] ^ (c >> 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to 80 at every alignment, then longer ones: the
    /// word loop, its remainder and the start's misalignment all covered.
    fn samples() -> Vec<Vec<u8>> {
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let mut v = Vec::new();
        for len in 0..80 {
            for start in 0..8 {
                v.push(bytes[start..start + len].to_vec());
            }
        }
        for len in [255, 1024, 4093, 4992] {
            v.push(bytes[3..3 + len].to_vec());
        }
        v
    }

    #[test]
    fn crc32c_matches_the_crc32c_crate_on_every_length_and_alignment() {
        for s in samples() {
            assert_eq!(crc32c(&s), crc32c::crc32c(&s), "{} bytes", s.len());
            assert_eq!(!table(!0, &s), crc32c::crc32c(&s), "{} bytes", s.len());
        }
    }

    #[test]
    fn crc32c_append_continues_a_crc_as_the_whole_would() {
        for s in samples() {
            let whole = crc32c(&s);
            for cut in [0, s.len() / 3, s.len()] {
                let (a, b) = s.split_at(cut);
                assert_eq!(crc32c_append(crc32c(a), b), whole, "{} at {cut}", s.len());
            }
        }
    }

    #[test]
    fn crc32c_of_the_standard_check_string_is_e3069283() {
        // The catalogue's check value of CRC-32/ISCSI (CRC-32C).
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }
}
