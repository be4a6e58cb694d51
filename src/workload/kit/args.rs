//! What the flag groups of the families and the command line's own flags
//! share: the `--help` headings they appear under, and the parsers of
//! whole numbers, so that every count is refused with the same words.

/// The `--help` heading of the workloads' flags.
pub const WORKLOAD: &str = "Workload";
/// The `--help` heading of the flags about several nodes.
pub const NODES: &str = "Several nodes";

/// A whole number of at least 1, with a message that says so.
pub fn parse_positive<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + From<u8>,
{
    let v = parse_count::<T>(s)?;
    if v < T::from(1u8) {
        return Err("must be 1 or more".to_string());
    }
    Ok(v)
}

/// A whole number of at least 0, with a message that says so.
pub fn parse_count<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    let t = s.trim().replace('_', "");
    if t.starts_with('-') {
        return Err(format!("'{s}' is negative: write digits, e.g. 1000"));
    }
    t.parse::<T>()
        .map_err(|_| format!("'{s}' is not a whole number (write digits, e.g. 1000)"))
}

/// `on` or `off` (and their synonyms), as sysbench's boolean options.
pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_refuse_negative_zero_and_text() {
        assert_eq!(parse_positive::<usize>("4"), Ok(4));
        assert_eq!(parse_positive::<usize>("1_000"), Ok(1000));
        assert!(
            parse_positive::<usize>("0")
                .unwrap_err()
                .contains("1 or more")
        );
        assert!(
            parse_positive::<usize>("-3")
                .unwrap_err()
                .contains("negative")
        );
        assert!(
            parse_positive::<usize>("ten")
                .unwrap_err()
                .contains("whole number")
        );
        assert_eq!(parse_count::<u64>("0"), Ok(0));
    }
}
