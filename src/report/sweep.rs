//! The TTL trade-off as report data: the sweep's figures (see [`crate::explore::sweep`]),
//! stored in `report.json`, drawn by [`super::charts`] and tabled by [`super::markdown`].

/// [`crate::explore::sweep::TtlPoint`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::sweep::TtlPoint`; removed in 0.3.0"
)]
pub type TtlPoint = crate::explore::sweep::TtlPoint;
/// [`crate::explore::sweep::TtlSweep`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::sweep::TtlSweep`; removed in 0.3.0"
)]
pub type TtlSweep = crate::explore::sweep::TtlSweep;
