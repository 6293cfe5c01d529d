//! Old position → new of equal items of two sequences (flows, rows, VM names).
//!
//! Expects two sequences that mostly share a prefix and a suffix (an update
//! adds or removes a few of tens of thousands). Guarantees: [`positions`]
//! and [`moves_by`] pair the k-th of equal items in `old` with the k-th in
//! `new` (as [`paired`] over every item does), hashing only the middles;
//! [`Moves`] lists only the middle.

use std::collections::HashMap;

/// The lengths of the longest common prefix of `old` and `new` under
/// `same`, and of the longest common suffix of what is left after it (the
/// two never overlap).
pub(super) fn common_ends<'a, T>(
    old: &'a [T],
    new: &'a [T],
    same: impl Fn(&'a T, &'a T) -> bool,
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

/// Old position → new of a sequence edited in its middle (an update
/// adds or removes a few flows of tens of thousands): the common prefix
/// stays, the common suffix shifts by the length difference, and only the
/// middle is listed. Read by position ([`Moves::get`]) without a vector
/// over every item, so a consumer can work on the middle alone.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Moves {
    /// Items `..prefix` stay where they are.
    pub prefix: usize,
    /// The last `suffix` items of `old` are the last of `new`.
    pub suffix: usize,
    pub old_len: usize,
    pub new_len: usize,
    /// Per old item of the middle (`prefix..old_len - suffix`): its new
    /// position (`None`: gone).
    pub middle: Vec<Option<u32>>,
}

impl Moves {
    /// A pairing listed item by item (no prefix or suffix).
    pub(crate) fn listed(middle: Vec<Option<u32>>, new_len: usize) -> Moves {
        Moves {
            prefix: 0,
            suffix: 0,
            old_len: middle.len(),
            new_len,
            middle,
        }
    }

    /// The new position of old item `i` (`None`: gone, or no such item).
    pub(crate) fn get(&self, i: usize) -> Option<u32> {
        match i {
            i if i < self.prefix => Some(i as u32),
            i if i >= self.old_len => None,
            i if i >= self.old_len - self.suffix => Some((i + self.new_len - self.old_len) as u32),
            i => self.middle[i - self.prefix],
        }
    }

    /// The old middle's positions.
    pub(crate) fn old_middle(&self) -> std::ops::Range<usize> {
        self.prefix..self.old_len - self.suffix
    }

    /// The new middle's positions: every item added, and the middle's
    /// kept items.
    pub(crate) fn new_middle(&self) -> std::ops::Range<usize> {
        self.prefix..self.new_len - self.suffix
    }

    /// Whether the items kept keep their order (the prefix and suffix
    /// do, on either side of the middle: only the middle is read).
    pub(crate) fn in_order(&self) -> bool {
        let kept = self.middle.iter().flatten();
        kept.clone().zip(kept.skip(1)).all(|(a, b)| a < b)
    }

    /// Every old item's new position.
    pub(crate) fn to_vec(&self) -> Vec<Option<u32>> {
        (0..self.old_len).map(|i| self.get(i)).collect()
    }
}

/// Old position → new position of equal items (the k-th of equal items
/// in `old` is the k-th in `new`); `None` when it is the identity.
pub(crate) fn positions<K: Eq + std::hash::Hash>(old: &[K], new: &[K]) -> Option<Vec<Option<u32>>> {
    moves_by(old, new, |k| k).map(|m| m.to_vec())
}

/// [`positions`] of items compared by `key`, as [`Moves`]. Only the part
/// between the common prefix and suffix is hashed, and no key is kept for
/// the rest: a prefix item stays, a suffix item shifts by the length
/// difference, unless the two middles hold an item of the suffix a
/// different number of times (then every item is paired).
pub(crate) fn moves_by<'a, T, K: Eq + std::hash::Hash>(
    old: &'a [T],
    new: &'a [T],
    key: impl Fn(&'a T) -> K,
) -> Option<Moves> {
    let (p, s) = common_ends(old, new, |a, b| key(a) == key(b));
    if p == old.len() && p == new.len() {
        return None;
    }
    let keys = |xs: &'a [T]| xs.iter().map(&key).collect::<Vec<K>>();
    let (om, nm) = (keys(&old[p..old.len() - s]), keys(&new[p..new.len() - s]));
    let mut count: HashMap<&K, i64, Quick> = HashMap::default();
    for k in &om {
        *count.entry(k).or_default() += 1;
    }
    for k in &nm {
        *count.entry(k).or_default() -= 1;
    }
    let uneven: Vec<&K> = count
        .into_iter()
        .filter(|(_, c)| *c != 0)
        .map(|(k, _)| k)
        .collect();
    if old[old.len() - s..]
        .iter()
        .any(|x| uneven.contains(&&key(x)))
    {
        return Some(Moves::listed(paired(&keys(old), &keys(new)), new.len()));
    }
    let middle = paired(&om, &nm)
        .into_iter()
        .map(|j| j.map(|j| j + p as u32))
        .collect();
    Some(Moves {
        prefix: p,
        suffix: s,
        old_len: old.len(),
        new_len: new.len(),
        middle,
    })
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
            if let Some(m) = moves_by(&old, &new, |k| k) {
                let listed = Moves::listed(m.to_vec(), new.len());
                for i in 0..old.len() + 2 {
                    prop_assert_eq!(m.get(i), listed.get(i));
                }
                // the middles hold every change: outside them, equal items
                let (om, nm) = (m.old_middle(), m.new_middle());
                prop_assert_eq!(&old[..om.start], &new[..nm.start]);
                prop_assert_eq!(&old[om.end..], &new[nm.end..]);
            }
        }
    }
}
