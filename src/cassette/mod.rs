//! Cassettes: model traffic recorded once and replayed in every later run, so a pull
//! request's run of a model-bound suite costs nothing, is deterministic and never goes live.
//!
//! A cassette is one JSON-lines file a suite, committed with it: one line an entry, sorted
//! by key, so a re-record changes only the lines of what changed. An entry is one request,
//! as its canonical JSON (object keys sorted, secrets redacted; never a header or a key),
//! the answers recorded for it, in the order they were asked, and the suites whose recording
//! runs asked it. The `n`-th time a run asks the same request it gets the `n`-th answer, and
//! never one answer twice. A run that asks
//! more often than the cassette has answers (a larger `repeat`) misses, as a changed
//! request does: replayed trials are the recorded samples, one each, never copies.
//!
//! In replay a miss is an error naming the request and the nearest recorded one with what
//! differs; it is never a live call. `record` asks live and replaces the answers of every
//! request it made; `record_missing` replays what the cassette holds and asks live only for
//! the rest. Entries the run did not ask are kept (a filtered run re-records only its tasks)
//! and reported as unused, which `evalgate cassettes prune` reads.
//!
//! Recorded traffic holds no secret in any form: every entry goes through `file::write`, the one
//! place entries reach the file, which refuses an entry holding a secret in any decoding the
//! redactor knows (`redact::hidden`: a streamed answer's events joined, JSON escapes,
//! percent-encoding, base64); `lookup` and `record` redact on the decoded content first
//! (`redact::decoded`), and `record` refuses such an answer the moment it is given, saying so.
//! A save writes the entries the file held when the run opened it and those this process
//! recorded, never what else is on the disk by then (an agent of the recording run can write
//! to the file).

mod diff;
mod door;
mod entry;
mod file;
mod recorded;
mod usage;
mod volatile;

pub use door::{Door, Miss, Passed, Traffic, pass};
pub use entry::{Entry, Mode, canonical};
pub use recorded::{Cassette, ReadError};
pub use usage::Usage;
pub use volatile::Volatile;
