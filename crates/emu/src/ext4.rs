//! Where ext4's journal lies in the served image, read from the file
//! system's own superblock: the one piece of file-system knowledge the
//! emulator has, so that it can serve journal writes as the synchronous
//! requests they are ([`crate::queue`]).
//!
//! Why the emulator needs it: below a loop device the emulator sees plain
//! reads and writes of a file; the `REQ_SYNC` flag jbd2 puts on its log
//! writes, which the published board's I/O scheduler (CFQ) used to serve
//! them ahead of queued writeback, does not cross the loop device and
//! FUSE. The journal's block range does.
//!
//! Design choice: the superblock's backup of the journal inode's block map
//! (`s_jnl_blocks`, written by mkfs and by every kernel since 2.6.x) is
//! read instead of the journal inode, so the whole lookup is one 1 KiB
//! read at a fixed offset. A journal that is not one run of extents in the
//! inode itself (a depth above 0: only on a badly fragmented file system)
//! or an external journal is reported as none, and every write is then
//! served as writeback.

/// Byte offset of the primary superblock.
pub const SUPERBLOCK_OFFSET: u64 = 1024;
/// Its length.
pub const SUPERBLOCK_BYTES: usize = 1024;

const MAGIC: u16 = 0xEF53;
const COMPAT_HAS_JOURNAL: u32 = 0x4;
const JNL_BACKUP_BLOCKS: u8 = 1;
const EXTENT_MAGIC: u16 = 0xF30A;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The journal's byte ranges (`start..end`) in the image, from the primary
/// superblock's bytes (`sb`, [`SUPERBLOCK_BYTES`] long from
/// [`SUPERBLOCK_OFFSET`]); empty when `sb` is not an ext4 superblock with
/// an internal journal mapped by extents in the inode.
pub fn journal_ranges(sb: &[u8]) -> Vec<std::ops::Range<u64>> {
    if sb.len() < SUPERBLOCK_BYTES || u16_at(sb, 0x38) != MAGIC {
        return Vec::new();
    }
    if u32_at(sb, 0x5C) & COMPAT_HAS_JOURNAL == 0
        || u32_at(sb, 0xE0) == 0
        || sb[0xFD] != JNL_BACKUP_BLOCKS
    {
        return Vec::new();
    }
    let log = u32_at(sb, 0x18);
    if log > 6 {
        return Vec::new();
    }
    let block = 1024u64 << log;
    // s_jnl_blocks: the inode's i_block[15] (60 bytes) at 0x10C.
    let iblock = &sb[0x10C..0x10C + 60];
    if u16_at(iblock, 0) != EXTENT_MAGIC || u16_at(iblock, 6) != 0 {
        return Vec::new();
    }
    let entries = usize::from(u16_at(iblock, 2)).min(4);
    (0..entries)
        .filter_map(|i| {
            let e = &iblock[12 + 12 * i..24 + 12 * i];
            // ee_len above 32,768 marks an unwritten extent of len − 32,768
            // (32,768 itself is the longest initialised one: 128 MiB).
            let raw = u64::from(u16_at(e, 4));
            let len = if raw > 32_768 { raw - 32_768 } else { raw };
            let start = (u64::from(u16_at(e, 6)) << 32) | u64::from(u32_at(e, 8));
            (len > 0).then(|| start * block..(start + len) * block)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A superblock with a 4 KiB block size and the journal at blocks
    /// `start..start + len` (one extent).
    fn superblock(start: u64, len: u16) -> Vec<u8> {
        let mut sb = vec![0u8; SUPERBLOCK_BYTES];
        sb[0x38..0x3A].copy_from_slice(&MAGIC.to_le_bytes());
        sb[0x18..0x1C].copy_from_slice(&2u32.to_le_bytes());
        sb[0x5C..0x60].copy_from_slice(&COMPAT_HAS_JOURNAL.to_le_bytes());
        sb[0xE0..0xE4].copy_from_slice(&8u32.to_le_bytes());
        sb[0xFD] = JNL_BACKUP_BLOCKS;
        let ib = 0x10C;
        sb[ib..ib + 2].copy_from_slice(&EXTENT_MAGIC.to_le_bytes());
        sb[ib + 2..ib + 4].copy_from_slice(&1u16.to_le_bytes());
        sb[ib + 4..ib + 6].copy_from_slice(&4u16.to_le_bytes());
        let e = ib + 12;
        sb[e + 4..e + 6].copy_from_slice(&len.to_le_bytes());
        sb[e + 6..e + 8].copy_from_slice(&((start >> 32) as u16).to_le_bytes());
        sb[e + 8..e + 12].copy_from_slice(&(start as u32).to_le_bytes());
        sb
    }

    #[test]
    fn the_journal_extent_is_read_from_the_superblock_backup() {
        let r = journal_ranges(&superblock(262_144, 16_384));
        assert_eq!(r, vec![(262_144u64 << 12)..((262_144u64 + 16_384) << 12)]);
        // 32,768 blocks is one full initialised extent (a 128 MiB journal),
        // not an unwritten one.
        let r = journal_ranges(&superblock(1 << 20, 32_768));
        assert_eq!(r[0].end - r[0].start, 128 << 20);
    }

    #[test]
    fn no_superblock_or_no_journal_gives_no_range() {
        assert!(journal_ranges(&[0u8; SUPERBLOCK_BYTES]).is_empty());
        assert!(journal_ranges(&[0u8; 10]).is_empty());
        let mut sb = superblock(100, 10);
        sb[0x5C] = 0;
        assert!(journal_ranges(&sb).is_empty());
        let mut deep = superblock(100, 10);
        deep[0x10C + 6] = 1;
        assert!(journal_ranges(&deep).is_empty());
    }

    /// The real thing: mkfs.ext4 on a file, when it is installed.
    #[test]
    fn a_fresh_mkfs_image_has_its_journal_found() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("i.ext4");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        let Ok(out) = std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-J", "size=16"])
            .arg(&image)
            .output()
        else {
            assert!(
                std::env::var_os("RTREC_REQUIRE_PRIVILEGED").is_none(),
                "mkfs.ext4 is missing and RTREC_REQUIRE_PRIVILEGED is set"
            );
            eprintln!("skipped: no mkfs.ext4");
            return;
        };
        assert!(out.status.success(), "{out:?}");
        let bytes = std::fs::read(&image).unwrap();
        let sb = &bytes[SUPERBLOCK_OFFSET as usize..][..SUPERBLOCK_BYTES];
        let r = journal_ranges(sb);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].end - r[0].start, 16 << 20);
        // The journal starts with jbd2's superblock magic (big-endian).
        let j = r[0].start as usize;
        assert_eq!(&bytes[j..j + 4], &[0xC0, 0x3B, 0x39, 0x98]);
    }
}
