//! Units in one place: parsing sizes ("16KiB", "100MiB", "2MB") and
//! durations ("5ms", "250us", "1.5s") from the command line, and formatting
//! nanoseconds and bytes for people.
//!
//! Design choice: `KiB/MiB/GiB` and the bare `K/M/G` (as dd and fio read them)
//! are powers of 1024; `KB/MB/GB` are powers of 1000, as the SI says.

/// Parses a byte size; one sentence on error.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim() {
        "" | "B" | "b" => 1,
        "K" | "k" | "KiB" | "kiB" | "Ki" => 1 << 10,
        "M" | "m" | "MiB" | "Mi" => 1 << 20,
        "G" | "g" | "GiB" | "Gi" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "'{s}' is not a size: unknown unit '{u}' (use B, KiB, MiB, GiB, KB, MB or GB)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (expected a number and a unit, like 16KiB)"))?;
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(format!("'{s}' is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a duration into nanoseconds; one sentence on error. Zero and
/// negative durations are refused here, since every duration rtrec takes is a
/// period or a span that must be positive.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("'{s}' is negative; the duration must be positive"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("'{s}' needs a unit (ns, us, ms or s), like 5ms")),
        u => {
            return Err(format!(
                "'{s}' is not a duration: unknown unit '{u}' (use ns, us, ms or s)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (expected a number and a unit, like 5ms)"))?;
    let ns = (v * mult).round();
    if ns < 1.0 {
        return Err(format!("'{s}' is zero; the duration must be positive"));
    }
    if ns > 1e15 {
        return Err(format!("'{s}' is too long"));
    }
    Ok(ns as u64)
}

/// Nanoseconds as a short human string with three significant digits:
/// `"812 ns"`, `"176 µs"`, `"12.5 ms"`, `"2.40 s"`.
pub fn fmt_ns(ns: u64) -> String {
    let v = ns as f64;
    let (x, u) = if ns < 1_000 {
        return format!("{ns} ns");
    } else if ns < 1_000_000 {
        (v / 1e3, "µs")
    } else if ns < 1_000_000_000 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    if x >= 100.0 {
        format!("{x:.0} {u}")
    } else if x >= 10.0 {
        format!("{x:.1} {u}")
    } else {
        format!("{x:.2} {u}")
    }
}

/// Bytes in MiB with one decimal: `"100.0 MiB"`.
pub fn fmt_mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Bytes with a binary unit chosen to keep 3-4 digits: `"512 B"`,
/// `"40.0 KiB"`, `"100.0 MiB"`, `"2.0 GiB"`.
pub fn fmt_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1 << 20 {
        format!("{:.1} KiB", b / 1024.0)
    } else if bytes < 1 << 30 {
        fmt_mib(bytes)
    } else {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_si_units() {
        assert_eq!(parse_size("16KiB"), Ok(16384));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("100MiB"), Ok(100 << 20));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("16K"), Ok(16384));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
    }

    #[test]
    fn bad_sizes_are_one_sentence() {
        assert_eq!(
            parse_size("16XB").unwrap_err(),
            "'16XB' is not a size: unknown unit 'XB' (use B, KiB, MiB, GiB, KB, MB or GB)"
        );
        assert_eq!(
            parse_size("abc").unwrap_err(),
            "'abc' is not a size: unknown unit 'abc' (use B, KiB, MiB, GiB, KB, MB or GB)"
        );
    }

    #[test]
    fn durations_parse_and_zero_or_negative_are_refused() {
        assert_eq!(parse_duration_ns("5ms"), Ok(5_000_000));
        assert_eq!(parse_duration_ns("250us"), Ok(250_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(
            parse_duration_ns("0ms").unwrap_err(),
            "'0ms' is zero; the duration must be positive"
        );
        assert_eq!(
            parse_duration_ns("-5ms").unwrap_err(),
            "'-5ms' is negative; the duration must be positive"
        );
        assert_eq!(
            parse_duration_ns("5").unwrap_err(),
            "'5' needs a unit (ns, us, ms or s), like 5ms"
        );
    }

    #[test]
    fn nanoseconds_format_with_three_significant_digits() {
        assert_eq!(fmt_ns(812), "812 ns");
        assert_eq!(fmt_ns(176_400), "176 µs");
        assert_eq!(fmt_ns(12_482_000), "12.5 ms");
        assert_eq!(fmt_ns(2_400_000_000), "2.40 s");
        assert_eq!(fmt_mib(100 << 20), "100.0 MiB");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(40 << 10), "40.0 KiB");
        assert_eq!(fmt_bytes(2 << 30), "2.0 GiB");
    }
}
