//! The stdin source: a reader thread hands over what `read()` returns, the
//! [`Assembler`] cuts it into records, and the recording loop stores them
//! until the end of the stream, `count` records, a stop signal, or a
//! failed writer (noticed within one 20 ms wait for input).

use std::io::Read;
use std::time::Duration;

use super::assembler::{Assembler, Cut};
use super::session::{interrupted, Outcome, Session};

/// What the reader thread hands over: bytes as `read()` returned them.
type Piece = std::io::Result<Vec<u8>>;

/// Reads stdin on its own thread and hands over each piece as read, so
/// that the recording loop can take triggers and notice a stop signal while
/// no input arrives (the stop handlers use `SA_RESTART`: a blocking read is
/// not cut short). The channel is bounded: when the recorder waits for room
/// in the ring, this thread waits on the channel and the pipe fills, so the
/// writer at the other end of the pipe waits too (back-pressure).
fn spawn_stdin_reader() -> std::sync::mpsc::Receiver<Piece> {
    const PIECE: usize = 64 * 1024;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(8);
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        loop {
            let mut buf = vec![0u8; PIECE];
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.send(Ok(buf)).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
        }
    });
    rx
}

/// Records stdin, cut by `cut`, until the end of the stream, `count`
/// records, or a stop signal. Every byte read is stored: the last piece
/// becomes a shorter record (see [`Assembler`]).
pub fn stdin_source(s: &mut Session, cut: Cut, count: Option<u64>) -> Outcome {
    use std::sync::mpsc::RecvTimeoutError;
    let mut asm = Assembler::new(cut);
    let unit = asm.unit();
    let pieces = spawn_stdin_reader();
    loop {
        if s.failed() {
            // Writing failed for good: end now, so the service is
            // restarted (docs/unattended.md, "Faults"); what waits in
            // the pipe is the source's to keep.
            return Outcome::Done;
        }
        if let Some(sig) = s.idle() {
            // What the reader thread has already read is stored too.
            while let Ok(Ok(piece)) = pieces.try_recv() {
                if asm.feed(&piece, s, count) {
                    break;
                }
            }
            asm.finish(s, count);
            return interrupted(sig, s.offered, count);
        }
        match pieces.recv_timeout(Duration::from_millis(20)) {
            Ok(Ok(piece)) => {
                if asm.feed(&piece, s, count) {
                    return Outcome::Done;
                }
            }
            Ok(Err(e)) => {
                asm.finish(s, count);
                return Outcome::Aborted(format!(
                    "reading stdin failed after {} {unit}: {e} (what was read is stored)",
                    s.offered
                ));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                asm.finish(s, count);
                return match count {
                    Some(c) if s.offered < c => Outcome::Aborted(format!(
                        "stdin closed early: {} of {c} {unit} received",
                        s.offered
                    )),
                    _ => Outcome::Done,
                };
            }
        }
    }
}
