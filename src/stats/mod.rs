//! The statistics of the regression gate, written here because they are the product: exact
//! binomial tails, the McNemar mid-p test, Tango's score interval, Student's t, a
//! seeded paired bootstrap, the minimum detectable effect and the three-state verdict.
//! Pure functions of numbers; nothing of evalgate is imported.

mod binomial;
mod bootstrap;
mod interval;
mod paired;
mod power;
mod special;
mod verdict;

pub use binomial::{binomial_pmf, sign_midp};
pub use bootstrap::{BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_mean_interval};
pub use interval::tango;
pub use paired::{Estimate, Method, PairedRates, estimate};
pub use power::{POWER, min_detectable_drop};
pub use special::{ln_gamma, normal_cdf, normal_quantile, student_t_cdf, student_t_quantile};
pub use verdict::{Mode, Rule, Verdict, decide};
