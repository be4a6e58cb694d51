//! What workloads are built from: the settings every workload shares, and
//! each family's own, built by the family's flag group (its `args.rs`) and
//! kept here by type, so that this contract names no family.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::workload::kit::{keys, partition};

/// What workloads need from the command line: the shape of the data, how
/// keys are drawn, how statements are sent. Nothing about pacing or
/// reports.
#[derive(Clone, Debug)]
pub struct Settings {
    pub threads: usize,
    /// Rows (records) loaded, or keys drawn from.
    pub rows: u64,
    pub batch_size: usize,
    pub field_len: usize,
    /// False under --no-prepared: no operation may leave a named statement
    /// on its connection (literals over the simple protocol, or unnamed
    /// statements, see [`crate::db::unnamed`]).
    pub prepared: bool,
    /// How statements are sent (`-M`); `prepared` is its Prepared.
    pub protocol: crate::db::wire::Protocol,
    /// The table name given with --table-name, if any (each table set has
    /// its own default).
    pub table_name: Option<String>,
    pub tablets: Option<u32>,
    pub drop: bool,
    pub force: bool,
    pub seed: u64,
    pub csv_dir: PathBuf,
    /// How query workloads pick keys; None: the workload's own default.
    pub keys: Option<keys::KeyDistribution>,
    /// `--zipf-theta`, if given: the exponent of the zipfian and `latest`
    /// of --key-distribution and of the YCSB mixes' own keys.
    pub zipf_theta: Option<f64>,
    /// Each family's own settings, from its flag group.
    pub families: FamilySettings,
    /// `--isolation`, for workloads that begin their transactions with
    /// an explicit level.
    pub isolation: Option<crate::db::sql::Isolation>,
    /// Which of several clients this is (`--clients`): loads take the
    /// share of the client's threads among all clients' threads.
    pub client: partition::ClientShare,
}

impl Settings {
    /// The ids (records, rows of all tables) this client's thread `t`
    /// loads out of `rows`: every loader takes its share through here, so
    /// that several clients together load 0..rows once.
    pub fn share(&self, rows: u64, t: usize) -> std::ops::Range<u64> {
        self.client.thread_range(rows, self.threads, t)
    }
}

impl Settings {
    /// The settings of the family whose type `T` is, as its flag group
    /// built them; the family's defaults when none were built (a
    /// workload built outside a run of the command line, as tests do).
    pub fn family<T: FamilySetting + Clone + Default>(&self) -> Cow<'_, T> {
        match self.families.get::<T>() {
            Some(t) => Cow::Borrowed(t),
            None => Cow::Owned(T::default()),
        }
    }
}

/// The settings of one family, built from its flags.
pub trait FamilySetting: Any + std::fmt::Debug + Send + Sync {}

impl<T: Any + std::fmt::Debug + Send + Sync> FamilySetting for T {}

/// Each family's settings, kept by their type: the contract holds them
/// without knowing any family, and a family finds its own through
/// [`Settings::family`].
#[derive(Clone, Default)]
pub struct FamilySettings(BTreeMap<TypeId, Arc<dyn FamilySetting>>);

impl FamilySettings {
    /// Keeps `t`, replacing settings of the same type.
    pub fn insert<T: FamilySetting>(&mut self, t: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(t));
    }

    /// The settings of type `T`, if they were kept.
    pub fn get<T: FamilySetting>(&self) -> Option<&T> {
        let t: &dyn Any = self.0.get(&TypeId::of::<T>())?.as_ref();
        t.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for FamilySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.values()).finish()
    }
}
