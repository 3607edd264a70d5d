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

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(did_you_mean("timout", ["timeout", "tags", "id"]), Some("timeout"));
        assert_eq!(did_you_mean("zzz", ["timeout", "tags"]), None);
        assert_eq!(did_you_mean("bto", ["bot", "judge"]), Some("bot"));
    }
}
