//! Entities → ordered P4Runtime updates: a full install, or the diff between
//! two generations.
//!
//! Expects: entity lists from `entries::build` (one entity per key).
//! Guarantees: an entity only in `new` is an INSERT, only in `old` a DELETE,
//! in both with a different effect a MODIFY; a default entry is always a
//! MODIFY (P4Runtime never inserts or deletes defaults; removing one resets
//! the program's default action). Updates come in three phases, because a
//! P4Runtime server may reorder updates within one batch: (0) members and
//! multicast groups inserted/modified, (1) table entries deleted, modified,
//! inserted, (2) members and multicast groups deleted. So no entry ever
//! refers to a member or group that is not there.

use super::entries::{same_effect, Entity, EntityKey, Target};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UpdateKind {
    Insert,
    Modify,
    Delete,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub kind: UpdateKind,
    pub entity: Entity,
}

impl Update {
    /// The batch phase this update belongs to (see the module map).
    pub fn phase(&self) -> u8 {
        match (&self.entity, self.kind) {
            (Entity::Table(_), _) => 1,
            (_, UpdateKind::Delete) => 2,
            _ => 0,
        }
    }
}

fn is_default(e: &Entity) -> bool {
    matches!(e, Entity::Table(t) if t.is_default)
}

fn order(mut updates: Vec<Update>) -> Vec<Update> {
    // stable: within a phase, deletes, then modifies, then inserts, each in key order
    updates.sort_by(|a, b| {
        (a.phase(), std::cmp::Reverse(a.kind), a.entity.key()).cmp(&(
            b.phase(),
            std::cmp::Reverse(b.kind),
            b.entity.key(),
        ))
    });
    updates
}

/// Installs `entities` on an empty switch.
pub fn full(entities: &[Entity]) -> Vec<Update> {
    diff(&[], entities)
}

/// The updates that turn a switch holding `old` into one holding `new`.
pub fn diff(old: &[Entity], new: &[Entity]) -> Vec<Update> {
    let old: BTreeMap<EntityKey, &Entity> = old.iter().map(|e| (e.key(), e)).collect();
    let new: BTreeMap<EntityKey, &Entity> = new.iter().map(|e| (e.key(), e)).collect();
    let mut out = Vec::new();
    for (k, e) in &new {
        match old.get(k) {
            None if is_default(e) => out.push(Update {
                kind: UpdateKind::Modify,
                entity: (*e).clone(),
            }),
            None => out.push(Update {
                kind: UpdateKind::Insert,
                entity: (*e).clone(),
            }),
            Some(o) if !same_effect(o, e) => out.push(Update {
                kind: UpdateKind::Modify,
                entity: (*e).clone(),
            }),
            Some(_) => {}
        }
    }
    for (k, e) in &old {
        if new.contains_key(k) {
            continue;
        }
        if let Entity::Table(t) = e {
            if t.is_default {
                let mut reset = t.clone();
                reset.target = Target::ResetDefault;
                out.push(Update {
                    kind: UpdateKind::Modify,
                    entity: Entity::Table(reset),
                });
                continue;
            }
        }
        out.push(Update {
            kind: UpdateKind::Delete,
            entity: (*e).clone(),
        });
    }
    order(out)
}
