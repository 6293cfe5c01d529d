//! Unit tests of the functor table and of every functor (strings,
//! numeric, network, `hash5` via eval); the operators and the properties
//! over any value are in `tests/operators.rs`. The `hash5` conformance
//! vectors live in `compiler/tests/functors.rs`.

mod operators;

use super::*;
use crate::ast::{BinOp, CmpOp, UnOp};
use crate::value::F64;
use proptest::prelude::*;

fn v(text: &str, ty: Prim) -> Value {
    Value::parse(text, ty).expect("test literal")
}
fn s(text: &str) -> Value {
    Value::sym(text)
}
fn n(x: i64) -> Value {
    Value::Number(x)
}
fn u(x: u64) -> Value {
    Value::Unsigned(x)
}
fn f(x: f64) -> Value {
    Value::Float(F64(x))
}
fn ip4(t: &str) -> Value {
    v(t, Prim::Ipv4)
}
fn ip6(t: &str) -> Value {
    v(t, Prim::Ipv6)
}
fn p4(t: &str) -> Value {
    v(t, Prim::Prefix4)
}
fn p6(t: &str) -> Value {
    v(t, Prim::Prefix6)
}

// ---------------------------------------------------------------- the table

#[test]
fn names_list_exactly_the_table_and_is_sorted() {
    let table_names: Vec<&str> = table().iter().map(|(n, _)| *n).collect();
    assert_eq!(table_names, names());
    let mut sorted = names().to_vec();
    sorted.sort();
    assert_eq!(sorted, names());
    assert!(overloads("no_such_functor").is_none());
}

#[test]
fn every_overload_is_named_after_its_builtin_and_every_builtin_has_one() {
    for name in names() {
        let sigs = overloads(name).unwrap();
        assert!(!sigs.is_empty(), "{name}");
        for sig in &sigs {
            // Souffle's to_float/to_number/to_unsigned also convert between
            // the numeric types: those overloads are the itof/ftoi/... builtins.
            let conversion = name.starts_with("to_")
                && matches!(
                    sig.builtin,
                    Builtin::Itof
                        | Builtin::Utof
                        | Builtin::Ftoi
                        | Builtin::Utoi
                        | Builtin::Itou
                        | Builtin::Ftou
                );
            assert!(sig.builtin.name() == *name || conversion, "{name}");
            assert_eq!(sig.is_constraint(), sig.builtin.is_constraint(), "{name}");
            assert!(!sig.params.contains(&Ty::Bool), "{name}: Bool parameter");
            if sig.result == Ty::Num {
                assert!(
                    sig.params.contains(&Ty::Num),
                    "{name}: Num result needs a Num parameter"
                );
            }
        }
    }
    for b in Builtin::ALL {
        let sigs = overloads(b.name()).unwrap();
        assert!(sigs.iter().any(|s| s.builtin == b), "{b:?} has no overload");
    }
    let mut all = Builtin::ALL.to_vec();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), Builtin::ALL.len());
}

#[test]
fn contains_lists_the_string_overload_first_then_the_network_ones() {
    let sigs = overloads("contains").unwrap();
    assert_eq!(sigs[0].builtin, Builtin::Contains);
    assert_eq!(sigs[0].params, vec![Ty::P(Prim::Symbol); 2]);
    let net: Vec<_> = sigs[1..]
        .iter()
        .map(|s| (s.builtin, s.params.clone()))
        .collect();
    assert!(net.contains(&(
        Builtin::PrefixContains,
        vec![Ty::P(Prim::Prefix4), Ty::P(Prim::Ipv4)]
    )));
    assert!(net.contains(&(
        Builtin::PrefixContains,
        vec![Ty::P(Prim::Prefix6), Ty::P(Prim::Prefix6)]
    )));
    assert_eq!(sigs.len(), 5);
}

#[test]
fn variadic_functors_have_one_overload_per_arity() {
    for name in ["cat", "min", "max"] {
        let arities: Vec<usize> = overloads(name)
            .unwrap()
            .iter()
            .map(|s| s.params.len())
            .collect();
        assert_eq!(arities, (2..=MAX_VARIADIC).collect::<Vec<_>>(), "{name}");
    }
    let hash = overloads("hash5").unwrap();
    assert_eq!(hash.len(), 16);
    // The all-`number` IPv4 overload comes first, so integer literals fit it.
    assert_eq!(
        hash[0].params,
        vec![
            Ty::P(Prim::Number),
            Ty::P(Prim::Ipv4),
            Ty::P(Prim::Ipv4),
            Ty::P(Prim::Number),
            Ty::P(Prim::Number)
        ]
    );
}

/// Sample values of a primitive, including edge cases.
fn samples(p: Prim) -> Vec<Value> {
    match p {
        Prim::Number => vec![
            n(0),
            n(1),
            n(-1),
            n(6),
            n(24),
            n(255),
            n(65535),
            n(65536),
            n(i64::MIN),
            n(i64::MAX),
        ],
        Prim::Unsigned => vec![u(0), u(1), u(17), u(24), u(1 << 32), u(u64::MAX)],
        Prim::Float => vec![
            f(0.0),
            f(-0.0),
            f(2.5),
            f(-7.9),
            f(f64::NAN),
            f(f64::INFINITY),
            f(1e300),
        ],
        Prim::Symbol => vec![
            s(""),
            s("abc"),
            s("10.0.0.1"),
            s("a.*"),
            s("(["),
            s("ünï"),
            s("-42"),
            s("10.0.0.0/8"),
        ],
        Prim::Ipv4 => vec![ip4("0.0.0.0"), ip4("10.1.2.3"), ip4("255.255.255.255")],
        Prim::Ipv6 => vec![
            ip6("::"),
            ip6("2001:db8::1"),
            ip6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
        ],
        Prim::Prefix4 => vec![
            p4("0.0.0.0/0"),
            p4("10.0.0.0/8"),
            p4("10.1.2.3/32"),
            Value::Prefix4(7, 40),
        ],
        Prim::Prefix6 => vec![
            p6("::/0"),
            p6("2001:db8::/32"),
            p6("::1/128"),
            Value::Prefix6(7, 200),
        ],
        Prim::Mac => vec![
            v("00:00:00:00:00:00", Prim::Mac),
            v("de:ad:be:ef:00:01", Prim::Mac),
        ],
    }
}

/// Every overload, evaluated on sample arguments of its parameter types,
/// gives a value of its result type or is undefined; never panics.
#[test]
fn results_have_the_signature_result_type() {
    for name in names() {
        for sig in overloads(name).unwrap() {
            if sig.params.len() > 3
                && sig.builtin != Builtin::Hash5
                && sig.builtin != Builtin::Hash5Sym
            {
                continue; // long variadic overloads: covered by the arity-3 ones
            }
            let num_choices: &[Prim] = if sig.params.contains(&Ty::Num) {
                &[Prim::Number, Prim::Unsigned, Prim::Float]
            } else {
                &[Prim::Number]
            };
            for &num in num_choices {
                let resolve = |t: Ty| match t {
                    Ty::P(p) => p,
                    Ty::Num => num,
                    Ty::Bool => unreachable!(),
                };
                // The cartesian product is small enough with the first 3 samples.
                let mut rows: Vec<Vec<Value>> = vec![vec![]];
                for t in &sig.params {
                    let vals: Vec<Value> = samples(resolve(*t)).into_iter().take(4).collect();
                    rows = rows
                        .into_iter()
                        .flat_map(|r| vals.iter().map(move |x| [r.clone(), vec![*x]].concat()))
                        .collect();
                }
                for args in rows {
                    if sig.is_constraint() {
                        let _ = holds(sig.builtin, &args);
                        assert_eq!(eval(sig.builtin, &args), None);
                    } else if let Some(r) = eval(sig.builtin, &args) {
                        assert_eq!(
                            Ty::P(r.prim()),
                            Ty::P(resolve(sig.result)),
                            "{name}{args:?} = {r:?}"
                        );
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------- strings

#[test]
fn cat_concatenates_any_number_of_symbols() {
    assert_eq!(eval(Builtin::Cat, &[s("ab"), s("c")]), Some(s("abc")));
    assert_eq!(
        eval(Builtin::Cat, &[s("a"), s(""), s("b"), s("c")]),
        Some(s("abc"))
    );
    assert_eq!(eval(Builtin::Cat, &[s("a"), n(1)]), None);
}

#[test]
fn strlen_counts_characters() {
    assert_eq!(eval(Builtin::Strlen, &[s("")]), Some(n(0)));
    assert_eq!(eval(Builtin::Strlen, &[s("hello")]), Some(n(5)));
    assert_eq!(eval(Builtin::Strlen, &[s("ünï")]), Some(n(3)));
}

#[test]
fn substr_is_zero_based_clamps_the_length_and_rejects_bad_starts() {
    let sub = |t: &str, a: i64, l: i64| eval(Builtin::Substr, &[s(t), n(a), n(l)]);
    assert_eq!(sub("network", 0, 3), Some(s("net")));
    assert_eq!(sub("network", 3, 4), Some(s("work")));
    assert_eq!(sub("network", 3, 100), Some(s("work")));
    assert_eq!(sub("network", 7, 1), Some(s("")));
    assert_eq!(sub("network", 8, 1), None);
    assert_eq!(sub("network", -1, 1), None);
    assert_eq!(sub("network", 0, -1), None);
    assert_eq!(sub("ünïcode", 1, 2), Some(s("nï")));
    assert_eq!(sub("abc", 1, i64::MAX), Some(s("bc")));
}

#[test]
fn replace_changes_the_first_occurrence_only() {
    let rep = |t: &str, o: &str, w: &str| eval(Builtin::Replace, &[s(t), s(o), s(w)]);
    assert_eq!(rep("a,b,a", "a", "x"), Some(s("x,b,a")));
    assert_eq!(rep("a,b,a", "b,a", "c"), Some(s("a,c")));
    assert_eq!(rep("abc", "z", "x"), Some(s("abc")));
    // an empty needle would match everywhere: nothing is replaced
    assert_eq!(rep("abc", "", "x"), Some(s("abc")));
    assert_eq!(rep("ünï", "n", "NN"), Some(s("üNNï")));
    assert_eq!(rep("abc", "abc", ""), Some(s("")));
    assert_eq!(eval(Builtin::Replace, &[s("a"), n(1), s("b")]), None);
}

#[test]
fn string_contains_takes_the_needle_first() {
    assert!(holds(Builtin::Contains, &[s("work"), s("network")]));
    assert!(!holds(Builtin::Contains, &[s("network"), s("work")]));
    assert!(holds(Builtin::Contains, &[s(""), s("x")]));
    assert!(!holds(Builtin::Contains, &[s("a"), n(1)]));
}

#[test]
fn match_is_a_full_match_and_bad_patterns_never_match() {
    assert!(holds(Builtin::Match, &[s("a.*"), s("abc")]));
    assert!(
        !holds(Builtin::Match, &[s("b"), s("abc")]),
        "partial matches do not count"
    );
    assert!(!holds(Builtin::Match, &[s("a|ab"), s("abc")]));
    assert!(
        holds(Builtin::Match, &[s("a|abc"), s("abc")]),
        "alternation is grouped before anchoring"
    );
    assert!(holds(Builtin::Match, &[s(r"eth[0-9]+"), s("eth12")]));
    assert!(!holds(Builtin::Match, &[s("(["), s("([")]));
    assert!(regex_error("([").is_some());
    assert!(regex_error(r"\d+\.\d+").is_none());
    assert!(!holds(Builtin::Match, &[s("a"), n(1)]));
}

#[test]
fn text_conversions_use_the_facts_file_forms() {
    assert_eq!(eval(Builtin::ToNumber, &[s("-42")]), Some(n(-42)));
    assert_eq!(eval(Builtin::ToNumber, &[s("0x10")]), Some(n(16)));
    assert_eq!(eval(Builtin::ToNumber, &[s("4x")]), None);
    assert_eq!(eval(Builtin::ToNumber, &[s("9223372036854775808")]), None);
    assert_eq!(
        eval(Builtin::ToUnsigned, &[s("18446744073709551615")]),
        Some(u(u64::MAX))
    );
    assert_eq!(eval(Builtin::ToUnsigned, &[s("-1")]), None);
    assert_eq!(eval(Builtin::ToFloat, &[s("1.5")]), Some(f(1.5)));
    assert_eq!(eval(Builtin::ToFloat, &[s("x")]), None);
    assert_eq!(
        eval(Builtin::ToIpv4, &[s("10.0.0.1")]),
        Some(ip4("10.0.0.1"))
    );
    assert_eq!(eval(Builtin::ToIpv4, &[s("10.0.0.256")]), None);
    assert_eq!(
        eval(Builtin::ToIpv6, &[s("2001:db8::1")]),
        Some(ip6("2001:db8::1"))
    );
    assert_eq!(
        eval(Builtin::ToPrefix4, &[s("10.0.0.0/8")]),
        Some(p4("10.0.0.0/8"))
    );
    assert_eq!(
        eval(Builtin::ToPrefix4, &[s("10.0.0.1/8")]),
        None,
        "host bits set"
    );
    assert_eq!(
        eval(Builtin::ToPrefix6, &[s("2001:db8::/32")]),
        Some(p6("2001:db8::/32"))
    );
    assert_eq!(
        eval(Builtin::ToMac, &[s("de:ad:be:ef:00:01")]),
        Some(Value::Mac(0xdead_beef_0001))
    );
    assert_eq!(eval(Builtin::ToMac, &[s("de:ad:be:ef:00")]), None);
}

#[test]
fn to_string_is_the_display_form_and_round_trips() {
    for p in Prim::ALL {
        for x in samples(p) {
            let text = eval(Builtin::ToString, &[x]).unwrap();
            assert_eq!(text, s(&x.to_string()));
        }
    }
    assert_eq!(eval(Builtin::ToString, &[n(-3)]), Some(s("-3")));
    assert_eq!(
        eval(Builtin::ToString, &[p4("10.0.0.0/8")]),
        Some(s("10.0.0.0/8"))
    );
    let back = eval(
        Builtin::ToPrefix6,
        &[eval(Builtin::ToString, &[p6("2001:db8::/32")]).unwrap()],
    );
    assert_eq!(back, Some(p6("2001:db8::/32")));
}

// ---------------------------------------------------------------- numeric functors

#[test]
fn souffle_conversions_reinterpret_integers_and_truncate_floats() {
    assert_eq!(eval(Builtin::Itou, &[n(-1)]), Some(u(u64::MAX)));
    assert_eq!(eval(Builtin::Utoi, &[u(u64::MAX)]), Some(n(-1)));
    assert_eq!(eval(Builtin::Itof, &[n(-3)]), Some(f(-3.0)));
    assert_eq!(
        eval(Builtin::Utof, &[u(1 << 53)]),
        Some(f(9007199254740992.0))
    );
    assert_eq!(eval(Builtin::Ftoi, &[f(2.9)]), Some(n(2)));
    assert_eq!(eval(Builtin::Ftoi, &[f(-2.9)]), Some(n(-2)));
    assert_eq!(eval(Builtin::Ftoi, &[f(f64::NAN)]), None);
    assert_eq!(eval(Builtin::Ftoi, &[f(9.3e18)]), None);
    assert_eq!(
        eval(Builtin::Ftoi, &[f(-9223372036854775808.0)]),
        Some(n(i64::MIN))
    );
    assert_eq!(eval(Builtin::Ftou, &[f(-0.5)]), Some(u(0)));
    assert_eq!(eval(Builtin::Ftou, &[f(-1.0)]), None);
    assert_eq!(eval(Builtin::Ftou, &[f(18446744073709551616.0)]), None);
    assert_eq!(
        eval(Builtin::Ftou, &[f(1e19)]),
        Some(u(10_000_000_000_000_000_000))
    );
    assert_eq!(eval(Builtin::Itou, &[u(1)]), None, "wrong argument type");
}

#[test]
fn min_max_abs_work_on_one_numeric_type() {
    assert_eq!(eval(Builtin::Min, &[n(3), n(-2), n(7)]), Some(n(-2)));
    assert_eq!(eval(Builtin::Max, &[n(3), n(-2), n(7)]), Some(n(7)));
    assert_eq!(eval(Builtin::Max, &[u(3), u(u64::MAX)]), Some(u(u64::MAX)));
    assert_eq!(eval(Builtin::Min, &[f(0.5), f(-1.5)]), Some(f(-1.5)));
    assert_eq!(
        eval(Builtin::Min, &[f(0.0), f(-0.0)]),
        Some(f(-0.0)),
        "totalOrder"
    );
    assert_eq!(eval(Builtin::Min, &[n(1), u(2)]), None);
    assert_eq!(eval(Builtin::Max, &[s("a"), s("b")]), None);
    assert_eq!(eval(Builtin::Abs, &[n(-5)]), Some(n(5)));
    assert_eq!(eval(Builtin::Abs, &[n(i64::MIN)]), Some(n(i64::MIN)));
    assert_eq!(eval(Builtin::Abs, &[f(-2.5)]), Some(f(2.5)));
    assert_eq!(eval(Builtin::Abs, &[u(9)]), Some(u(9)));
}

// ---------------------------------------------------------------- network

#[test]
fn prefix_contains_addresses_and_subnets() {
    let c = |p: Value, x: Value| holds(Builtin::PrefixContains, &[p, x]);
    assert!(c(p4("10.0.0.0/8"), ip4("10.255.0.1")));
    assert!(!c(p4("10.0.0.0/8"), ip4("11.0.0.0")));
    assert!(c(p4("0.0.0.0/0"), ip4("255.255.255.255")));
    assert!(c(p4("10.1.2.3/32"), ip4("10.1.2.3")));
    assert!(!c(p4("10.1.2.3/32"), ip4("10.1.2.4")));
    assert!(c(p6("2001:db8::/32"), ip6("2001:db8:1::1")));
    assert!(!c(p6("2001:db8::/32"), ip6("2001:db9::1")));
    assert!(c(p4("10.0.0.0/8"), p4("10.1.0.0/16")));
    assert!(c(p4("10.0.0.0/8"), p4("10.0.0.0/8")));
    assert!(!c(p4("10.1.0.0/16"), p4("10.0.0.0/8")));
    assert!(!c(p4("10.0.0.0/8"), p4("11.0.0.0/16")));
    assert!(c(p6("::/0"), p6("2001:db8::/32")));
    assert!(!c(p4("10.0.0.0/8"), ip6("::1")), "families differ");
    assert!(
        !c(Value::Prefix4(0, 40), ip4("0.0.0.0")),
        "malformed prefix"
    );
}

#[test]
fn prefix_parts() {
    assert_eq!(eval(Builtin::PrefixLen, &[p4("10.0.0.0/8")]), Some(n(8)));
    assert_eq!(
        eval(Builtin::PrefixLen, &[p6("2001:db8::/32")]),
        Some(n(32))
    );
    assert_eq!(
        eval(Builtin::PrefixNetwork, &[p4("192.168.1.0/24")]),
        Some(ip4("192.168.1.0"))
    );
    assert_eq!(
        eval(Builtin::PrefixBroadcast, &[p4("192.168.1.0/24")]),
        Some(ip4("192.168.1.255"))
    );
    assert_eq!(
        eval(Builtin::PrefixBroadcast, &[p4("0.0.0.0/0")]),
        Some(ip4("255.255.255.255"))
    );
    assert_eq!(
        eval(Builtin::PrefixBroadcast, &[p4("10.1.2.3/32")]),
        Some(ip4("10.1.2.3"))
    );
    assert_eq!(
        eval(Builtin::PrefixBroadcast, &[p6("2001:db8::/32")]),
        Some(ip6("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"))
    );
    assert_eq!(eval(Builtin::PrefixNetwork, &[p6("::/0")]), Some(ip6("::")));
    assert_eq!(eval(Builtin::PrefixLen, &[Value::Prefix6(0, 129)]), None);
}

#[test]
fn nth_addr_stays_inside_the_prefix() {
    let nth = |p: Value, k: Value| eval(Builtin::NthAddr, &[p, k]);
    assert_eq!(nth(p4("192.168.1.0/24"), n(0)), Some(ip4("192.168.1.0")));
    assert_eq!(nth(p4("192.168.1.0/24"), n(1)), Some(ip4("192.168.1.1")));
    assert_eq!(
        nth(p4("192.168.1.0/24"), u(255)),
        Some(ip4("192.168.1.255"))
    );
    assert_eq!(nth(p4("192.168.1.0/24"), n(256)), None);
    assert_eq!(nth(p4("192.168.1.0/24"), n(-1)), None);
    assert_eq!(nth(p4("10.1.2.3/32"), n(0)), Some(ip4("10.1.2.3")));
    assert_eq!(nth(p4("10.1.2.3/32"), n(1)), None);
    assert_eq!(
        nth(p4("0.0.0.0/0"), u(u64::from(u32::MAX))),
        Some(ip4("255.255.255.255"))
    );
    assert_eq!(nth(p4("0.0.0.0/0"), u(1 << 32)), None);
    assert_eq!(nth(p6("2001:db8::/64"), n(5)), Some(ip6("2001:db8::5")));
    assert_eq!(
        nth(p6("::/0"), u(u64::MAX)),
        Some(ip6("::ffff:ffff:ffff:ffff"))
    );
    assert_eq!(nth(p6("2001:db8::/120"), n(256)), None);
}

#[test]
fn prefix_of_an_address_clears_host_bits() {
    let pre = |a: Value, l: Value| eval(Builtin::MakePrefix, &[a, l]);
    assert_eq!(pre(ip4("10.1.2.3"), n(8)), Some(p4("10.0.0.0/8")));
    assert_eq!(pre(ip4("10.1.2.3"), u(32)), Some(p4("10.1.2.3/32")));
    assert_eq!(pre(ip4("10.1.2.3"), n(0)), Some(p4("0.0.0.0/0")));
    assert_eq!(pre(ip4("10.1.2.3"), n(33)), None);
    assert_eq!(pre(ip4("10.1.2.3"), n(-1)), None);
    assert_eq!(pre(ip6("2001:db8::1"), n(32)), Some(p6("2001:db8::/32")));
    assert_eq!(pre(ip6("2001:db8::1"), n(129)), None);
}

#[test]
fn address_integer_conversions() {
    assert_eq!(
        eval(Builtin::Ipv4ToUnsigned, &[ip4("10.0.0.1")]),
        Some(u(167_772_161))
    );
    assert_eq!(
        eval(Builtin::UnsignedToIpv4, &[u(167_772_161)]),
        Some(ip4("10.0.0.1"))
    );
    assert_eq!(eval(Builtin::UnsignedToIpv4, &[u(1 << 32)]), None);
    assert_eq!(
        eval(Builtin::MacToUnsigned, &[Value::Mac(0xdead_beef_0001)]),
        Some(u(0xdead_beef_0001))
    );
    assert_eq!(
        eval(Builtin::UnsignedToMac, &[u(0xffff_ffff_ffff)]),
        Some(Value::Mac(0xffff_ffff_ffff))
    );
    assert_eq!(eval(Builtin::UnsignedToMac, &[u(1 << 48)]), None);
}

// ---------------------------------------------------------------- hash5 via eval

#[test]
fn hash5_checks_ranges_and_families() {
    let a = ip4("10.0.0.1");
    let b = ip4("10.0.0.2");
    assert_eq!(
        eval(Builtin::Hash5, &[n(6), a, b, n(12345), n(80)]),
        Some(u(0x0927_5D9F))
    );
    assert_eq!(
        eval(Builtin::Hash5, &[u(6), a, b, u(12345), n(80)]),
        Some(u(0x0927_5D9F))
    );
    assert_eq!(
        eval(Builtin::Hash5Sym, &[n(6), b, a, n(80), n(12345)]),
        Some(u(0x0927_5D9F))
    );
    assert_eq!(eval(Builtin::Hash5, &[n(256), a, b, n(1), n(2)]), None);
    assert_eq!(eval(Builtin::Hash5, &[n(-1), a, b, n(1), n(2)]), None);
    assert_eq!(eval(Builtin::Hash5, &[n(6), a, b, n(65536), n(2)]), None);
    assert_eq!(eval(Builtin::Hash5, &[n(6), a, b, n(1), n(-2)]), None);
    assert_eq!(
        eval(Builtin::Hash5, &[n(6), a, ip6("::1"), n(1), n(2)]),
        None
    );
    assert_eq!(eval(Builtin::Hash5, &[n(6), a, b, n(1)]), None);
}
