//! Name suggestions: "did you mean `edge`?".
//!
//! One policy for every stage (unknown directive, relation, type, functor):
//! the closest candidate by Levenshtein distance, if within 1 edit for words
//! of up to 3 characters, else within a third of the word's length (at
//! least 2). Ties go to the alphabetically first candidate, so messages are
//! deterministic.

/// The closest candidate to `word` that is a likely typo of it.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = word.chars().count();
    let limit = if len <= 3 { 1 } else { (len / 3).max(2) };
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters (names are short).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_likely_typos() {
        assert_eq!(closest("dcl", ["decl", "type", "input"]), Some("decl"));
        assert_eq!(closest("edg", ["edge", "path"]), Some("edge"));
        assert_eq!(closest("pathh", ["path", "edge"]), Some("path"));
        assert_eq!(closest("xyz", ["edge", "path"]), None);
        assert_eq!(
            closest("edge", ["edge"]),
            None,
            "a word is not a typo of itself"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
