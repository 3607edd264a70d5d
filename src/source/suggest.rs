//! "Did you mean" suggestions for misspelled keys, names and values.

/// The candidate closest to `input`, if it is close enough to be a plausible typo.
pub fn did_you_mean<'a, I>(input: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    candidates
        .into_iter()
        .map(|c| {
            // A transposition or one wrong letter in a short name is a typo too.
            let close = strsim::damerau_levenshtein(input, c) <= (input.chars().count() / 3).max(1);
            let score = strsim::jaro_winkler(input, c);
            (if close { score.max(0.8) } else { score }, c)
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// What to say of a name that is none of the names there are: every "did you mean"
/// message is made here, so they all read alike.
#[derive(Debug)]
pub struct Unknown<'a> {
    near: Option<String>,
    known: Vec<&'a str>,
}

/// `input`, which is none of `known`.
pub fn unknown<'a>(input: &str, known: impl IntoIterator<Item = &'a str>) -> Unknown<'a> {
    let known: Vec<&str> = known.into_iter().collect();
    Unknown { near: did_you_mean(input, known.iter().copied()).map(str::to_owned), known }
}

impl Unknown<'_> {
    /// The close name as the user would write it (`{vars.NAME}`, `--tag NAME`).
    #[must_use]
    pub fn written(mut self, write: impl Fn(&str) -> String) -> Self {
        self.near = self.near.map(|n| write(&n));
        self
    }

    /// "did you mean `X`?", for a close name only.
    pub fn suggestion(&self) -> Option<String> {
        self.near.as_ref().map(|n| format!("did you mean `{n}`?"))
    }

    /// The suggestion, else the names there are after `listed` ("expected one of: a, b"),
    /// else `none` when there is none.
    pub fn help(&self, listed: &str, none: &str) -> String {
        match self.suggestion() {
            Some(s) => s,
            None if self.known.is_empty() => none.to_owned(),
            None => format!("{listed}: {}", self.known.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{did_you_mean, unknown};

    #[test]
    fn every_suggestion_reads_alike() {
        assert_eq!(unknown("bto", ["bot"]).help("agents", "none"), "did you mean `bot`?");
        let tag = unknown("smok", ["smoke"]).written(|s| format!("--tag {s}"));
        assert_eq!(tag.suggestion().as_deref(), Some("did you mean `--tag smoke`?"));
        assert_eq!(unknown("zzz", ["bot", "judge"]).help("agents", "none"), "agents: bot, judge");
        assert_eq!(unknown("zzz", []).help("agents", "the suite defines no agents"), "the suite defines no agents");
        assert_eq!(unknown("zzz", ["bot"]).suggestion(), None);
    }

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(did_you_mean("timout", ["timeout", "tags", "id"]), Some("timeout"));
        assert_eq!(did_you_mean("zzz", ["timeout", "tags"]), None);
        assert_eq!(did_you_mean("bto", ["bot", "judge"]), Some("bot"));
    }
}
