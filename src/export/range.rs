//! `export --from/--to` and `--every N`: which records of the walk are
//! exported, and which gaps go with them.
//!
//! Design choices:
//! - **A bound is a sequence number or a time, told by its spelling**:
//!   digits are a sequence number (`1200`), RFC 3339 UTC a wall time
//!   (`2026-12-06T23:46:54.5Z`, as the exports write it), `+DURATION` a
//!   time after the recording's first record (`+10s`). Both bounds are
//!   inclusive; a sequence bound and a time bound may be mixed.
//! - **Gaps in the range stay rows**: a gap between two records of the
//!   range, or between the range's first record and the record before it
//!   (or its last and the one after it), may hold records of the range,
//!   so it is exported (with sequence bounds, cut to them); a gap wholly
//!   outside is not. `--every` never hides a gap.
//! - **`--every N`** keeps the records whose sequence number is N apart
//!   from the range's first record (sequence numbers, not rows: a kept
//!   place that was lost is in a gap row, so the spacing stays the
//!   recording's).
//! - **Nothing in the range is refused** (one sentence, no file): an
//!   empty export would look like a recording without data.

#[cfg(feature = "tables")]
use super::part::Part;
#[cfg(feature = "tables")]
use super::rows::{walk, Item, Walked};
use crate::cli::Bound;

/// `--from`, `--to` and `--every`, checked.
#[derive(Clone, Copy, Debug, Default)]
pub struct Selection {
    /// The first record exported (inclusive).
    pub from: Option<Bound>,
    /// The last record exported (inclusive).
    pub to: Option<Bound>,
    /// Keep one record in N (1: all).
    pub every: u64,
}

impl Selection {
    /// The selection of the flags; a range whose ends are of one kind
    /// and reversed is refused.
    ///
    /// # Errors
    /// `--from` after `--to`, or `--every 0`.
    pub fn of(from: Option<Bound>, to: Option<Bound>, every: Option<u64>) -> Result<Self, String> {
        let reversed = match (from, to) {
            (Some(Bound::Seq(a)), Some(Bound::Seq(b)))
            | (Some(Bound::Wall(a)), Some(Bound::Wall(b)))
            | (Some(Bound::After(a)), Some(Bound::After(b))) => a > b,
            _ => false,
        };
        if reversed {
            return Err("--from is after --to: give the earlier end as --from".into());
        }
        if every == Some(0) {
            return Err("--every 0 keeps nothing: give --every 1 or more".into());
        }
        Ok(Selection {
            from,
            to,
            every: every.unwrap_or(1),
        })
    }

    /// True when it selects every record.
    pub fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none() && self.every == 1
    }
}

/// Where the walk is relative to the range.
#[cfg(feature = "tables")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    Before,
    In,
    After,
}

/// Filters a walk's items by a [`Selection`].
#[cfg(feature = "tables")]
pub struct Filter {
    sel: Selection,
    at: At,
    /// The recording's first record's wall time (for [`Bound::After`]).
    origin: Option<u64>,
    /// The range's first record's sequence number (for `--every`).
    first_in: Option<u64>,
    /// Gaps seen since the last record before the range.
    pending: Vec<(u64, Option<u64>, &'static str)>,
    walked: Walked,
}

#[cfg(feature = "tables")]
impl Filter {
    /// A filter for `sel`.
    pub fn new(sel: Selection) -> Filter {
        Filter {
            sel,
            at: At::Before,
            origin: None,
            first_in: None,
            pending: Vec::new(),
            walked: Walked::default(),
        }
    }

    /// What it let through.
    pub fn walked(&self) -> Walked {
        self.walked
    }

    /// Whether the record `(seq, wall)` is at or after `b` (`after`
    /// false: at or before it).
    fn admits(&self, b: Option<Bound>, seq: u64, wall: u64, after: bool) -> bool {
        let (v, edge) = match b {
            None => return true,
            Some(Bound::Seq(s)) => (seq, s),
            Some(Bound::Wall(w)) => (wall, w),
            Some(Bound::After(d)) => (wall, self.origin.unwrap_or(wall).saturating_add(d)),
        };
        if after {
            v >= edge
        } else {
            v <= edge
        }
    }

    /// A gap cut to the sequence bounds (`None`: none of it is in them).
    fn clip(&self, first: u64, count: Option<u64>) -> Option<(u64, Option<u64>)> {
        let lo = match self.sel.from {
            Some(Bound::Seq(s)) => s,
            _ => 0,
        };
        let hi = match self.sel.to {
            Some(Bound::Seq(s)) => s,
            _ => u64::MAX,
        };
        let start = first.max(lo);
        match count {
            None => (start <= hi).then_some((start, None)),
            Some(n) => {
                let last = (first + n - 1).min(hi);
                (n > 0 && start <= last).then_some((start, Some(last - start + 1)))
            }
        }
    }

    fn gap(
        &mut self,
        first: u64,
        count: Option<u64>,
        reason: &'static str,
        sink: &mut dyn FnMut(Item) -> crate::error::Result<()>,
    ) -> crate::error::Result<()> {
        let Some((first_seq, count)) = self.clip(first, count) else {
            return Ok(());
        };
        self.walked.gaps += 1;
        self.walked.missing += count.unwrap_or(0);
        sink(Item::Gap {
            first_seq,
            count,
            reason,
        })
    }

    fn flush(
        &mut self,
        sink: &mut dyn FnMut(Item) -> crate::error::Result<()>,
    ) -> crate::error::Result<()> {
        for (first, count, reason) in std::mem::take(&mut self.pending) {
            self.gap(first, count, reason, sink)?;
        }
        Ok(())
    }

    /// Passes `item` to `sink` when it is selected.
    ///
    /// # Errors
    /// The sink's.
    pub fn feed(
        &mut self,
        item: Item,
        sink: &mut dyn FnMut(Item) -> crate::error::Result<()>,
    ) -> crate::error::Result<()> {
        match item {
            Item::Gap {
                first_seq,
                count,
                reason,
            } => match self.at {
                At::Before => {
                    self.pending.push((first_seq, count, reason));
                    Ok(())
                }
                At::In => self.gap(first_seq, count, reason, sink),
                At::After => Ok(()),
            },
            Item::Record { seq, wall_ns, .. } => {
                self.origin.get_or_insert(wall_ns);
                if self.at == At::After {
                    return Ok(());
                }
                if !self.admits(self.sel.from, seq, wall_ns, true) {
                    self.pending.clear();
                    return Ok(());
                }
                if !self.admits(self.sel.to, seq, wall_ns, false) {
                    // The range ends here; one that lay between the
                    // record before and this one is in the gaps seen.
                    if self.at == At::Before {
                        self.flush(sink)?;
                    }
                    self.at = At::After;
                    return Ok(());
                }
                if self.at == At::Before {
                    self.flush(sink)?;
                    self.at = At::In;
                }
                let first = *self.first_in.get_or_insert(seq);
                if (seq - first) % self.sel.every != 0 {
                    return Ok(());
                }
                self.walked.records += 1;
                sink(item)
            }
        }
    }

    /// Ends the walk: gaps after the last record may hold the range.
    ///
    /// # Errors
    /// The sink's.
    pub fn finish(
        &mut self,
        sink: &mut dyn FnMut(Item) -> crate::error::Result<()>,
    ) -> crate::error::Result<()> {
        if self.at == At::Before {
            self.flush(sink)?;
        }
        Ok(())
    }
}

/// Refuses a selection that kept nothing (see the module docs).
///
/// # Errors
/// One sentence.
#[cfg(feature = "tables")]
pub fn refuse_empty(kept: Walked) -> crate::error::Result<()> {
    if kept.records + kept.gaps == 0 {
        return crate::error::usage(
            "no record of the recording is between --from and --to (`rtrec info` gives its first and last sequence number and time)",
        );
    }
    Ok(())
}

/// [`super::rows::walk`], keeping what `sel` selects (`--from`, `--to`, `--every`:
/// the module docs); returns what it kept.
///
/// # Errors
/// The sink's, the walk's, or nothing in the range (one sentence).
#[cfg(feature = "tables")]
pub fn walk_selected(
    parts: &[Part],
    sel: &Selection,
    sink: &mut dyn FnMut(Item) -> crate::error::Result<()>,
) -> crate::error::Result<Walked> {
    let kept = walk_in(parts, sel, sink)?;
    if !sel.is_all() {
        refuse_empty(kept)?;
    }
    Ok(kept)
}

/// [`walk_selected`] without refusing a selection that kept nothing (one
/// of several recordings, `export --all`).
///
/// # Errors
/// The sink's or the walk's.
#[cfg(feature = "tables")]
pub fn walk_in(
    parts: &[Part],
    sel: &Selection,
    sink: &mut dyn FnMut(Item) -> crate::error::Result<()>,
) -> crate::error::Result<Walked> {
    if sel.is_all() {
        return walk(parts, sink);
    }
    let mut f = Filter::new(*sel);
    walk(parts, &mut |item| f.feed(item, sink))?;
    f.finish(sink)?;
    Ok(f.walked())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bound;

    #[test]
    fn a_bound_is_a_sequence_number_a_time_or_an_offset() {
        assert_eq!(bound("1200"), Ok(Bound::Seq(1200)));
        assert_eq!(bound("+1.5s"), Ok(Bound::After(1_500_000_000)));
        assert_eq!(
            bound("1970-01-01T00:00:02.5Z"),
            Ok(Bound::Wall(2_500_000_000))
        );
        assert!(bound("yesterday").unwrap_err().contains("neither"));
        assert!(bound("-5").is_err());
        assert!(Selection::of(Some(Bound::Seq(9)), Some(Bound::Seq(3)), None).is_err());
        assert!(Selection::of(None, None, Some(0)).is_err());
        assert!(Selection::of(Some(Bound::Seq(9)), Some(Bound::Wall(3)), None).is_ok());
    }

    #[cfg(feature = "tables")]
    #[test]
    fn gaps_in_the_range_stay_cut_to_it_and_every_keeps_the_spacing() {
        // Records 0..=9 at 10 ns apart, a gap 4..=5 (records 4, 5 lost).
        let items = |f: &mut Filter, out: &mut Vec<String>| {
            let mut sink = |i: Item| {
                out.push(match i {
                    Item::Record { seq, .. } => format!("r{seq}"),
                    Item::Gap {
                        first_seq, count, ..
                    } => format!("g{first_seq}+{}", count.unwrap_or(0)),
                });
                Ok(())
            };
            for seq in 0..10u64 {
                if seq == 4 {
                    let g = Item::Gap {
                        first_seq: 4,
                        count: Some(2),
                        reason: "ring_full",
                    };
                    f.feed(g, &mut sink).unwrap();
                }
                if seq == 4 || seq == 5 {
                    continue;
                }
                let r = Item::Record {
                    seq,
                    mono_ns: seq * 10,
                    wall_ns: 1000 + seq * 10,
                    exact: true,
                    data: b"",
                };
                f.feed(r, &mut sink).unwrap();
            }
            f.finish(&mut sink)
        };
        let run = |from, to, every| {
            let mut f = Filter::new(Selection::of(from, to, every).unwrap());
            let mut out = Vec::new();
            items(&mut f, &mut out)
                .and_then(|()| refuse_empty(f.walked()))
                .map(|()| out.join(" "))
        };
        assert_eq!(
            run(Some(Bound::Seq(5)), Some(Bound::Seq(7)), None).unwrap(),
            "g5+1 r6 r7"
        );
        assert_eq!(
            run(Some(Bound::Wall(1020)), Some(Bound::After(60)), None).unwrap(),
            "r2 r3 g4+2 r6"
        );
        assert_eq!(run(None, None, Some(2)).unwrap(), "r0 r2 g4+2 r6 r8");
        assert_eq!(
            run(Some(Bound::Seq(4)), Some(Bound::Seq(5)), None).unwrap(),
            "g4+2"
        );
        assert!(run(Some(Bound::Seq(20)), None, None).is_err());
    }
}
