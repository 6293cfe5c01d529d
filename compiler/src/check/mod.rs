//! Name resolution, type checking and stratification.
//!
//! Expects: an [`ast::Program`] as the parser produced it (possibly from a
//! program with syntax errors: the checker still reports what it can).
//! Guarantees: [`check`] reports *every* problem it can find in one run (one
//! diagnostic per problem, deduplicated) and returns a [`Checked`] program
//! only if none of them is an error. A `Checked` program satisfies:
//! - CHECKED-RESOLVED: every atom names a declared relation with the right
//!   arity, every functor call is resolved to a [`crate::functors::Builtin`],
//!   every literal has its [`crate::value::Value`], every aggregate its result type;
//! - CHECKED-GROUNDED: every variable of a clause is bound by a positive atom
//!   or by a chain of equalities (aggregate bodies: also by their group key);
//! - CHECKED-STRATIFIED: [`Checked::strata`] lists every relation with rules in
//!   an order where no relation depends negatively or through an aggregate
//!   on a relation of its own or a later stratum.
//!
//! The passes, one file each:
//! - [`tyenv`]: `.type` declarations → a [`tyenv::TypeEnv`] (subtypes, aliases, unions);
//! - [`resolve`]: declarations, directives, and rules → clauses of the [`ir`]
//!   (disjunctions expanded, variables scoped, relations resolved);
//! - [`ground`]: groundedness (unbound variables) and singleton variables;
//! - [`typeck`] (with [`infer`]): types of variables and expressions; facts evaluated;
//! - [`stratify`]: the dependency graph, its SCCs in evaluation order,
//!   negation/aggregation through recursion, and relation-usage warnings;
//! - [`dump`]: the checked program as text (`--dump-after=check`).
//!
//! Diagnostic codes (stable; copied into `specs/language.md`):
//!
//! | code  | meaning |
//! |-------|---------|
//! | E0101 | undeclared relation (hint: closest declared name) |
//! | E0102 | arity mismatch between an atom and its relation's declaration |
//! | E0103 | relation declared twice |
//! | E0104 | unknown type name (in `.decl`, `.type` or `as`) |
//! | E0105 | type defined twice, or a primitive type redefined |
//! | E0106 | cyclic (recursive) type definition, or type nesting deeper than 64 |
//! | E0107 | `@` location specifier on an attribute other than the first |
//! | E0108 | `.input`/`.output`/`.printsize` names an undeclared relation |
//! | E0109 | unbound variable (not grounded by a positive atom or an equality) |
//! | E0110 | two attributes of one relation have the same name |
//! | E0111 | `_` used where a value is needed (head, comparison, functor argument) |
//! | E0112 | an `eqrel` relation without two attributes of one type (desugared in `syntax::components`) |
//! | E0113 | disjunction (`;`) inside an aggregate body |
//! | E0114 | a rule expands to too many disjuncts (more than 4096) |
//! | E0115 | expression or body nested too deeply (more than 200 levels) |
//! | E0117 | component errors (reported by `syntax::components` before checking) |
//! | E0201 | type mismatch (argument vs. attribute, variable used at two types, comparison operands) |
//! | E0202 | unknown functor (hint: closest functor name) |
//! | E0203 | no overload of a functor accepts the arguments (hint: the overloads) |
//! | E0204 | operator applied to a type it is not defined on (e.g. arithmetic on `symbol`) |
//! | E0205 | a constraint functor used as a value, or a value functor used as a constraint |
//! | E0206 | aggregate target of the wrong type (`sum` of a non-number, `min` of a union) |
//! | E0207 | invalid literal (out of range, host bits set in a prefix, ...) |
//! | E0208 | invalid `as(expr, Type)` conversion |
//! | E0209 | a fact whose value cannot be computed (e.g. division by zero) |
//! | E0301 | negation through recursion (the cycle is shown) |
//! | E0302 | aggregation through recursion (the cycle is shown) |
//! | E0901 | internal error: a broken invariant, named (a bug in netc; from `lower::try_lower`) |
//! | W0001 | variable appears only once in a rule (hint: `_` or a `_`-prefixed name) |
//! | W0002 | relation declared but never used (no rule, no fact, no directive) |
//! | W0003 | relation read by a rule but always empty (no rules, facts or `.input`) |
//! | W0004 | qualifier ignored (performance hints such as `btree`, `inline`) |
//!
//! Typing rules (Souffle's): a `.type T <: B` subtype is usable where `B` is
//! expected, not the other way round without `as(x, T)`; siblings are
//! incompatible; an alias is the same type; the members of a union are its
//! subtypes. Literals take the type the context expects (an integer literal
//! may be `number`, `unsigned` or `float`, default `number`; a string literal
//! fits any subtype of `symbol`). Arithmetic and functor results have the
//! primitive type, not the subtype. `min`/`max` aggregates accept any
//! primitive (every primitive is ordered) but not a union of several.

pub mod directives;
pub mod dump;
pub mod ground;
pub mod infer;
pub mod ir;
pub mod resolve;
pub mod stratify;
pub mod tyenv;
pub mod typeck;

pub use dump::dump;
pub use ir::Checked;

use crate::ast;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::source::Span;
use std::collections::HashSet;

/// Checks a parsed program; see the module documentation.
pub fn check(program: &ast::Program, diags: &mut Diagnostics) -> Option<Checked> {
    let mut r = Reporter::new(diags);
    let types = tyenv::build(program, &mut r);
    let mut relations = resolve::relations(program, &types, &mut r);
    directives::directives(program, &mut relations, &mut r);
    let mut clauses = resolve::rules(program, &relations, &mut r);
    ground::singletons(program, &mut r);
    for clause in &clauses {
        ground::check_clause(clause, &mut r);
    }
    for clause in &mut clauses {
        typeck::check_clause(clause, &relations, &types, &mut r);
    }
    stratify::usage_warnings(&relations, &clauses, &mut r);
    let (clauses, facts) = typeck::extract_facts(clauses, &mut r);
    let strata = stratify::stratify(&relations, &clauses, &mut r);
    if r.errors > 0 {
        return None;
    }
    Some(Checked {
        types,
        relations,
        clauses,
        facts,
        strata,
    })
}

/// A deduplicating front for the diagnostics sink that counts errors.
pub struct Reporter<'d> {
    diags: &'d mut Diagnostics,
    seen: HashSet<(&'static str, Option<Span>, String)>,
    pub errors: usize,
}

impl<'d> Reporter<'d> {
    pub fn new(diags: &'d mut Diagnostics) -> Reporter<'d> {
        Reporter {
            diags,
            seen: HashSet::new(),
            errors: 0,
        }
    }

    /// Pushes a diagnostic unless an identical one (code, span, message) was pushed.
    pub fn push(&mut self, d: Diagnostic) {
        if self.seen.insert((d.code, d.span, d.message.clone())) {
            if d.is_error() {
                self.errors += 1;
            }
            self.diags.push(d);
        }
    }
}

/// "did you mean `x`?" for the closest candidate, if it is a likely typo
/// (edit distance 1 for words of up to 3 characters, else up to a third
/// of the word's length but at least 2).
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    crate::names::closest(word, candidates).map(|c| format!("did you mean `{c}`?"))
}
