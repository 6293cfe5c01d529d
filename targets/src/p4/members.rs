//! Action-profile member ids that stay put across generations.
//!
//! A member is one `to_member(mvni, member)` action instance of a profile;
//! ECMP entries refer to it by id. Expects: the set of (profile, mvni,
//! member) keys a generation needs. Guarantees: a key keeps its id for as
//! long as it is needed (so a change never renumbers untouched members and
//! the delta stays small); a new key gets the smallest free id ≥ 1 of its
//! profile; a fresh [`MemberIds`] numbers keys 1, 2, ... in sorted order, so
//! a full rendering is a function of the rows alone.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// (action profile id, mvni, member address)
pub type MemberKey = (u32, u32, u32);

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberIds {
    ids: BTreeMap<MemberKey, u32>,
}

impl MemberIds {
    /// Keeps the ids of the keys still needed, frees the others, numbers the
    /// new ones.
    pub fn assign(&mut self, needed: BTreeSet<MemberKey>) {
        self.ids.retain(|k, _| needed.contains(k));
        let mut used: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for (k, id) in &self.ids {
            used.entry(k.0).or_default().insert(*id);
        }
        for k in needed {
            if self.ids.contains_key(&k) {
                continue;
            }
            let taken = used.entry(k.0).or_default();
            let id = (1..).find(|i| !taken.contains(i)).unwrap_or(u32::MAX);
            taken.insert(id);
            self.ids.insert(k, id);
        }
    }

    pub fn get(&self, key: MemberKey) -> Option<u32> {
        self.ids.get(&key).copied()
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_follow_sorted_order_and_survive_changes() {
        let mut m = MemberIds::default();
        m.assign([(1, 5, 30), (1, 5, 10), (2, 0, 7)].into_iter().collect());
        assert_eq!(m.get((1, 5, 10)), Some(1));
        assert_eq!(m.get((1, 5, 30)), Some(2));
        assert_eq!(m.get((2, 0, 7)), Some(1));
        // drop 10, add 20: 30 keeps 2, 20 takes the freed 1
        m.assign([(1, 5, 30), (1, 5, 20)].into_iter().collect());
        assert_eq!(m.get((1, 5, 30)), Some(2));
        assert_eq!(m.get((1, 5, 20)), Some(1));
        assert_eq!(m.get((1, 5, 10)), None);
        assert_eq!(m.len(), 2);
    }
}
