//! Each changed relation's rows paired across two generations, once per update.
//!
//! Expects the two generations and which relations may differ (a
//! [`Dirty`], or every relation). Guarantees: [`RowMoves::of`] is
//! [`crate::lb::row_positions`] of a dirty relation's old and new rows
//! (old index → new; `None`: the relation is not dirty), merged the first
//! time a reader asks and shared by every later one — the load-balancer
//! model, AFF-1's vectors and tunnels and CAP-1 read the same relations
//! (a software Mux's member rows are tens of thousands), so an update
//! merges each once instead of once per reader.

use crate::artifacts::Artifacts;
use crate::dirty::Dirty;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Old index → new index of one relation's rows.
pub type Moves = Rc<Vec<Option<u32>>>;

/// The row pairings of one update, merged on first use.
pub struct RowMoves<'a> {
    pub old: &'a Artifacts,
    pub new: &'a Artifacts,
    /// Which relations may differ (`None`: every one).
    dirty: Option<&'a Dirty>,
    merged: RefCell<HashMap<String, Moves>>,
}

impl<'a> RowMoves<'a> {
    /// The pairings of the relations `dirty` names.
    pub fn new(old: &'a Artifacts, new: &'a Artifacts, dirty: &'a Dirty) -> RowMoves<'a> {
        RowMoves {
            old,
            new,
            dirty: Some(dirty),
            merged: RefCell::default(),
        }
    }

    /// The pairings of every relation (each taken as changed).
    pub fn every(old: &'a Artifacts, new: &'a Artifacts) -> RowMoves<'a> {
        RowMoves {
            old,
            new,
            dirty: None,
            merged: RefCell::default(),
        }
    }

    /// Whether relation `rel` may differ.
    pub fn dirty(&self, rel: &str) -> bool {
        self.dirty.is_none_or(|d| d.relation(rel))
    }

    /// `rel`'s old row index → new (`None`: not dirty, its rows stay).
    pub fn of(&self, rel: &str) -> Option<Moves> {
        if !self.dirty(rel) {
            return None;
        }
        if let Some(m) = self.merged.borrow().get(rel) {
            return Some(m.clone());
        }
        let m = Rc::new(crate::lb::row_positions(
            self.old.rows(rel),
            self.new.rows(rel),
        ));
        self.merged.borrow_mut().insert(rel.to_string(), m.clone());
        Some(m)
    }
}
