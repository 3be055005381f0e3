//! Units and number formatting in one place: parsing `--period` and
//! `--size`, and every number the terminal table, the comparison and the
//! plot print (microseconds with thousands separators, ratios, MiB).

use std::time::Duration;

/// Parses a duration: a number with a unit `ns`, `us` (or `µs`), `ms` or
/// `s`; a bare number is milliseconds (`5` = `5ms`).
///
/// # Errors
/// A sentence naming the accepted forms.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (examples: 5ms, 500us, 1s)"))?;
    let ns = match unit.trim() {
        "ns" => v,
        "us" | "µs" => v * 1e3,
        "" | "ms" => v * 1e6,
        "s" => v * 1e9,
        u => return Err(format!("unknown unit '{u}' in '{s}' (use ns, us, ms or s)")),
    };
    if !(1.0..3.6e12).contains(&ns) {
        return Err(format!("'{s}' is out of range (1 ns to 1 hour)"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Parses a byte size: a number with an optional binary unit `K`/`KiB`,
/// `M`/`MiB`, `G`/`GiB` (all powers of 1024, as the study's 16 KB and 2 MB
/// are); a bare number is bytes.
///
/// # Errors
/// A sentence naming the accepted forms.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (examples: 16384, 16K, 2MiB)"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "k" | "KB" | "KiB" => 1 << 10,
        "M" | "MB" | "MiB" => 1 << 20,
        "G" | "GB" | "GiB" => 1 << 30,
        u => {
            return Err(format!(
                "unknown unit '{u}' in '{s}' (use K, M or G; powers of 1024)"
            ))
        }
    };
    v.checked_mul(mult)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("'{s}' is out of range"))
}

/// An integer with thousands separators: `208440` → `208,440`.
pub fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds as microseconds for a table cell: one decimal below 100 µs
/// (`1234` → `1.2`), whole microseconds with separators above
/// (`208440000` → `208,440`).
pub fn us(ns: u64) -> String {
    if ns < 100_000 {
        format!("{:.1}", ns as f64 / 1e3)
    } else {
        thousands((ns + 500) / 1000)
    }
}

/// Whole published microseconds with separators; `-` when not published.
pub fn published_us(v: Option<u64>) -> String {
    v.map(thousands).unwrap_or_else(|| "-".to_string())
}

/// A ratio for a table cell: two significant decimals below 10
/// (`0.52`, `3.2`), whole numbers above (`14`, `1,204`); `-` for none.
pub fn ratio(r: Option<f64>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) if !r.is_finite() => "-".to_string(),
        Some(r) if r < 1.0 => format!("{r:.2}"),
        Some(r) if r < 10.0 => format!("{r:.1}"),
        Some(r) => thousands(r.round() as u64),
    }
}

/// `a / b` when both exist and `b` is not 0.
pub fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Bytes as MiB with one decimal: `3145728` → `3.0`.
pub fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
}

/// A byte count with its binary unit for prose: `16384` → `16 KiB`,
/// `2097152` → `2 MiB`, `1000` → `1,000 B`.
pub fn bytes_human(b: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if b >= 1 << shift && b % (1 << shift) == 0 {
            return format!("{} {unit}", thousands(b >> shift));
        }
    }
    format!("{} B", thousands(b))
}

/// A duration for prose: `5000000` → `5 ms`, `500000` → `500 µs`,
/// `2500000000` → `2.5 s`.
pub fn duration_human(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        trim_float(ns as f64 / 1e9, "s")
    } else if ns >= 1_000_000 {
        trim_float(ns as f64 / 1e6, "ms")
    } else if ns >= 1_000 {
        trim_float(ns as f64 / 1e3, "µs")
    } else {
        format!("{ns} ns")
    }
}

fn trim_float(v: f64, unit: &str) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_and_without_units() {
        assert_eq!(parse_duration("5ms").unwrap(), Duration::from_millis(5));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_millis(5));
        assert_eq!(parse_duration("500us").unwrap(), Duration::from_micros(500));
        assert_eq!(
            parse_duration("2.5 s").unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            parse_duration("0ms").unwrap_err(),
            "'0ms' is out of range (1 ns to 1 hour)"
        );
        assert!(parse_duration("5 parsecs")
            .unwrap_err()
            .contains("unknown unit 'parsecs'"));
    }

    #[test]
    fn sizes_parse_as_powers_of_1024() {
        assert_eq!(parse_size("16384").unwrap(), 16384);
        assert_eq!(parse_size("16K").unwrap(), 16384);
        assert_eq!(parse_size("2MiB").unwrap(), 2 << 20);
        assert!(parse_size("0").is_err());
        assert!(parse_size("x").unwrap_err().contains("not a size"));
    }

    #[test]
    fn numbers_format_exactly() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(208_440), "208,440");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(us(1_234), "1.2");
        assert_eq!(us(99_949), "99.9");
        assert_eq!(us(208_440_000), "208,440");
        assert_eq!(published_us(None), "-");
        assert_eq!(published_us(Some(4_454)), "4,454");
        assert_eq!(ratio(Some(0.523)), "0.52");
        assert_eq!(ratio(Some(3.24)), "3.2");
        assert_eq!(ratio(Some(1203.6)), "1,204");
        assert_eq!(ratio(None), "-");
        assert_eq!(mib(3 << 20), "3.0");
        assert_eq!(bytes_human(16384), "16 KiB");
        assert_eq!(bytes_human(100 << 20), "100 MiB");
        assert_eq!(bytes_human(1000), "1,000 B");
        assert_eq!(duration_human(5_000_000), "5 ms");
        assert_eq!(duration_human(2_500_000_000), "2.5 s");
        assert_eq!(duration_human(500_000), "500 µs");
    }
}
