//! User types: `.type` declarations resolved into a [`TypeEnv`].
//!
//! Expects: the program's `.type` items, in any order (a type may be used
//! before it is declared). Guarantees: every primitive is a type (ids
//! `0..9`, in [`Prim::ALL`] order); every well-formed declared name resolves
//! to a type; a broken one (unknown base, cycle, duplicate) is reported once
//! and resolves to [`Lookup::Broken`] so uses of it do not cascade into more
//! errors. The type graph is acyclic and at most [`MAX_DEPTH`] deep, so the
//! recursive queries below ([`TypeEnv::is_sub`]) terminate quickly.
//!
//! - `.type T <: B`: a new type whose values are `B`'s; a subtype of `B`.
//! - `.type T = B`: another name for `B` itself.
//! - `.type T = A | B`: a new type; `A` and `B` are its subtypes; its values
//!   may have any primitive of its members.

use super::{did_you_mean, Reporter};
use crate::ast::{Item, Program, TypeDecl, TypeDef};
use crate::diagnostics::Diagnostic;
use crate::source::Span;
use crate::types::Prim;
use std::collections::HashMap;

pub type TypeId = usize;

/// How deeply type definitions may nest (a subtype of a subtype of ...).
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeKind {
    Prim(Prim),
    Sub(TypeId),
    Union(Vec<TypeId>),
}

#[derive(Clone, Debug)]
pub struct TypeInfo {
    pub name: String,
    pub kind: TypeKind,
    /// Sorted, deduplicated primitives a value of the type may have.
    pub prims: Vec<Prim>,
    pub span: Option<Span>,
    depth: usize,
}

#[derive(Clone, Debug, Default)]
pub struct TypeEnv {
    types: Vec<TypeInfo>,
    names: HashMap<String, Lookup>,
}

/// What a type name refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Found(TypeId),
    /// Declared, but its declaration is broken (already reported).
    Broken,
    Unknown,
}

impl TypeEnv {
    /// The environment with only the primitive types.
    pub fn primitives() -> TypeEnv {
        let mut env = TypeEnv::default();
        for p in Prim::ALL {
            env.names
                .insert(p.name().to_string(), Lookup::Found(env.types.len()));
            env.types.push(TypeInfo {
                name: p.name().to_string(),
                kind: TypeKind::Prim(p),
                prims: vec![p],
                span: None,
                depth: 0,
            });
        }
        env
    }

    pub fn lookup(&self, name: &str) -> Lookup {
        self.names.get(name).copied().unwrap_or(Lookup::Unknown)
    }

    /// The type of a primitive.
    pub fn prim(&self, p: Prim) -> TypeId {
        Prim::ALL.iter().position(|q| *q == p).unwrap_or(0)
    }

    pub fn info(&self, id: TypeId) -> Option<&TypeInfo> {
        self.types.get(id)
    }

    pub fn name(&self, id: TypeId) -> &str {
        self.types.get(id).map_or("?", |t| t.name.as_str())
    }

    pub fn prims(&self, id: TypeId) -> &[Prim] {
        self.types.get(id).map_or(&[], |t| t.prims.as_slice())
    }

    /// The primitive of a type with exactly one.
    pub fn single_prim(&self, id: TypeId) -> Option<Prim> {
        match self.prims(id) {
            [p] => Some(*p),
            _ => None,
        }
    }

    /// Every type name (primitives, declared types and aliases), for hints.
    pub fn all_names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(String::as_str)
    }

    /// Whether a value of type `a` may be used where `b` is expected.
    pub fn is_sub(&self, a: TypeId, b: TypeId) -> bool {
        if a == b {
            return true;
        }
        let (Some(ta), Some(tb)) = (self.types.get(a), self.types.get(b)) else {
            return false;
        };
        if let TypeKind::Union(members) = &tb.kind {
            if members.iter().any(|m| self.is_sub(a, *m)) {
                return true;
            }
        }
        match &ta.kind {
            TypeKind::Sub(base) => self.is_sub(*base, b),
            TypeKind::Union(members) => members.iter().all(|m| self.is_sub(*m, b)),
            TypeKind::Prim(_) => false,
        }
    }

    /// The more specific of two types if one is a subtype of the other.
    pub fn meet(&self, a: TypeId, b: TypeId) -> Option<TypeId> {
        if self.is_sub(a, b) {
            Some(a)
        } else if self.is_sub(b, a) {
            Some(b)
        } else {
            None
        }
    }

    /// Whether values of the two types may be compared (one is a subtype of the other).
    pub fn compatible(&self, a: TypeId, b: TypeId) -> bool {
        self.meet(a, b).is_some()
    }

    fn add(&mut self, name: &str, kind: TypeKind, span: Span) -> TypeId {
        let (prims, depth) = match &kind {
            TypeKind::Prim(p) => (vec![*p], 0),
            TypeKind::Sub(b) => (self.prims(*b).to_vec(), self.types[*b].depth + 1),
            TypeKind::Union(ms) => {
                let mut ps: Vec<Prim> = ms
                    .iter()
                    .flat_map(|m| self.prims(*m).iter().copied())
                    .collect();
                ps.sort();
                ps.dedup();
                (
                    ps,
                    ms.iter().map(|m| self.types[*m].depth).max().unwrap_or(0) + 1,
                )
            }
        };
        self.types.push(TypeInfo {
            name: name.to_string(),
            kind,
            prims,
            span: Some(span),
            depth,
        });
        self.types.len() - 1
    }
}

fn deps(def: &TypeDef) -> Vec<&crate::ast::Ident> {
    match def {
        TypeDef::Subtype(b) | TypeDef::Alias(b) => vec![b],
        TypeDef::Union(ms) => ms.iter().collect(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Unvisited,
    OnStack,
    Done,
}

/// Resolves every `.type` of the program, reporting E0104, E0105 and E0106.
pub fn build(program: &Program, r: &mut Reporter) -> TypeEnv {
    let mut env = TypeEnv::primitives();
    // The first declaration of each name wins.
    let mut decls: Vec<&TypeDecl> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for item in &program.items {
        let Item::Type(t) = item else { continue };
        let name = t.name.name.as_str();
        if Prim::from_name(name).is_some() {
            r.push(
                Diagnostic::error(
                    "E0105",
                    t.name.span,
                    format!("`{name}` is a primitive type and cannot be redefined"),
                )
                .with_hint(
                    "choose another name, e.g. `.type My_".to_string() + name + " <: " + name + "`",
                ),
            );
        } else if let Some(&first) = index.get(name) {
            r.push(
                Diagnostic::error(
                    "E0105",
                    t.name.span,
                    format!("type `{name}` is defined twice"),
                )
                .with_label(decls[first].name.span, "first defined here")
                .with_hint("remove or rename one of the definitions"),
            );
        } else {
            index.insert(name, decls.len());
            decls.push(t);
        }
    }

    let mut state = vec![State::Unvisited; decls.len()];
    let mut broken = vec![false; decls.len()];
    for root in 0..decls.len() {
        if state[root] != State::Unvisited {
            continue;
        }
        // Iterative depth-first search; each frame is (decl, next dependency).
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = State::OnStack;
        while let Some(&mut (d, ref mut next)) = stack.last_mut() {
            let ds = deps(&decls[d].def);
            if *next < ds.len() {
                let dep = ds[*next];
                *next += 1;
                let Some(&j) = index.get(dep.name.as_str()) else {
                    continue;
                };
                match state[j] {
                    State::Done => {}
                    State::Unvisited => {
                        state[j] = State::OnStack;
                        stack.push((j, 0));
                    }
                    State::OnStack => {
                        let pos = stack.iter().position(|(k, _)| *k == j).unwrap_or(0);
                        let cycle: Vec<usize> = stack[pos..].iter().map(|(k, _)| *k).collect();
                        report_cycle(&decls, &cycle, r);
                        for k in cycle {
                            broken[k] = true;
                        }
                    }
                }
            } else {
                stack.pop();
                state[d] = State::Done;
                let lookup = if broken[d] {
                    Lookup::Broken
                } else {
                    finish(&mut env, decls[d], r)
                };
                env.names.insert(decls[d].name.name.clone(), lookup);
            }
        }
    }
    env
}

/// Creates the type of a declaration whose dependencies are all resolved.
fn finish(env: &mut TypeEnv, t: &TypeDecl, r: &mut Reporter) -> Lookup {
    let mut ids = Vec::new();
    let mut ok = true;
    for dep in deps(&t.def) {
        match env.lookup(&dep.name) {
            Lookup::Found(id) => ids.push(id),
            Lookup::Broken => ok = false,
            Lookup::Unknown => {
                ok = false;
                let mut d =
                    Diagnostic::error("E0104", dep.span, format!("unknown type `{}`", dep.name));
                d = match did_you_mean(&dep.name, env.all_names()) {
                    Some(h) => d.with_hint(h),
                    None => d.with_hint("the primitive types are number, unsigned, float, symbol, ipv4, ipv6, prefix4, prefix6 and mac"),
                };
                r.push(d);
            }
        }
    }
    if !ok {
        return Lookup::Broken;
    }
    let name = t.name.name.as_str();
    let id = match &t.def {
        TypeDef::Alias(_) => return Lookup::Found(ids[0]),
        TypeDef::Subtype(_) => env.add(name, TypeKind::Sub(ids[0]), t.name.span),
        TypeDef::Union(_) => env.add(name, TypeKind::Union(ids), t.name.span),
    };
    if env.types[id].depth > MAX_DEPTH {
        r.push(
            Diagnostic::error(
                "E0106",
                t.name.span,
                format!("type `{name}` is nested more than {MAX_DEPTH} definitions deep"),
            )
            .with_hint("define it closer to its primitive type"),
        );
        return Lookup::Broken;
    }
    Lookup::Found(id)
}

fn report_cycle(decls: &[&TypeDecl], cycle: &[usize], r: &mut Reporter) {
    let first = decls[cycle[0]];
    let name = &first.name.name;
    let message = if cycle.len() == 1 {
        format!("type `{name}` is defined in terms of itself")
    } else {
        let mut m = format!("cyclic type definition: `{name}`");
        for k in &cycle[1..] {
            m += &format!(" is defined through `{}`, which", decls[*k].name.name);
        }
        m + &format!(" is defined through `{name}`")
    };
    let mut d = Diagnostic::error("E0106", first.name.span, message)
        .with_hint("every type must bottom out in a primitive type such as `symbol` or `number`");
    for k in &cycle[1..] {
        d = d.with_label(decls[*k].name.span, "part of the cycle");
    }
    r.push(d);
}
