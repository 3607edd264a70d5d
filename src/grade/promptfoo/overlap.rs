//! The text-overlap metrics of promptfoo's `levenshtein`, `rouge-n` and `bleu` assertions,
//! computed as promptfoo 0.123.1 computes them (fastest-levenshtein, js-rouge's tokenizer
//! with clipped counts, its own BLEU).

use std::collections::HashMap;

/// The edit distance in UTF-16 code units, as fastest-levenshtein counts a JavaScript string.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<u16> = a.encode_utf16().collect();
    let b: Vec<u16> = b.encode_utf16().collect();
    strsim::generic_levenshtein(&a, &b)
}

/// How often each n-gram (words joined by a space) occurs.
fn counts(grams: &[String]) -> HashMap<&str, usize> {
    let mut map = HashMap::new();
    for g in grams {
        *map.entry(g.as_str()).or_insert(0) += 1;
    }
    map
}

fn ngrams(words: &[String], n: usize) -> Vec<String> {
    if n == 0 || n > words.len() {
        return Vec::new();
    }
    words.windows(n).map(|w| w.join(" ")).collect()
}

/// js-rouge's `treeBankTokenize` for one sentence: whitespace folded, punctuation split off
/// (`...`, `,` and `:` not before a digit, `;@#$%&?!`, brackets, `--`, a final `.`),
/// closing quotes and the common contractions split.
pub fn treebank_tokens(input: &str) -> Vec<String> {
    let text = input.split(|c: char| c.is_whitespace() || c == '\u{85}').filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Vec::new();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut parse = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '.' && next == Some('.') && chars.get(i + 2) == Some(&'.') {
            parse.push_str(" ... ");
            i += 3;
            continue;
        }
        if c == '-' && next == Some('-') {
            parse.push_str(" -- ");
            i += 2;
            continue;
        }
        match c {
            ',' | ':' if !next.is_some_and(|n| n.is_ascii_digit()) => parse.push_str(&format!(" {c} ")),
            ';' | '@' | '#' | '$' | '%' | '&' | '?' | '!' | '[' | ']' | '(' | ')' | '{' | '}' | '<' | '>' => {
                parse.push_str(&format!(" {c} "))
            }
            _ => parse.push(c),
        }
        i += 1;
    }
    // A final `.` (followed only by closing brackets, quotes or spaces) is its own token.
    let trimmed = parse.trim_end_matches(|c: char| matches!(c, ']' | ')' | '}' | '>' | '\'' ) || c.is_whitespace());
    if let Some(before) = trimmed.strip_suffix('.')
        && !before.ends_with('.')
    {
        let tail = &parse[trimmed.len()..];
        parse = format!("{before} .{tail} ");
    }
    let mut parse = format!(" {parse} ");
    for (from, to) in [("' ", " ' "), ("'s ", " 's "), ("'S ", " 'S "), ("'m ", " 'm "), ("'M ", " 'M "), ("'d ", " 'd "), ("'D ", " 'D ")] {
        parse = parse.replace(from, to);
    }
    for suffix in ["'ll", "'LL", "'re", "'RE", "'ve", "'VE", "n't", "N'T"] {
        parse = parse.replace(&format!("{suffix} "), &format!(" {suffix} "));
    }
    parse.split(' ').filter(|t| !t.is_empty()).map(str::to_owned).collect()
}

/// promptfoo's ROUGE-N F-score (n = 1, beta = 1) on clipped n-gram counts; the caller
/// lowercases.
pub fn rouge_n(candidate: &str, reference: &str) -> f64 {
    let (c, r) = (treebank_tokens(candidate), treebank_tokens(reference));
    if c.is_empty() || r.is_empty() {
        return 0.0;
    }
    let (cg, rg) = (ngrams(&c, 1), ngrams(&r, 1));
    let rc = counts(&rg);
    let overlap: usize = counts(&cg).iter().map(|(g, n)| (*n).min(rc.get(g).copied().unwrap_or(0))).sum();
    if overlap == 0 {
        return 0.0;
    }
    let (p, rec) = (overlap as f64 / cg.len() as f64, overlap as f64 / rg.len() as f64);
    // js-rouge's fMeasure with beta 1.
    ((1.0 + 1.0) * rec * p) / (rec + p)
}

/// JavaScript's `text.toLowerCase().trim().split(/\s+/)` (an empty text is one empty word).
fn words(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let list: Vec<String> = lower.split_whitespace().map(str::to_owned).collect();
    if list.is_empty() { vec![String::new()] } else { list }
}

/// promptfoo's BLEU (equal weights over 1- to 4-grams, orders the candidate is too short for
/// left out, a precision of 0 smoothed to 1e-7, the closest reference length's brevity penalty).
pub fn bleu(candidate: &str, references: &[String]) -> f64 {
    if candidate.trim().is_empty() || references.is_empty() {
        return 0.0;
    }
    let cand = words(candidate);
    let refs: Vec<Vec<String>> = references.iter().map(|r| words(r)).collect();
    let closest = refs.iter().map(Vec::len).reduce(|prev, curr| {
        let (dc, dp) = (curr.abs_diff(cand.len()), prev.abs_diff(cand.len()));
        if dc < dp || (dc == dp && curr < prev) { curr } else { prev }
    });
    let closest = closest.unwrap_or(0);
    let mut orders = Vec::new();
    for n in 1..=4 {
        let grams = ngrams(&cand, n);
        if grams.is_empty() {
            continue;
        }
        let cc = counts(&grams);
        let best = refs
            .iter()
            .map(|r| {
                let rg = ngrams(r, n);
                let rc = counts(&rg);
                cc.iter().map(|(g, k)| (*k).min(rc.get(g).copied().unwrap_or(0))).sum::<usize>()
            })
            .max()
            .unwrap_or(0);
        orders.push(best as f64 / grams.len() as f64);
    }
    let bp = if cand.len() > closest { 1.0 } else { (1.0 - closest as f64 / cand.len() as f64).exp() };
    let weight = 0.25 * orders.len() as f64;
    if weight == 0.0 {
        return 0.0;
    }
    let score: f64 = orders.iter().map(|p| 0.25 / weight * if *p == 0.0 { 1e-7_f64 } else { *p }.ln()).sum();
    bp * score.exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levenshtein_counts_utf16_units() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        // An astral character is two JavaScript units.
        assert_eq!(levenshtein("a😀", "a"), 2);
    }

    #[test]
    fn treebank_splits_punctuation_and_contractions() {
        assert_eq!(treebank_tokens("Hello, world! It's done."), ["Hello", ",", "world", "!", "It", "'s", "done", "."]);
        assert_eq!(treebank_tokens("I can't go: 3,000 people"), ["I", "ca", "n't", "go", ":", "3,000", "people"]);
    }

    #[test]
    fn rouge_of_a_text_with_itself_is_one() {
        assert!((rouge_n("the cat sat on the mat", "the cat sat on the mat") - 1.0).abs() < 1e-12);
        assert_eq!(rouge_n("", "a"), 0.0);
    }

    #[test]
    fn bleu_of_identical_texts_is_one_and_of_disjoint_ones_near_zero() {
        let r = vec!["the quick brown fox jumps".to_owned()];
        assert!((bleu("the quick brown fox jumps", &r) - 1.0).abs() < 1e-12);
        assert!(bleu("nothing alike here at all", &r) < 1e-6);
        assert_eq!(bleu("   ", &r), 0.0);
    }
}
