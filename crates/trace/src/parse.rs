//! The text of a tracefs `trace` file, one [`Event`] per line, with the
//! stack of a `<stack trace>` entry attached to the event before it on the
//! same CPU and task (the `stacktrace` trigger writes it right after the
//! event that fired it).

/// One trace entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The current task's name (may contain spaces).
    pub comm: String,
    /// The current task's thread id.
    pub tid: i32,
    /// The CPU.
    pub cpu: u32,
    /// Timestamp, ns, on the instance's clock (`mono`: `CLOCK_MONOTONIC`).
    pub ts_ns: u64,
    /// Event name (`sched_switch`, `sys_write`, `sys_write -> 0x4000` is
    /// split into name `sys_write` and body `-> 0x4000`).
    pub name: String,
    /// The rest of the line.
    pub body: String,
    /// Kernel stack, innermost first, offsets stripped.
    pub stack: Vec<String>,
}

impl Event {
    /// The value of `key=value` in the body (`prev_pid`, `comm`, …).
    pub fn field(&self, key: &str) -> Option<&str> {
        field(&self.body, key)
    }

    /// [`Event::field`] as a number.
    pub fn num(&self, key: &str) -> Option<i64> {
        self.field(key)?.parse().ok()
    }
}

/// The x86 interrupt vectors traced besides device IRQs and softirqs
/// (`irq_vectors:NAME_entry/_exit`), with their names as printed: the
/// tick, and the IPIs another CPU sends (a TLB shootdown is a
/// call-function IPI), which would otherwise count as time on the CPU.
pub const VECTORS: &[(&str, &str)] = &[
    ("local_timer", "local timer"),
    ("call_function", "IPI call function"),
    ("call_function_single", "IPI call function single"),
    ("reschedule", "IPI reschedule"),
    ("irq_work", "irq work"),
];

/// Whether `name` opens (`Some(true)`) or closes (`Some(false)`) an
/// interrupt: a device IRQ handler, a softirq or one of [`VECTORS`].
pub fn irq_edge(name: &str) -> Option<bool> {
    match name {
        "irq_handler_entry" | "softirq_entry" => Some(true),
        "irq_handler_exit" | "softirq_exit" => Some(false),
        _ => {
            let (base, entry) = match name.strip_suffix("_entry") {
                Some(b) => (b, true),
                None => (name.strip_suffix("_exit")?, false),
            };
            VECTORS.iter().any(|v| v.0 == base).then_some(entry)
        }
    }
}

/// The printed name of a vector's entry event (`local timer`).
pub fn vector_name(name: &str) -> &'static str {
    let base = name.strip_suffix("_entry").unwrap_or(name);
    VECTORS
        .iter()
        .find(|v| v.0 == base)
        .map_or("interrupt", |v| v.1)
}

/// The event name of a line written to `trace_marker`.
pub const MARK_EVENT: &str = "tracing_mark_write";

/// What a mark says: rtrec's threads and the background loads write
/// `begin WHAT` before an operation and `end WHAT` after it, and a lone
/// `WHAT` for a moment (`writer failed: NoSpace`); see `docs/explain.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark<'a> {
    /// An operation starts.
    Begin(&'a str),
    /// The operation started with the same words ends.
    End(&'a str),
    /// Something happened.
    Point(&'a str),
}

impl Event {
    /// The mark this entry carries, if it is a `trace_marker` line.
    pub fn mark(&self) -> Option<Mark<'_>> {
        if self.name != MARK_EVENT {
            return None;
        }
        let text = self.body.trim_end();
        Some(if let Some(w) = text.strip_prefix("begin ") {
            Mark::Begin(w)
        } else if let Some(w) = text.strip_prefix("end ") {
            Mark::End(w)
        } else {
            Mark::Point(text)
        })
    }
}

/// The value of `key=value` in `body`: up to the next space.
pub fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = body[from..].find(key) {
        let at = from + i;
        let before_ok = at == 0 || body.as_bytes()[at - 1] == b' ';
        let rest = &body[at + key.len()..];
        if before_ok {
            if let Some(v) = rest.strip_prefix('=') {
                return Some(v.split(' ').next().unwrap_or(""));
            }
        }
        from = at + key.len();
    }
    None
}

/// Parses the whole `trace` text. Lines that are not entries (the `#`
/// header, blank lines) are skipped.
pub fn parse(text: &str) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    let mut stack_of: Option<usize> = None;
    for line in text.lines() {
        if let Some(frame) = line.trim_start().strip_prefix("=> ") {
            if let Some(i) = stack_of {
                let f = frame.split('+').next().unwrap_or(frame).trim();
                out[i].stack.push(f.to_string());
            }
            continue;
        }
        stack_of = None;
        if line.starts_with('#') {
            continue;
        }
        let Some(e) = parse_line(line) else { continue };
        if e.name == "<stack trace>" {
            stack_of = out
                .iter()
                .rposition(|p| p.cpu == e.cpu && p.tid == e.tid && p.stack.is_empty());
            continue;
        }
        out.push(e);
    }
    out
}

/// One line: `COMM-TID [CPU] FLAGS SECS.USECS: NAME: BODY`.
fn parse_line(line: &str) -> Option<Event> {
    let open = line.find(" [")?;
    let task = line[..open].trim();
    let dash = task.rfind('-')?;
    let comm = task[..dash].to_string();
    let tid = task[dash + 1..].parse().ok()?;
    let close = open + line[open..].find(']')?;
    let cpu = line[open + 2..close].trim().parse().ok()?;
    let rest = line[close + 1..].trim_start();
    // Flags, then the timestamp ending in ':'.
    let mut parts = rest.splitn(3, ' ');
    let _flags = parts.next()?;
    let mut ts_and_rest = parts.next()?;
    let mut tail = parts.next().unwrap_or("");
    if ts_and_rest.is_empty() {
        // More than one space between flags and timestamp.
        let t = tail.trim_start();
        let sp = t.find(' ').unwrap_or(t.len());
        ts_and_rest = &t[..sp];
        tail = &t[sp..];
    }
    let ts = ts_and_rest.strip_suffix(':')?;
    let (secs, frac) = ts.split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    let scale = 10u64.pow(9u32.checked_sub(frac.len() as u32)?);
    let ts_ns = secs * 1_000_000_000 + frac.parse::<u64>().ok()? * scale;
    let tail = tail.trim_start();
    let (name, body) = if tail.starts_with("<stack trace>") {
        ("<stack trace>", "")
    } else {
        match tail.find([':', '(', ' ']) {
            Some(i) if tail.as_bytes()[i] == b':' => (&tail[..i], tail[i + 1..].trim_start()),
            // Syscalls: `sys_write(fd: 1, …)`, `sys_write -> 0x4000`.
            Some(i) => (&tail[..i], tail[i..].trim_start()),
            None => (tail, ""),
        }
    };
    Some(Event {
        comm,
        tid,
        cpu,
        ts_ns,
        name: name.to_string(),
        body: body.to_string(),
        stack: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# tracer: nop
              dd-27830   [000] d..2.  2006.323442: sched_switch: prev_comm=dd prev_pid=27830 prev_prio=120 prev_state=D ==> next_comm=rustc next_pid=27138 next_prio=120
              dd-27830   [000] d..2.  2006.323467: <stack trace>
 => __schedule+0x3a0/0x1000
 => schedule+0x27/0xa0
 => wait_transaction_locked+0x8a/0xd0
       opt cgu.2-27829   [001] ..s..  2006.323673: block_rq_complete: 254,0 RA () 12580520 + 32 be,0,4 [0]
              dd-27830   [000] .....  2006.324902: sys_write(fd: 1, buf: 0x559e5e81e000, count: 0x4000)
              dd-27830   [000] .....  2006.324960: sys_write -> 0x4000
     rtrec-flush-27831   [001] .....  2006.325000: tracing_mark_write: begin flush window 2097152@0
";

    #[test]
    fn entries_fields_and_stacks_are_read() {
        let ev = parse(SAMPLE);
        assert_eq!(ev.len(), 5);
        assert_eq!(ev[0].name, "sched_switch");
        assert_eq!(ev[0].tid, 27830);
        assert_eq!(ev[0].ts_ns, 2_006_323_442_000);
        assert_eq!(ev[0].field("prev_state"), Some("D"));
        assert_eq!(ev[0].num("next_pid"), Some(27138));
        assert_eq!(
            ev[0].stack,
            ["__schedule", "schedule", "wait_transaction_locked"]
        );
        assert_eq!(ev[1].comm, "opt cgu.2");
        assert_eq!(ev[1].cpu, 1);
        assert_eq!(ev[2].name, "sys_write");
        assert!(ev[2].body.starts_with("(fd: 1"));
        assert_eq!(ev[3].body, "-> 0x4000");
        assert_eq!(ev[3].mark(), None);
        assert_eq!(ev[4].comm, "rtrec-flush");
        assert_eq!(ev[4].mark(), Some(Mark::Begin("flush window 2097152@0")));
    }

    #[test]
    fn interrupt_edges_cover_irqs_softirqs_and_the_traced_vectors() {
        assert_eq!(irq_edge("irq_handler_entry"), Some(true));
        assert_eq!(irq_edge("softirq_exit"), Some(false));
        assert_eq!(irq_edge("local_timer_entry"), Some(true));
        assert_eq!(irq_edge("call_function_single_exit"), Some(false));
        assert_eq!(irq_edge("sched_switch"), None);
        assert_eq!(irq_edge("ext4_sync_file_exit"), None);
        assert_eq!(vector_name("call_function_entry"), "IPI call function");
    }
}
