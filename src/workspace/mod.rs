//! A workspace per trial: the directory an agent works in, made fresh for every trial from a
//! template or a pinned commit, confined by bubblewrap, checked after the agent, and compared
//! with how it started ([workspaces.md](../../docs/workspaces.md)).

mod file_changes;
mod recipe;
pub mod relay;
mod sandbox;
mod tree;
mod trial_workspace;

pub use file_changes::{FileChange, FileChanges};
pub use recipe::{Isolation, Keep, Limits, Network, Origin, Provenance, RepoCheckout, SetupCommand, WorkspaceSpec};
pub use sandbox::probe;
pub use tree::{Tree, template_hash};
pub use trial_workspace::{TrialWorkspace, WorkspaceRecord, agent_cwd};
