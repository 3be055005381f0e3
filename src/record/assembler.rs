//! The stdin assembler: cuts a byte stream into records as it arrives
//! (fixed-size records, or one per line), holding the piece of the next
//! record read so far, so that nothing read is ever lost.

use super::session::Session;

/// How stdin is cut into records.
pub enum Cut {
    /// Records of exactly `size` bytes; a shorter last piece is stored as a
    /// shorter record.
    Fixed {
        /// The record size, bytes.
        size: usize,
    },
    /// One record per line without its newline; a line longer than `max` is
    /// dropped, counted and stored as a loss.
    Lines {
        /// The longest line, bytes.
        max: usize,
    },
}

/// Cuts a byte stream into records as it arrives; holds the piece of the
/// next record read so far, so that nothing read is ever lost: at the end
/// of the stream, and when the recording is stopped, that piece is stored
/// as a (shorter) record.
pub struct Assembler {
    cut: Cut,
    buf: Vec<u8>,
    /// A line went past `max`: the rest of it is not kept, and the record
    /// offered for it is one byte over the limit, so the recorder drops and
    /// counts it as too large.
    overlong: bool,
}

impl Assembler {
    /// An assembler with room for one record, allocated now.
    pub fn new(cut: Cut) -> Assembler {
        let cap = match cut {
            Cut::Fixed { size } => size,
            Cut::Lines { max } => max + 1,
        };
        Assembler {
            cut,
            buf: Vec::with_capacity(cap),
            overlong: false,
        }
    }

    /// What a record is called in messages: records or lines.
    pub fn unit(&self) -> &'static str {
        match self.cut {
            Cut::Fixed { .. } => "records",
            Cut::Lines { .. } => "lines",
        }
    }

    /// Feeds bytes; true once `count` records have been offered (the rest
    /// of `data` is not wanted).
    pub fn feed(&mut self, mut data: &[u8], s: &mut Session, count: Option<u64>) -> bool {
        while !data.is_empty() {
            if s.reached(count) {
                return true;
            }
            match self.cut {
                Cut::Fixed { size } => {
                    if self.buf.is_empty() && data.len() >= size {
                        s.record(&data[..size]);
                        data = &data[size..];
                        continue;
                    }
                    let take = (size - self.buf.len()).min(data.len());
                    self.buf.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if self.buf.len() == size {
                        s.record(&self.buf);
                        self.buf.clear();
                    }
                }
                Cut::Lines { max } => {
                    let end = data.iter().position(|&b| b == b'\n');
                    let part = &data[..end.unwrap_or(data.len())];
                    if !self.overlong {
                        let room = max + 1 - self.buf.len();
                        self.buf.extend_from_slice(&part[..part.len().min(room)]);
                        self.overlong = self.buf.len() > max;
                    }
                    match end {
                        Some(i) => {
                            s.record(&self.buf);
                            self.buf.clear();
                            self.overlong = false;
                            data = &data[i + 1..];
                        }
                        None => data = &[],
                    }
                }
            }
        }
        s.reached(count)
    }

    /// Stores the piece read so far, if any, as a last (shorter) record.
    pub fn finish(&mut self, s: &mut Session, count: Option<u64>) {
        if (!self.buf.is_empty() || self.overlong) && !s.reached(count) {
            s.record(&self.buf);
            self.buf.clear();
            self.overlong = false;
        }
    }
}
