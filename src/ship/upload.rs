//! One file into the bucket, exactly once and verified: its CRC32C read
//! first, the bucket asked whether it already holds the same bytes, then
//! one PUT (small files) or a multipart upload whose every acknowledged
//! part is in the ledger before the next is sent, and a HEAD after that
//! compares the object's size and CRC32C with the file's.
//!
//! Design choices:
//! - **Read twice, gently**: once for the CRC32C (it goes into the
//!   object's metadata, `x-amz-meta-crc32c`, when the upload begins, and
//!   into the ledger's `upload` line), once to send; each chunk is
//!   dropped from the page cache after it is read (`POSIX_FADV_DONTNEED`)
//!   so the shipper does not evict the recorder's pages.
//! - **The server checks each body** (object_store's SHA-256 additional
//!   checksum, `x-amz-checksum-sha256`, on every PUT and part): a body
//!   damaged on the way is refused by the server, not stored.
//! - **The file must not change while it is sent** (a loop may rename a
//!   retired file into a new one): its size and modification time are
//!   compared before and after; a change throws the copy away.
//! - **At most one part again**: a part's `part` line is durable before
//!   the next part is read; after a kill or power cut the upload resumes
//!   after the last line, so only the part in flight is sent again.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as Key;
use object_store::{
    Attribute, AttributeValue, Attributes, GetOptions, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload,
};
use rtrec_engine::reader::{LedgerEntry, ShipLedger};

use super::pace::Bucket;
use super::store::{classify, Failure, Store};
use super::summary::ShipSummary;

/// The metadata key of our CRC32C (`x-amz-meta-crc32c`).
const CRC_META: &str = "crc32c";

/// What the shipper holds while it works: the client, the ledger and
/// the directory it is written in, the pace, the figures.
pub struct Shipper {
    /// The client.
    pub store: Store,
    /// The bucket's name (for sentences).
    pub bucket_name: String,
    /// The ledger as last written.
    pub ledger: ShipLedger,
    /// The recording directory (the ledger's).
    pub dir: rtrec_sys::Dir,
    /// The bandwidth limit.
    pub pace: Bucket,
    /// Parts' size, and the size from which a file goes in parts.
    pub part_size: u64,
    /// The run's figures.
    pub summary: ShipSummary,
    /// Recordings (ids in hex) whose conversion the exporter refused in
    /// this run: a recording tried again after an outage is refused
    /// again, but said and counted once (`conversions_refused` counts
    /// recordings, not attempts).
    pub refused: std::collections::BTreeSet<String>,
}

/// A file's size and CRC32C, and its modification time (to see it
/// change).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sum {
    /// Bytes.
    pub size: u64,
    /// CRC32C of all of them.
    pub crc32c: u32,
    /// Modification time, ns.
    pub mtime_ns: i128,
}

/// A local failure (reading a file) as one the next attempt may not meet.
fn local(what: String, e: std::io::Error) -> Failure {
    Failure::Later(format!("{what}: {e}"))
}

/// The size and modification time of `f`.
fn stamp(f: &File) -> std::io::Result<(u64, i128)> {
    use std::os::unix::fs::MetadataExt;
    let m = f.metadata()?;
    Ok((
        m.len(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    ))
}

/// Reads `len` bytes of `f` at `off`, then drops them from the page cache.
fn read_chunk(f: &File, off: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(&mut buf, off)?;
    let _ = rtrec_sys::fadvise_dontneed(f, off, len);
    Ok(buf)
}

/// The size, CRC32C and modification time of the file at `path`, read in
/// chunks of `chunk` bytes.
pub fn sum_of(path: &Path, chunk: u64) -> std::io::Result<Sum> {
    let f = File::open(path)?;
    let (size, mtime_ns) = stamp(&f)?;
    let mut crc = 0u32;
    let mut off = 0;
    while off < size {
        let len = chunk.min(size - off);
        crc = rtrec_engine::crc::crc32c_append(crc, &read_chunk(&f, off, len)?);
        off += len;
    }
    Ok(Sum {
        size,
        crc32c: crc,
        mtime_ns,
    })
}

/// The attributes that carry our CRC32C.
fn crc_attributes(crc: u32) -> Attributes {
    let mut a = Attributes::new();
    a.insert(
        Attribute::Metadata(CRC_META.into()),
        AttributeValue::from(format!("{crc:08x}")),
    );
    a
}

impl Shipper {
    /// Writes the ledger with `e` added (durably: see the ledger).
    pub fn note(&mut self, e: LedgerEntry) -> Result<(), Failure> {
        self.ledger.entries.push(e);
        self.write_ledger()
    }

    /// Writes the ledger as it is.
    pub fn write_ledger(&self) -> Result<(), Failure> {
        self.ledger.write(&self.dir).map_err(|e| {
            Failure::Refused(format!(
                "cannot write the shipping ledger in '{}': {e}",
                self.dir.path().display()
            ))
        })
    }

    /// Whether the bucket holds `key` with `size` bytes and our CRC32C
    /// `crc` (`Ok(false)`: absent or different).
    ///
    /// # Errors
    /// The store's, classified.
    pub async fn holds(&self, key: &str, size: u64, crc: u32) -> Result<bool, Failure> {
        let opts = GetOptions {
            head: true,
            ..GetOptions::default()
        };
        match self.store.get_opts(&Key::from(key), opts).await {
            Ok(r) => {
                let theirs = r.attributes.get(&Attribute::Metadata(CRC_META.into()));
                let ours = format!("{crc:08x}");
                Ok(r.meta.size == size && theirs.map(|v| v.as_ref()) == Some(ours.as_str()))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(classify(&e, &format!("reading '{key}'"), &self.bucket_name)),
        }
    }

    /// Puts `bytes` as `key` in one request, with our CRC32C as metadata,
    /// then checks it is there ([`Shipper::holds`]).
    ///
    /// # Errors
    /// The store's, classified; a copy that does not check out.
    pub async fn put_bytes(&mut self, key: &str, bytes: Vec<u8>) -> Result<(), Failure> {
        let crc = rtrec_engine::crc::crc32c(&bytes);
        let size = bytes.len() as u64;
        tokio::time::sleep(self.pace.take(size)).await;
        let opts = PutOptions {
            attributes: crc_attributes(crc),
            ..PutOptions::default()
        };
        let doing = format!("writing '{key}'");
        self.store
            .put_opts(&Key::from(key), PutPayload::from(bytes), opts)
            .await
            .map_err(|e| classify(&e, &doing, &self.bucket_name))?;
        self.summary.bytes_shipped += size;
        self.verified(key, size, crc).await
    }

    /// Checks that the bucket holds `key` as sent.
    async fn verified(&self, key: &str, size: u64, crc: u32) -> Result<(), Failure> {
        if self.holds(key, size, crc).await? {
            Ok(())
        } else {
            Err(Failure::Later(format!(
                "the copy of '{key}' in the bucket is not what was sent ({size} bytes, CRC32C \
                 {crc:08x}); it will be sent again"
            )))
        }
    }

    /// Ships the file at `path` (`sum` read just before) as `key`: not at
    /// all when the bucket holds it already, else in one PUT or in parts.
    /// Returns whether it was sent.
    ///
    /// # Errors
    /// The store's, classified; the file changing or failing to read.
    pub async fn ship_file(&mut self, path: &Path, key: &str, sum: Sum) -> Result<bool, Failure> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // Asked also when the ledger has an upload of it: a kill or power
        // cut after the upload was completed but before the ledger said
        // so leaves one the server has finished (and forgotten).
        if self.holds(key, sum.size, sum.crc32c).await? {
            let done = match self.ledger.upload_of(name) {
                Some((LedgerEntry::Upload { upload_id, .. }, _)) => Some(upload_id.clone()),
                _ => None,
            };
            if let Some(id) = done {
                self.ledger.end_upload(&id);
                self.write_ledger()?;
            }
            return Ok(false);
        }
        let f = File::open(path).map_err(|e| local(format!("opening '{}'", path.display()), e))?;
        if sum.size <= self.part_size {
            let bytes = read_chunk(&f, 0, sum.size)
                .map_err(|e| local(format!("reading '{}'", path.display()), e))?;
            if rtrec_engine::crc::crc32c(&bytes) != sum.crc32c {
                return Err(changed(path));
            }
            self.put_bytes(key, bytes).await?;
        } else {
            self.multipart(&f, name, key, sum).await?;
            self.verified(key, sum.size, sum.crc32c).await?;
        }
        let now = stamp(&f).map_err(|e| local(format!("reading '{}'", path.display()), e))?;
        if now != (sum.size, sum.mtime_ns) {
            return Err(changed(path));
        }
        Ok(true)
    }

    /// The upload of file `name` (`sum`) as `k`: the ledger's, when it
    /// has one of this very file, else a new one entered in the ledger.
    /// Returns its id, its part size, the parts acknowledged, and whether
    /// it was resumed.
    async fn begin(
        &mut self,
        k: &Key,
        name: &str,
        sum: Sum,
    ) -> Result<(String, u64, Vec<PartId>, bool), Failure> {
        // An upload the ledger has of this very file (same size and CRC),
        // with its acknowledged parts 1..=n in order; any other is
        // dropped (the server ends it itself: a bucket's lifecycle rule
        // for incomplete uploads, docs/ship.md).
        let mut resume = None;
        if let Some((
            LedgerEntry::Upload {
                upload_id,
                size,
                part_size,
                crc32c,
                ..
            },
            parts,
        )) = self.ledger.upload_of(name)
        {
            let in_order = parts.iter().enumerate().all(|(i, p)| p.0 as usize == i + 1);
            if *size == sum.size && *crc32c == sum.crc32c && in_order && *part_size >= 5 << 20 {
                let ids: Vec<PartId> = parts
                    .iter()
                    .map(|p| PartId {
                        content_id: p.1.to_string(),
                    })
                    .collect();
                resume = Some((upload_id.clone(), *part_size, ids));
            } else {
                let id = upload_id.clone();
                let _ = self.store.abort_multipart(k, &id).await;
                self.ledger.end_upload(&id);
                self.write_ledger()?;
            }
        }
        match resume {
            Some((id, part_size, parts)) => {
                self.summary.uploads_resumed += 1;
                Ok((id, part_size, parts, true))
            }
            None => {
                let opts = PutMultipartOptions {
                    attributes: crc_attributes(sum.crc32c),
                    ..PutMultipartOptions::default()
                };
                let id = self
                    .store
                    .create_multipart_opts(k, opts)
                    .await
                    .map_err(|e| {
                        classify(
                            &e,
                            &format!("beginning the upload of '{k}'"),
                            &self.bucket_name,
                        )
                    })?;
                self.note(LedgerEntry::Upload {
                    upload_id: id.clone(),
                    size: sum.size,
                    part_size: self.part_size,
                    crc32c: sum.crc32c,
                    name: name.to_string(),
                })?;
                Ok((id, self.part_size, Vec::new(), false))
            }
        }
    }

    /// The multipart upload of `f`, begun anew or resumed from the ledger.
    async fn multipart(
        &mut self,
        f: &File,
        name: &str,
        key: &str,
        sum: Sum,
    ) -> Result<(), Failure> {
        let k = Key::from(key);
        let bucket = self.bucket_name.clone();
        let cls = |e: object_store::Error, doing: &str| classify(&e, doing, &bucket);
        let (id, part_size, mut parts, resumed) = self.begin(&k, name, sum).await?;
        let (first, count) = (parts.len() as u64, sum.size.div_ceil(part_size));
        for n in first..count {
            let off = n * part_size;
            let len = part_size.min(sum.size - off);
            let bytes =
                read_chunk(f, off, len).map_err(|e| local(format!("reading '{name}'"), e))?;
            tokio::time::sleep(self.pace.take(len)).await;
            let doing = format!("sending part {} of '{key}'", n + 1);
            let part = match self.store.put_part(&k, &id, n as usize, bytes.into()).await {
                Ok(p) => p,
                Err(object_store::Error::NotFound { .. }) => return Err(self.lost_upload(&id, key)),
                Err(e) => return Err(cls(e, &doing)),
            };
            self.summary.bytes_shipped += len;
            if resumed && n == first {
                // The first part after a resume may have been in flight
                // when the last run stopped.
                self.summary.bytes_resent += len;
            }
            self.note(LedgerEntry::Part {
                upload_id: id.clone(),
                number: n as u32 + 1,
                content_id: part.content_id.clone(),
            })?;
            parts.push(part);
        }
        match self.store.complete_multipart(&k, &id, parts).await {
            Ok(_) => {}
            Err(object_store::Error::NotFound { .. }) => return Err(self.lost_upload(&id, key)),
            Err(e) => return Err(cls(e, &format!("completing the upload of '{key}'"))),
        }
        self.ledger.end_upload(&id);
        self.write_ledger()
    }

    /// The server no longer knows upload `id` (expired, or its state was
    /// lost): forget it, count what it had as sent again, try later.
    fn lost_upload(&mut self, id: &str, key: &str) -> Failure {
        let had: u64 = match self
            .ledger
            .entries
            .iter()
            .find(|e| matches!(e, LedgerEntry::Upload { upload_id, .. } if upload_id == id))
        {
            Some(LedgerEntry::Upload { part_size, .. }) => {
                let parts = self
                    .ledger
                    .entries
                    .iter()
                    .filter(|e| matches!(e, LedgerEntry::Part { upload_id, .. } if upload_id == id))
                    .count() as u64;
                parts * part_size
            }
            _ => 0,
        };
        self.summary.bytes_resent += had;
        self.ledger.end_upload(id);
        if let Err(f) = self.write_ledger() {
            return f;
        }
        Failure::Later(format!(
            "the server no longer knows the upload of '{key}'; it begins again"
        ))
    }
}

/// The sentence for a file that changed while it was read.
fn changed(path: &Path) -> Failure {
    Failure::Later(format!(
        "'{}' changed while it was being sent; it will be read again",
        path.display()
    ))
}
