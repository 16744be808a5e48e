//! The fault kinds the explorer generates, each in one file, and the one registry of them.
//!
//! A kind is a struct with its fields (what a [`GenFault`] of that kind serializes) implementing
//! [`Kind`]: its name, the nodes it names, its time, its strength (the one measure shrinking
//! minimises, coverage feedback scales and the assumption-bounded profile clamps), its
//! expansion into the world's faults, its words, its effect on a lock's assumptions
//! ([`Effect`]), and how it is drawn — at random ([`Kind::strategy`], a proptest strategy),
//! aimed at an anchor of the fault-free run ([`Kind::aim`]) or at one of the lock's operations
//! ([`Kind::aim_at_operation`]), and on the bounded-exhaustive grid ([`Kind::exhaustive`]).
//!
//! The kinds are listed once, in `crate::model::fault`'s `generated_kinds!` (default kinds, then
//! opt-in ones; the model reads its name lists from it, as it sits below the explorer); `registry!`
//! here makes from that list [`GenFault`] (`enum GenFault { Pause(Pause), … }`, serialized with the kind's name
//! as its `kind` tag) and the one dispatch from a fault, or a kind's name, to its kind. The
//! explorer's algorithms (`generate`, `anchors`, `coverage`, `shrink`, `exhaustive`,
//! `assumptions`) call these and never match on a kind.
//!
//! Adding a kind: its file here (the struct, its `Kind` impl, a unit test) and one line in
//! `generated_kinds!` (in `src/model/fault.rs`, at the end of its opt-in group: a kind added to
//! the default group would move every committed exploration); a compile-time check keeps each
//! kind's `NAME` the list's. The world's effect comes
//! from the sim's faults it expands into: a kind that needs a new one adds it to
//! `lockstep-history/src/fault.rs`. Live runs judge and apply the expanded world faults
//! (`crate::live::faults::refusal`), so a kind built from faults live runs support runs live
//! with nothing more.
//!
//! Left out: a kind cannot change the order in which seeds draw kinds (that is the profile's
//! `kinds` order), nor the workload.

mod context;
mod effect;

pub use context::{pick_one, Aim, Draw, Grid, OperationAim, Topology, NEAR_MS};
pub use effect::{Effect, StopKind};
pub use latency::Spike;

use lockstep_sim::ScheduledFault;
use proptest::strategy::BoxedStrategy;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One generated fault kind: everything the explorer knows about it.
///
/// Its struct has an `at_ms` field, when it starts (its first world fault), true ms: the
/// registry reads and moves it (`GenFault::at_ms_mut`).
///
/// The associated functions without `self` are how faults of the kind are made; they are called
/// by name through the registry ([`GenFault::strategy`], [`GenFault::aim`], ...).
pub trait Kind: Sized + Into<GenFault> {
    /// Its name: the `kind` tag it serializes with, what `--kinds` and `[explore] kinds` take.
    const NAME: &'static str;

    /// What it does, in a line (`lockstep list`, for kinds a scenario's `[[fault]]` table does
    /// not take).
    const ABOUT: &'static str;

    /// Whether anchored placement draws this opt-in kind whenever the profile holds every
    /// default kind (random placement leaves it out, so that its plans, and every committed
    /// exploration digest, stay what they were).
    const ANCHORED_WITH_DEFAULTS: bool = false;

    /// Whether an operation aim of this kind at a release is wasted (and skipped before any of
    /// the aim's draws).
    const WASTED_ON_RELEASE: bool = false;

    /// Its places in the list an operation aim draws its kind from (none: the kind is not drawn
    /// for operation aims, whatever its [`Kind::aim_at_operation`]); two places draw it twice as
    /// often. The places of all kinds number 0, 1, 2, … without a gap. A new kind takes the next
    /// free places: moving an existing one would change every committed exploration.
    const OPERATION_DRAW_PLACES: &'static [usize] = &[];

    /// The nodes it names.
    fn nodes(&self) -> Vec<&str>;

    /// Sets its strength — in its own unit: ms of stall, window, downtime or clock step, ppm of
    /// rate error or loss, replies lost — to `f` of itself, within the kind's bounds. The one
    /// measure: shrinking makes it smaller, coverage feedback scales it, the assumption-bounded
    /// profile clamps it. A kind without one leaves itself alone.
    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64);

    /// The world faults it expands into.
    fn expand(&self) -> Vec<ScheduledFault>;

    /// The fault in words: "pause of client-1 for 1200 ms at 300 ms".
    fn describe(&self) -> String;

    /// What it does to the deployment, as the assumption-bounded profile judges plans.
    fn effects(&self) -> Vec<Effect<'_>>;

    /// What the assumption-bounded profile makes of it when it would make a master lose the
    /// lock's key early (`None`: it stays, to be clamped by its strength).
    fn without_key_loss(&self, _resource: &str) -> Option<GenFault> {
        None
    }

    /// Its proptest strategy over the topology and profile (`None`: no node it could target).
    fn strategy(draw: &Draw) -> Option<BoxedStrategy<GenFault>>;

    /// One fault aimed at an anchor of the fault-free run (`None`: none for this topology).
    fn aim(_rng: &mut ChaCha8Rng, _aim: &Aim) -> Option<GenFault> {
        None
    }

    /// One fault aimed at one of the lock's operations (`None`: the kind has no such aim).
    fn aim_at_operation(_rng: &mut ChaCha8Rng, _aim: &OperationAim) -> Option<GenFault> {
        None
    }

    /// Its values on the bounded-exhaustive grid at one instant (none: not part of the
    /// lease-model vocabulary).
    fn exhaustive(_grid: &Grid) -> Vec<GenFault> {
        Vec::new()
    }
}

/// A kind's name and its ways of making faults, as the registry lists them.
struct Entry {
    name: &'static str,
    about: &'static str,
    anchored_with_defaults: bool,
    wasted_on_release: bool,
    operation_draw_places: &'static [usize],
    strategy: fn(&Draw) -> Option<BoxedStrategy<GenFault>>,
    aim: fn(&mut ChaCha8Rng, &Aim) -> Option<GenFault>,
    aim_at_operation: fn(&mut ChaCha8Rng, &OperationAim) -> Option<GenFault>,
    exhaustive: fn(&Grid) -> Vec<GenFault>,
}

/// Makes [`GenFault`] of the listed kinds and the one dispatch to them.
macro_rules! registry {
    // The one list (`crate::model::fault::generated_kinds!`): default kinds, then opt-in ones.
    (default { $($default:tt)* } opt_in { $($opt_in:tt)* }) => {
        registry! { $($default)* $($opt_in)* }
    };
    ($($(#[$doc:meta])* $module:ident::$kind:ident = $name:literal,)*) => {
        // Each kind's own name is the one the list gives it.
        $(const _: () = assert!(
            same_str(<$kind as Kind>::NAME, $name),
            concat!("the list names `", stringify!($kind), "` otherwise than its NAME")
        );)*

        $(mod $module;
        pub use $module::$kind;)*

        /// One generated fault; windows carry their length so they shrink as one fault.
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "kebab-case")]
        pub enum GenFault {
            $($(#[$doc])* $kind($kind),)*
        }

        $(impl From<$kind> for GenFault {
            fn from(kind: $kind) -> GenFault {
                GenFault::$kind(kind)
            }
        })*

        /// Every kind, in the registry's order.
        const REGISTRY: &[Entry] = &[$(Entry {
            name: <$kind as Kind>::NAME,
            about: <$kind as Kind>::ABOUT,
            anchored_with_defaults: <$kind as Kind>::ANCHORED_WITH_DEFAULTS,
            wasted_on_release: <$kind as Kind>::WASTED_ON_RELEASE,
            operation_draw_places: <$kind as Kind>::OPERATION_DRAW_PLACES,
            strategy: <$kind as Kind>::strategy,
            aim: <$kind as Kind>::aim,
            aim_at_operation: <$kind as Kind>::aim_at_operation,
            exhaustive: <$kind as Kind>::exhaustive,
        },)*];

        impl GenFault {
            /// The kind, as in `GENERATED_KINDS`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(GenFault::$kind(_) => <$kind as Kind>::NAME,)*
                }
            }

            /// When it starts, true ms (a rolling restart: its first stop), to read or move.
            pub(crate) fn at_ms_mut(&mut self) -> &mut u64 {
                match self {
                    $(GenFault::$kind(k) => &mut k.at_ms,)*
                }
            }

            /// The nodes it names.
            pub fn nodes(&self) -> Vec<&str> {
                match self {
                    $(GenFault::$kind(k) => k.nodes(),)*
                }
            }

            /// Sets the magnitude to `f` of itself, within the kind's bounds (see
            /// [`Kind::scale_magnitude`]).
            pub fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
                match self {
                    $(GenFault::$kind(k) => k.scale_magnitude(f),)*
                }
            }

            /// The world faults it expands into.
            pub fn expand(&self) -> Vec<ScheduledFault> {
                match self {
                    $(GenFault::$kind(k) => k.expand(),)*
                }
            }

            /// The fault in words: "pause of client-1 for 1200 ms at 300 ms".
            pub fn describe(&self) -> String {
                match self {
                    $(GenFault::$kind(k) => k.describe(),)*
                }
            }

            /// What it does to the deployment, as the assumption-bounded profile judges plans.
            pub fn effects(&self) -> Vec<Effect<'_>> {
                match self {
                    $(GenFault::$kind(k) => k.effects(),)*
                }
            }

            /// What the assumption-bounded profile makes of it when it would make a master lose
            /// the key early (see [`Kind::without_key_loss`]).
            pub fn without_key_loss(&self, resource: &str) -> Option<GenFault> {
                match self {
                    $(GenFault::$kind(k) => k.without_key_loss(resource),)*
                }
            }
        }
    };
}

crate::model::fault::generated_kinds!(registry);

/// Whether two texts are the same, at compile time.
const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

fn entry(kind: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == kind)
}

impl GenFault {
    /// How strong the fault is, in its kind's own unit (0 for a kind without a strength): the
    /// one measure, read through [`GenFault::scale_magnitude`].
    pub fn magnitude(&self) -> u64 {
        let mut seen = 0;
        self.clone().scale_magnitude(|v| {
            seen = v;
            v
        });
        seen
    }

    /// Every kind's name, in the registry's order.
    pub fn kinds() -> impl Iterator<Item = &'static str> {
        REGISTRY.iter().map(|e| e.name)
    }

    /// What kind `kind` does, in a line (`None`: no such kind).
    pub fn about(kind: &str) -> Option<&'static str> {
        entry(kind).map(|e| e.about)
    }

    /// The opt-in kinds anchored placement draws whenever the profile holds every default kind.
    pub(crate) fn anchored_with_defaults() -> impl Iterator<Item = &'static str> {
        REGISTRY.iter().filter(|e| e.anchored_with_defaults).map(|e| e.name)
    }

    /// The list an operation aim draws its kind from: each kind at its places
    /// ([`Kind::OPERATION_DRAW_PLACES`]), in the places' order.
    pub(crate) fn operation_draw_kinds() -> Vec<&'static str> {
        let mut places: Vec<(usize, &'static str)> = REGISTRY
            .iter()
            .flat_map(|e| e.operation_draw_places.iter().map(move |&place| (place, e.name)))
            .collect();
        places.sort_unstable();
        places.into_iter().map(|(_, name)| name).collect()
    }

    /// Whether an operation aim of kind `kind` at a release is wasted.
    pub(crate) fn wasted_on_release(kind: &str) -> bool {
        entry(kind).is_some_and(|e| e.wasted_on_release)
    }

    /// The strategy of kind `kind` (`None`: an unknown kind, or no node it could target).
    pub fn strategy(kind: &str, draw: &Draw) -> Option<BoxedStrategy<GenFault>> {
        (entry(kind)?.strategy)(draw)
    }

    /// One fault of kind `kind` aimed at an anchor (`None`: an unknown kind, or none here).
    pub fn aim(kind: &str, rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        (entry(kind)?.aim)(rng, aim)
    }

    /// One fault of kind `kind` aimed at one of the lock's operations (`None`: an unknown kind,
    /// or one without such an aim).
    pub fn aim_at_operation(kind: &str, rng: &mut ChaCha8Rng, aim: &OperationAim) -> Option<GenFault> {
        (entry(kind)?.aim_at_operation)(rng, aim)
    }

    /// Every kind's values on the bounded-exhaustive grid at one instant.
    pub fn exhaustive(grid: &Grid) -> Vec<GenFault> {
        REGISTRY.iter().flat_map(|e| (e.exhaustive)(grid)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operation aims' draw list: places 0, 1, 2, … without a gap or a repeat, every kind
    /// in it able to aim at an operation, in the order the committed explorations drew from.
    #[test]
    fn operation_draw_places_are_a_list() {
        let mut places: Vec<usize> = REGISTRY
            .iter()
            .flat_map(|e| e.operation_draw_places.iter().copied())
            .collect();
        places.sort_unstable();
        assert_eq!(places, (0..places.len()).collect::<Vec<_>>());
        assert_eq!(
            GenFault::operation_draw_kinds(),
            ["pause", "pause", "hold", "clock-jump", "latency"],
            "the committed explorations' order"
        );
    }
    use crate::model::fault::{FaultProfile, GENERATED_KINDS};
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;

    /// A topology every kind can target: three masters, one with a replica and `aof-everysec`.
    pub(crate) fn topology() -> Topology {
        Topology {
            masters: vec!["redis-1".into(), "redis-2".into(), "redis-3".into()],
            clients: vec!["client-1".into(), "client-2".into()],
            resource: "resource".into(),
            duration_ms: 10_000,
            ttl_ms: 2_000,
            replicas: vec!["redis-1-replica-1".into()],
            everysec: vec!["redis-2".into()],
            replicated: vec!["redis-1".into()],
            request_timeout_ms: 50,
            network_latency_ms: (1, 3),
        }
    }

    /// One fault of each kind, drawn by its strategy.
    pub(crate) fn one_of_each() -> Vec<GenFault> {
        let topo = topology();
        let profile = FaultProfile::default();
        let draw = Draw::new(&topo, &profile).expect("clients and masters");
        let mut runner = TestRunner::deterministic();
        GenFault::kinds()
            .map(|k| {
                let strategy = GenFault::strategy(k, &draw).unwrap_or_else(|| panic!("{k} draws nothing"));
                strategy.new_tree(&mut runner).expect("never rejects").current()
            })
            .collect()
    }

    #[test]
    fn the_registry_and_the_model_list_the_same_names_and_serialize_with_them() {
        let names: Vec<&str> = GenFault::kinds().collect();
        // Both come from the one list, in its order.
        assert_eq!(names, GENERATED_KINDS, "GENERATED_KINDS and the registry differ");
        for (fault, name) in one_of_each().iter().zip(&names) {
            assert_eq!(fault.kind(), *name);
            let json = serde_json::to_value(fault).expect("serializes");
            assert_eq!(json["kind"], *name, "{json}");
            let back: GenFault = serde_json::from_value(json).expect("reads back");
            assert_eq!(&back, fault);
            assert!(!fault.describe().is_empty() && !fault.expand().is_empty());
            assert!(GenFault::about(name).is_some_and(|a| !a.is_empty()), "{name}");
        }
        assert_eq!(GenFault::about("no-such-kind"), None);
        assert!(GenFault::strategy(
            "no-such-kind",
            &Draw::new(&topology(), &FaultProfile::default()).unwrap()
        )
        .is_none());
    }

    /// Shrinking and coverage measure a fault the same way: the one strength, read and scaled.
    #[test]
    fn every_kind_is_measured_by_the_strength_it_scales() {
        for mut fault in one_of_each() {
            let before = fault.magnitude();
            fault.scale_magnitude(|v| v / 2);
            assert_eq!(fault.magnitude(), before / 2, "{fault:?}");
        }
    }
}
