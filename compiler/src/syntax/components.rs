//! Souffle's components, `eqrel` relations and `.pragma`, expanded in the
//! front end into plain declarations and rules.
//!
//! - [`expand`] replaces every `.init inst = Comp<args>` by a copy of the
//!   component's items (its bases' first, minus the rules of relations it
//!   `.override`s), with the type parameters replaced by the arguments and
//!   every name the component declares (relation, type, nested instance)
//!   prefixed `inst.`, as Souffle names them: `.output` of `inst.rel` writes
//!   `inst.rel.csv`. Names the component does not declare refer to the
//!   enclosing scope. Nested `.init`s prefix again (`a.b.rel`).
//! - [`desugar_eqrel`] turns `.decl r(a: T, b: T) eqrel` into a plain
//!   relation plus the rules of the reflexive, symmetric and transitive
//!   closure over the values that occur in it (Souffle's meaning).
//! - [`pragma`] accepts Souffle's pragmas: those that only tune Souffle's
//!   performance or output are ignored; an unknown key is warning W0006.
//!
//! Errors (E0117) name the component and the instance, at the `.init` or
//! the construct that is wrong.

use crate::ast::{Atom, Comp, Decl, Expr, Ident, Init, Item, Literal, Program, Rule};
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::source::Span;
use std::collections::{HashMap, HashSet};

/// How deep instantiation may nest (a component instantiating itself is an error).
const MAX_DEPTH: usize = 32;

/// Components visible in one scope, innermost last.
type Scope<'a> = Vec<HashMap<String, &'a Comp>>;

/// Expands components in place: the result holds no `Comp`, `Init` or `Override`.
pub fn expand(program: &mut Program, diags: &mut Diagnostics) {
    if !program
        .items
        .iter()
        .any(|i| matches!(i, Item::Comp(_) | Item::Init(_) | Item::Override(_)))
    {
        return;
    }
    let items = std::mem::take(&mut program.items);
    let mut scope: Scope = vec![HashMap::new()];
    for item in &items {
        if let Item::Comp(c) = item {
            if scope[0].insert(c.name.name.clone(), c).is_some() {
                diags.push(
                    Diagnostic::error(
                        "E0117",
                        c.name.span,
                        format!("component `{}` is declared twice", c.name.name),
                    )
                    .with_hint("rename one of the components"),
                );
            }
        }
    }
    let mut out = Vec::new();
    for item in &items {
        match item {
            Item::Comp(_) => {}
            Item::Init(init) => instantiate(init, "", &HashMap::new(), &scope, 0, &mut out, diags),
            Item::Override(o) => diags.push(
                Diagnostic::error("E0117", o.span, "`.override` outside a component").with_hint(
                    "`.override rel` belongs in the body of a component that inherits `rel`",
                ),
            ),
            other => out.push(other.clone()),
        }
    }
    program.items = out;
}

/// Instantiates `init` under `prefix` (`""` at top level), where `binding`
/// maps the enclosing component's type parameters.
fn instantiate<'a>(
    init: &Init,
    prefix: &str,
    binding: &HashMap<String, String>,
    scope: &Scope<'a>,
    depth: usize,
    out: &mut Vec<Item>,
    diags: &mut Diagnostics,
) {
    let instance = format!("{prefix}{}", init.instance.name);
    let comp_name = subst(&init.comp.name, binding);
    let Some(comp) = lookup(scope, &comp_name) else {
        diags.push(
            Diagnostic::error(
                "E0117",
                init.comp.span,
                format!("instance `{instance}`: unknown component `{comp_name}`"),
            )
            .with_hint("declare it with `.comp` before or after the `.init`"),
        );
        return;
    };
    if depth >= MAX_DEPTH {
        diags.push(
            Diagnostic::error(
                "E0117",
                init.span,
                format!("instance `{instance}` of component `{comp_name}` nests more than {MAX_DEPTH} levels (a component that instantiates itself?)"),
            )
            .with_hint("a component may not contain an instance of itself"),
        );
        return;
    }
    let args: Vec<String> = init.args.iter().map(|a| subst(&a.name, binding)).collect();
    let mut items = Vec::new();
    if !gather(
        comp,
        &args,
        init,
        &instance,
        scope,
        &mut Vec::new(),
        &mut items,
        diags,
    ) {
        return;
    }
    // Components declared inside are visible to the nested inits.
    let mut inner_scope: Scope<'_> = scope.clone();
    inner_scope.push(
        items
            .iter()
            .filter_map(|i| match i {
                Item::Comp(c) => Some((c.name.name.clone(), c)),
                _ => None,
            })
            .collect(),
    );
    let locals = local_names(&items);
    let p = format!("{instance}.");
    for item in &items {
        match item {
            Item::Comp(_) | Item::Override(_) => {}
            Item::Init(nested) => instantiate(
                nested,
                &p,
                &HashMap::new(),
                &inner_scope,
                depth + 1,
                out,
                diags,
            ),
            other => {
                let mut it = other.clone();
                if let Item::Decl(d) = &mut it {
                    // consumed by the expansion (`.override`), not a hint to ignore
                    d.qualifiers.retain(|q| q.name != "overridable");
                }
                rename_item(&mut it, &mut |name| {
                    if locals.contains(first_segment(name)) {
                        format!("{p}{name}")
                    } else {
                        name.to_string()
                    }
                });
                out.push(it);
            }
        }
    }
}

/// The items of `comp` with `args` for its parameters: its bases' items
/// first (without the rules of relations `comp` overrides), then its own.
#[allow(clippy::too_many_arguments)]
fn gather<'a>(
    comp: &'a Comp,
    args: &[String],
    init: &Init,
    instance: &str,
    scope: &Scope<'a>,
    chain: &mut Vec<String>,
    out: &mut Vec<Item>,
    diags: &mut Diagnostics,
) -> bool {
    let name = &comp.name.name;
    if args.len() != comp.params.len() {
        diags.push(
            Diagnostic::error(
                "E0117",
                init.span,
                format!(
                    "instance `{instance}`: component `{name}` takes {} type parameter(s), given {}",
                    comp.params.len(),
                    args.len()
                ),
            )
            .with_label(comp.name.span, format!("`{name}` is declared here")),
        );
        return false;
    }
    if chain.contains(name) {
        diags.push(
            Diagnostic::error(
                "E0117",
                comp.name.span,
                format!("instance `{instance}`: component `{name}` inherits from itself"),
            )
            .with_hint(format!(
                "inheritance chain: {} -> {name}",
                chain.join(" -> ")
            )),
        );
        return false;
    }
    chain.push(name.clone());
    let binding: HashMap<String, String> = comp
        .params
        .iter()
        .map(|p| p.name.clone())
        .zip(args.iter().cloned())
        .collect();
    let overrides: HashSet<&str> = comp
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Override(o) => Some(o.name.as_str()),
            _ => None,
        })
        .collect();
    let mut ok = true;
    for (base, bargs) in &comp.bases {
        let bname = subst(&base.name, &binding);
        let Some(bcomp) = lookup(scope, &bname) else {
            diags.push(
                Diagnostic::error(
                    "E0117",
                    base.span,
                    format!("instance `{instance}`: component `{name}` inherits from unknown component `{bname}`"),
                )
                .with_hint("declare the base component with `.comp`"),
            );
            ok = false;
            continue;
        };
        let bargs: Vec<String> = bargs.iter().map(|a| subst(&a.name, &binding)).collect();
        let mut inherited = Vec::new();
        ok &= gather(
            bcomp,
            &bargs,
            init,
            instance,
            scope,
            chain,
            &mut inherited,
            diags,
        );
        for o in &overrides {
            let overridable = inherited.iter().any(|i| {
                matches!(i, Item::Decl(d) if d.name.name == *o
                    && d.qualifiers.iter().any(|q| q.name == "overridable"))
            });
            let declared = inherited
                .iter()
                .any(|i| matches!(i, Item::Decl(d) if d.name.name == *o));
            if declared && !overridable {
                let span = comp
                    .items
                    .iter()
                    .find_map(|i| match i {
                        Item::Override(x) if x.name == *o => Some(x.span),
                        _ => None,
                    })
                    .unwrap_or(comp.name.span);
                diags.push(
                    Diagnostic::error(
                        "E0117",
                        span,
                        format!("instance `{instance}`: component `{name}` overrides `{o}`, which `{}` does not declare `overridable`", bcomp.name.name),
                    )
                    .with_hint(format!("declare it `.decl {o}(...) overridable` in `{}`", bcomp.name.name)),
                );
                ok = false;
            }
        }
        out.extend(inherited.into_iter().filter(|i| {
            match i {
                Item::Rule(r) => !r
                    .heads
                    .iter()
                    .any(|h| overrides.contains(h.relation.name.as_str())),
                _ => true,
            }
        }));
    }
    for item in &comp.items {
        let mut it = item.clone();
        match &mut it {
            Item::Override(_) => continue,
            // A nested component keeps its own parameters; an init's
            // arguments are in this component's terms.
            Item::Comp(_) => {}
            Item::Init(i) => {
                i.comp.name = subst(&i.comp.name, &binding);
                for a in &mut i.args {
                    a.name = subst(&a.name, &binding);
                }
            }
            other => rename_item(other, &mut |n| subst(n, &binding)),
        }
        out.push(it);
    }
    chain.pop();
    ok
}

fn lookup<'a>(scope: &Scope<'a>, name: &str) -> Option<&'a Comp> {
    scope.iter().rev().find_map(|m| m.get(name).copied())
}

fn subst(name: &str, binding: &HashMap<String, String>) -> String {
    binding
        .get(name)
        .cloned()
        .unwrap_or_else(|| name.to_string())
}

fn first_segment(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Relation, type and instance names a component body declares.
fn local_names(items: &[Item]) -> HashSet<String> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Decl(d) => Some(d.name.name.clone()),
            Item::Type(t) => Some(t.name.name.clone()),
            Item::Init(i) => Some(i.instance.name.clone()),
            _ => None,
        })
        .collect()
}

/// Applies `f` to every relation and type name an item mentions.
fn rename_item(item: &mut Item, f: &mut dyn FnMut(&str) -> String) {
    let mut r = |i: &mut Ident| i.name = f(&i.name);
    match item {
        Item::Decl(d) => {
            r(&mut d.name);
            for a in &mut d.attrs {
                r(&mut a.ty);
            }
        }
        Item::Type(t) => {
            r(&mut t.name);
            match &mut t.def {
                crate::ast::TypeDef::Subtype(b) | crate::ast::TypeDef::Alias(b) => r(b),
                crate::ast::TypeDef::Union(ms) => ms.iter_mut().for_each(r),
            }
        }
        Item::Directive(d) => d.relations.iter_mut().for_each(r),
        Item::Rule(rule) => rename_rule(rule, &mut r),
        Item::Comp(_) | Item::Init(_) | Item::Override(_) => {}
    }
}

fn rename_rule(rule: &mut Rule, f: &mut dyn FnMut(&mut Ident)) {
    for h in &mut rule.heads {
        rename_atom(h, f);
    }
    rename_disj(&mut rule.body, f);
}

fn rename_disj(d: &mut [Vec<Literal>], f: &mut dyn FnMut(&mut Ident)) {
    for conj in d {
        for lit in conj {
            rename_lit(lit, f);
        }
    }
}

fn rename_lit(lit: &mut Literal, f: &mut dyn FnMut(&mut Ident)) {
    match lit {
        Literal::Atom(a) | Literal::Negated(a, _) => rename_atom(a, f),
        Literal::Compare(_, a, b, _) => {
            rename_expr(a, f);
            rename_expr(b, f);
        }
        Literal::Constraint(_, args, _) => args.iter_mut().for_each(|e| rename_expr(e, f)),
        Literal::NegatedConstraint(l, _) => rename_lit(l, f),
        Literal::Group(d, _) => rename_disj(d, f),
        Literal::Bool(..) => {}
    }
}

fn rename_atom(a: &mut Atom, f: &mut dyn FnMut(&mut Ident)) {
    f(&mut a.relation);
    a.args.iter_mut().for_each(|e| rename_expr(e, f));
}

fn rename_expr(e: &mut Expr, f: &mut dyn FnMut(&mut Ident)) {
    match e {
        Expr::Var(_) | Expr::Wildcard(_) | Expr::Lit(..) => {}
        Expr::Call(_, args, _) => args.iter_mut().for_each(|x| rename_expr(x, f)),
        Expr::Binary(_, a, b, _) => {
            rename_expr(a, f);
            rename_expr(b, f);
        }
        Expr::Unary(_, a, _) => rename_expr(a, f),
        Expr::Aggregate {
            target,
            order,
            body,
            ..
        } => {
            if let Some(t) = target {
                rename_expr(t, f);
            }
            order.iter_mut().for_each(|x| rename_expr(x, f));
            rename_disj(body, f);
        }
        Expr::As(x, ty, _) => {
            rename_expr(x, f);
            f(ty);
        }
    }
}

/// Replaces each `eqrel` declaration by a plain relation and its closure rules.
pub fn desugar_eqrel(program: &mut Program, diags: &mut Diagnostics) {
    let mut extra = Vec::new();
    for item in &mut program.items {
        let Item::Decl(d) = item else { continue };
        let Some(q) = d.qualifiers.iter().position(|q| q.name == "eqrel") else {
            continue;
        };
        let qspan = d.qualifiers[q].span;
        d.qualifiers.remove(q);
        if d.attrs.len() != 2 || d.attrs[0].ty.name != d.attrs[1].ty.name {
            diags.push(
                Diagnostic::error(
                    "E0112",
                    qspan,
                    format!(
                        "`eqrel` relation `{}` must have two attributes of one type",
                        d.name.name
                    ),
                )
                .with_hint("an equivalence relation is written `.decl same(a: T, b: T) eqrel`"),
            );
            continue;
        }
        extra.extend(eqrel_rules(d));
    }
    program.items.extend(extra);
}

/// `r(x, x) :- r(x, _).  r(y, x) :- r(x, y).  r(x, z) :- r(x, y), r(y, z).`
fn eqrel_rules(d: &Decl) -> Vec<Item> {
    let span = d.span;
    let var = |n: &str| Expr::Var(ident(n, span));
    let atom = |a: Expr, b: Expr| Atom {
        relation: d.name.clone(),
        args: vec![a, b],
        span,
    };
    let rule = |head: Atom, body: Vec<Atom>| {
        Item::Rule(Rule {
            heads: vec![head],
            body: vec![body.into_iter().map(Literal::Atom).collect()],
            span,
        })
    };
    vec![
        rule(
            atom(var("eq_x"), var("eq_x")),
            vec![atom(var("eq_x"), Expr::Wildcard(span))],
        ),
        rule(
            atom(var("eq_y"), var("eq_x")),
            vec![atom(var("eq_x"), var("eq_y"))],
        ),
        rule(
            atom(var("eq_x"), var("eq_z")),
            vec![
                atom(var("eq_x"), var("eq_y")),
                atom(var("eq_y"), var("eq_z")),
            ],
        ),
    ]
}

fn ident(name: &str, span: Span) -> Ident {
    Ident {
        name: name.to_string(),
        span,
    }
}

/// Souffle pragma keys that tune its evaluation or its own reports and do
/// not change a program's answers: accepted and ignored.
const IGNORED_PRAGMAS: &[&str] = &[
    "magic-transform",
    "magic-transform-exclude",
    "inline-exclude",
    "jobs",
    "index-stats",
    "legacy",
    "RamSIPS",
    "verbose",
    "no-warn",
    "debug-report",
];

/// Checks one `.pragma`: ignored when known, W0006 (once per key) when not.
pub fn pragma(key: &str, span: Span, seen: &mut HashSet<String>, diags: &mut Diagnostics) {
    if IGNORED_PRAGMAS.contains(&key) || !seen.insert(key.to_string()) {
        return;
    }
    diags.push(
        Diagnostic::warning("W0006", span, format!("unknown pragma `{key}` is ignored"))
            .with_hint("netc ignores Souffle's pragmas that only tune evaluation (specs/language.md section 3)"),
    );
}
