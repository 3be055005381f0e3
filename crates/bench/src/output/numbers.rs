//! Plain numbers for the tables: counts with thousands separators and
//! ratios. Sizes and durations are not here: they print through
//! `rtrec-units`, as everywhere in rtrec.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ratios_format_exactly() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(208_440), "208,440");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(ratio(Some(0.523)), "0.52");
        assert_eq!(ratio(Some(3.24)), "3.2");
        assert_eq!(ratio(Some(1203.6)), "1,204");
        assert_eq!(ratio(None), "-");
        assert_eq!(ratio(div(Some(1.0), Some(0.0))), "-");
    }
}
