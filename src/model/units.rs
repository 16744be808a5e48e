//! How times and lock values are written for people — one rule each, used by the checkers'
//! explanations, the console timeline, the charts, the interactive pages and the exploration
//! summaries alike, so that one event reads the same everywhere.
//!
//! Times are true (simulated, or live real) time since the run's start, in seconds with three
//! decimals, truncated to the millisecond: an event at 10.5029 s is `10.502 s` everywhere (a
//! rounding rule in one place and truncation in another would put one event 1 ms apart in two
//! views). Lock values are random hex; their first 8 characters tell them apart.

/// `at_us` (µs) as seconds with three decimals, truncated: `10.502`.
pub(crate) fn seconds_number(at_us: u64) -> String {
    format!("{}.{:03}", at_us / 1_000_000, at_us % 1_000_000 / 1_000)
}

/// `at_us` (µs) as seconds with their unit: `10.502 s`.
pub fn seconds(at_us: u64) -> String {
    format!("{} s", seconds_number(at_us))
}

/// `ms` as seconds with their unit: `10.502 s`.
pub(crate) fn seconds_of_ms(ms: u64) -> String {
    seconds(ms.saturating_mul(1_000))
}

/// A lock value shortened for one-line texts (witnesses and histories keep it whole): its first
/// 8 characters.
pub(crate) fn short_value(value: &str) -> &str {
    value.get(..8).unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_truncate_to_the_millisecond_and_values_keep_eight_characters() {
        assert_eq!(seconds(10_502_900), "10.502 s");
        assert_eq!(seconds_number(999), "0.000");
        assert_eq!(seconds_number(61_000_000), "61.000");
        assert_eq!(seconds_of_ms(1_500), "1.500 s");
        assert_eq!(short_value("a7755264c0ffee"), "a7755264");
        assert_eq!(short_value("abc"), "abc");
        // A multi-byte character at the cut keeps the whole value rather than splitting it.
        assert_eq!(short_value("ééééé"), "éééé");
    }
}
