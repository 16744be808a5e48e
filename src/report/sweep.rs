//! The TTL trade-off as report data: the sweep's figures (see [`crate::explore::sweep`]),
//! stored in `report.json`, drawn by [`super::charts`] and tabled by [`super::markdown`].

pub use crate::explore::sweep::{TtlPoint, TtlSweep};
