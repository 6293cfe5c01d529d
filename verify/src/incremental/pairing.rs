//! Old position → new of equal items of two sequences (flows, rows, VM names).
//!
//! Expects two sequences that mostly share a prefix and a suffix (an update
//! adds or removes a few of tens of thousands). Guarantees: [`positions`]
//! pairs the k-th of equal items in `old` with the k-th in `new` (as
//! [`paired`] over every item does), hashing only the middles.

use super::*;

/// The lengths of the longest common prefix of `old` and `new` under
/// `same`, and of the longest common suffix of what is left after it (the
/// two never overlap).
pub(super) fn common_ends<T>(
    old: &[T],
    new: &[T],
    same: impl Fn(&T, &T) -> bool,
) -> (usize, usize) {
    let p = old.iter().zip(new).take_while(|(a, b)| same(a, b)).count();
    let longest = old.len().min(new.len()) - p;
    let s = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(longest)
        .take_while(|(a, b)| same(a, b))
        .count();
    (p, s)
}

/// Old position → new position of equal items (the k-th of equal items
/// in `old` is the k-th in `new`); `None` when it is the identity.
/// Only the part between the common prefix and suffix is hashed (an
/// update adds or removes a few of tens of thousands of rows): a prefix
/// item stays, a suffix item shifts by the length difference, unless the
/// two middles hold an item of the suffix a different number of times.
pub(crate) fn positions<K: Eq + std::hash::Hash>(old: &[K], new: &[K]) -> Option<Vec<Option<u32>>> {
    let (p, s) = common_ends(old, new, |a, b| a == b);
    if p == old.len() && p == new.len() {
        return None;
    }
    let (om, nm) = (&old[p..old.len() - s], &new[p..new.len() - s]);
    let mut count: HashMap<&K, i64, Quick> = HashMap::default();
    for k in om {
        *count.entry(k).or_default() += 1;
    }
    for k in nm {
        *count.entry(k).or_default() -= 1;
    }
    let uneven: Vec<&K> = count
        .into_iter()
        .filter(|(_, c)| *c != 0)
        .map(|(k, _)| k)
        .collect();
    if old[old.len() - s..].iter().any(|k| uneven.contains(&k)) {
        return Some(paired(old, new));
    }
    let middle = paired(om, nm);
    let shifted = |i: usize| (i + new.len() - old.len()) as u32;
    Some(
        (0..old.len())
            .map(|i| match i {
                i if i < p => Some(i as u32),
                i if i >= old.len() - s => Some(shifted(i)),
                i => middle[i - p].map(|j| j + p as u32),
            })
            .collect(),
    )
}

/// [`positions`] by pairing every item (no prefix or suffix assumed).
/// Each key's occurrences in `new` are a chain (`next`, from the first);
/// the k-th old occurrence takes the chain's head and advances it (no
/// allocation per key: tens of thousands of rows are mostly distinct).
pub(crate) fn paired<K: Eq + std::hash::Hash>(old: &[K], new: &[K]) -> Vec<Option<u32>> {
    const END: u32 = u32::MAX;
    let mut head: HashMap<&K, u32, Quick> = HashMap::default();
    head.reserve(new.len());
    let mut next = vec![END; new.len()];
    for (i, k) in new.iter().enumerate().rev() {
        if let Some(h) = head.insert(k, i as u32) {
            next[i] = h;
        }
    }
    old.iter()
        .map(|k| {
            let h = head.get_mut(k)?;
            let at = *h;
            if at == END {
                return None;
            }
            *h = next[at as usize];
            Some(at)
        })
        .collect()
}

/// The hasher of [`positions`]' keys (row and flow texts, hashed by the
/// tens of thousands per update; no adversary chooses them).
pub(super) type Quick = std::hash::BuildHasherDefault<netc_compiler::fxhash::FxHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The k-th of equal items in `old` is the k-th in `new`, spelled out.
    fn reference_pairing(old: &[u8], new: &[u8]) -> Vec<Option<u32>> {
        use std::collections::VecDeque;
        let mut at: HashMap<u8, VecDeque<u32>> = HashMap::new();
        for (i, k) in new.iter().enumerate() {
            at.entry(*k).or_default().push_back(i as u32);
        }
        old.iter()
            .map(|k| at.get_mut(k).and_then(VecDeque::pop_front))
            .collect()
    }

    proptest! {
        /// The prefix/suffix shortcut pairs items exactly as pairing every
        /// item does (few symbols: many duplicates, in the middles and out).
        #[test]
        fn positions_pair_as_every_item_paired(
            old in proptest::collection::vec(0u8..4, 0..12),
            edits in proptest::collection::vec((0usize..14, proptest::option::of(0u8..4)), 0..4),
        ) {
            let new = crate::edited(&old, edits);
            let expect = (old != new).then(|| reference_pairing(&old, &new));
            prop_assert_eq!(paired(&old, &new), reference_pairing(&old, &new));
            prop_assert_eq!(positions(&old, &new), expect);
        }
    }
}
