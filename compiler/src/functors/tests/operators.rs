//! Unit tests of the operators (arithmetic, power, bitwise, logical,
//! unary, comparisons) and the properties over any value: nothing panics,
//! operators agree with their definitions, and the engine's fused `cat`
//! equals `cat` of `to_string`. Shares the helpers of `functors/tests.rs`.

use super::*;

// ---------------------------------------------------------------- operators

#[test]
fn integer_arithmetic_wraps_and_division_by_zero_is_undefined() {
    let b = |op, x, y| eval_binary(op, &n(x), &n(y));
    assert_eq!(b(BinOp::Add, i64::MAX, 1), Some(n(i64::MIN)));
    assert_eq!(b(BinOp::Sub, i64::MIN, 1), Some(n(i64::MAX)));
    assert_eq!(b(BinOp::Mul, 1 << 62, 4), Some(n(0)));
    assert_eq!(b(BinOp::Div, 7, -2), Some(n(-3)));
    assert_eq!(b(BinOp::Mod, -7, 2), Some(n(-1)));
    assert_eq!(b(BinOp::Div, 1, 0), None);
    assert_eq!(b(BinOp::Mod, 1, 0), None);
    assert_eq!(b(BinOp::Div, i64::MIN, -1), Some(n(i64::MIN)));
    assert_eq!(b(BinOp::Mod, i64::MIN, -1), Some(n(0)));
    let ub = |op, x, y| eval_binary(op, &u(x), &u(y));
    assert_eq!(ub(BinOp::Sub, 0, 1), Some(u(u64::MAX)));
    assert_eq!(ub(BinOp::Div, 7, 2), Some(u(3)));
    assert_eq!(ub(BinOp::Div, 7, 0), None);
    assert_eq!(ub(BinOp::Mod, 7, 0), None);
    assert_eq!(eval_binary(BinOp::Div, &f(1.0), &f(0.0)), None);
    assert_eq!(eval_binary(BinOp::Div, &f(1.0), &f(-0.0)), None);
    assert_eq!(eval_binary(BinOp::Div, &f(1.0), &f(4.0)), Some(f(0.25)));
}

#[test]
fn power() {
    let b = |x, y| eval_binary(BinOp::Pow, &n(x), &n(y));
    assert_eq!(b(2, 10), Some(n(1024)));
    assert_eq!(b(-3, 3), Some(n(-27)));
    assert_eq!(b(7, 0), Some(n(1)));
    assert_eq!(b(2, 64), Some(n(0)), "wraps");
    assert_eq!(b(2, -1), Some(n(0)));
    assert_eq!(b(1, -5), Some(n(1)));
    assert_eq!(b(-1, -3), Some(n(-1)));
    assert_eq!(b(-1, -4), Some(n(1)));
    assert_eq!(b(0, -1), None);
    assert_eq!(eval_binary(BinOp::Pow, &u(3), &u(4)), Some(u(81)));
    // Exponents beyond u32 (3^(2^32 + 1) = 3^(2^32 - 1) * 9 modulo 2^64).
    let big = (1u64 << 32) + 1;
    assert_eq!(
        eval_binary(BinOp::Pow, &u(3), &u(big)),
        Some(u(3u64.wrapping_pow(u32::MAX).wrapping_mul(9)))
    );
    assert_eq!(
        eval_binary(BinOp::Pow, &n(3), &n(big as i64)),
        Some(n(3i64.wrapping_pow(u32::MAX).wrapping_mul(9)))
    );
    assert_eq!(
        eval_binary(BinOp::Pow, &f(2.0), &f(0.5)),
        Some(f(std::f64::consts::SQRT_2))
    );
}

#[test]
fn bitwise_shift_and_logical_operators() {
    let b = |op, x, y| eval_binary(op, &n(x), &n(y));
    assert_eq!(b(BinOp::BAnd, 0b1100, 0b1010), Some(n(0b1000)));
    assert_eq!(b(BinOp::BOr, 0b1100, 0b1010), Some(n(0b1110)));
    assert_eq!(b(BinOp::BXor, 0b1100, 0b1010), Some(n(0b0110)));
    assert_eq!(b(BinOp::Shl, 1, 63), Some(n(i64::MIN)));
    assert_eq!(b(BinOp::Shl, 1, 64), Some(n(0)));
    assert_eq!(b(BinOp::Shr, -8, 1), Some(n(-4)), "arithmetic shift");
    assert_eq!(b(BinOp::Shr, -8, 100), Some(n(-1)));
    assert_eq!(b(BinOp::Shr, 8, 100), Some(n(0)));
    assert_eq!(b(BinOp::Shl, 1, -1), None);
    assert_eq!(b(BinOp::LAnd, 2, 3), Some(n(1)));
    assert_eq!(b(BinOp::LAnd, 2, 0), Some(n(0)));
    assert_eq!(b(BinOp::LOr, 0, -3), Some(n(1)));
    assert_eq!(b(BinOp::LOr, 0, 0), Some(n(0)));
    assert_eq!(eval_binary(BinOp::Shr, &u(u64::MAX), &u(60)), Some(u(15)));
    assert_eq!(eval_binary(BinOp::Shr, &u(u64::MAX), &u(64)), Some(u(0)));
    assert_eq!(eval_binary(BinOp::Shl, &u(3), &u(u64::MAX)), Some(u(0)));
    for op in [
        BinOp::Mod,
        BinOp::BAnd,
        BinOp::BOr,
        BinOp::BXor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::LAnd,
        BinOp::LOr,
    ] {
        assert_eq!(eval_binary(op, &f(1.0), &f(1.0)), None, "{op:?} on float");
        assert!(!binary_operand_prims(op).contains(&Prim::Float));
    }
}

#[test]
fn operators_reject_mixed_or_non_numeric_operands() {
    assert_eq!(eval_binary(BinOp::Add, &n(1), &u(1)), None);
    assert_eq!(
        eval_binary(BinOp::Add, &s("a"), &s("b")),
        None,
        "+ is not concatenation"
    );
    assert_eq!(
        eval_binary(BinOp::Add, &ip4("10.0.0.1"), &ip4("0.0.0.1")),
        None
    );
    for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Pow] {
        assert_eq!(
            binary_operand_prims(op),
            &[Prim::Number, Prim::Unsigned, Prim::Float]
        );
    }
}

#[test]
fn unary_operators() {
    assert_eq!(eval_unary(UnOp::Neg, &n(5)), Some(n(-5)));
    assert_eq!(eval_unary(UnOp::Neg, &n(i64::MIN)), Some(n(i64::MIN)));
    assert_eq!(eval_unary(UnOp::Neg, &f(0.0)), Some(f(-0.0)));
    assert_eq!(eval_unary(UnOp::Neg, &u(5)), None);
    assert_eq!(eval_unary(UnOp::BNot, &n(0)), Some(n(-1)));
    assert_eq!(eval_unary(UnOp::BNot, &u(0)), Some(u(u64::MAX)));
    assert_eq!(eval_unary(UnOp::LNot, &n(0)), Some(n(1)));
    assert_eq!(eval_unary(UnOp::LNot, &u(7)), Some(u(0)));
    assert_eq!(eval_unary(UnOp::BNot, &f(1.0)), None);
    assert_eq!(unary_operand_prims(UnOp::Neg), &[Prim::Number, Prim::Float]);
}

#[test]
fn comparisons_follow_value_order() {
    assert!(compare(CmpOp::Lt, &n(-1), &n(0)));
    assert!(compare(CmpOp::Gt, &u(u64::MAX), &u(0)));
    assert!(compare(CmpOp::Le, &n(3), &n(3)));
    assert!(!compare(CmpOp::Ne, &n(3), &n(3)));
    assert!(compare(CmpOp::Ge, &n(4), &n(3)));
    assert!(compare(CmpOp::Eq, &s("x"), &s("x")));
    // Interned later but smaller as text.
    assert!(compare(
        CmpOp::Lt,
        &s("functors-test-aaa"),
        &s("functors-test-zzz")
    ));
    assert!(compare(
        CmpOp::Gt,
        &s("functors-test-zzz2"),
        &s("functors-test-aaa2")
    ));
    assert!(compare(CmpOp::Lt, &ip4("9.0.0.1"), &ip4("10.0.0.1")));
    // floats as IEEE 754 (and Souffle) compare them
    assert!(compare(CmpOp::Eq, &f(-0.0), &f(0.0)));
    assert!(!compare(CmpOp::Lt, &f(-0.0), &f(0.0)));
    assert!(compare(CmpOp::Le, &f(-0.0), &f(0.0)) && compare(CmpOp::Ge, &f(-0.0), &f(0.0)));
    for op in [CmpOp::Eq, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge] {
        assert!(!compare(op, &f(f64::NAN), &f(f64::NAN)), "{op:?}");
        assert!(!compare(op, &f(f64::NAN), &f(1.0)), "{op:?}");
    }
    assert!(compare(CmpOp::Ne, &f(f64::NAN), &f(f64::NAN)));
    assert!(compare(CmpOp::Lt, &p4("10.0.0.0/8"), &p4("10.0.0.0/16")));
}

// ---------------------------------------------------------------- properties

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Number),
        any::<u64>().prop_map(Value::Unsigned),
        any::<f64>().prop_map(|x| Value::Float(F64(x))),
        "[a-c.*()\\[\\]0-9:/ü]{0,6}".prop_map(|t| Value::sym(&t)),
        any::<u32>().prop_map(Value::Ipv4),
        any::<u128>().prop_map(Value::Ipv6),
        (any::<u32>(), 0u8..=40).prop_map(|(a, l)| Value::Prefix4(a, l)),
        (any::<u128>(), 0u8..=140).prop_map(|(a, l)| Value::Prefix6(a, l)),
        any::<u64>().prop_map(Value::Mac),
        (-3i64..70).prop_map(Value::Number),
    ]
}

const BIN_OPS: [BinOp; 13] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Mod,
    BinOp::Pow,
    BinOp::BAnd,
    BinOp::BOr,
    BinOp::BXor,
    BinOp::Shl,
    BinOp::Shr,
    BinOp::LAnd,
    BinOp::LOr,
];

proptest! {
    #[test]
    fn nothing_panics_on_any_input(args in proptest::collection::vec(any_value(), 0..6)) {
        for b in Builtin::ALL {
            let _ = eval(b, &args);
            let _ = holds(b, &args);
        }
        if let [a, b, ..] = args.as_slice() {
            for op in BIN_OPS {
                if let Some(r) = eval_binary(op, a, b) {
                    prop_assert_eq!(r.prim(), a.prim());
                    prop_assert!(binary_operand_prims(op).contains(&a.prim()));
                }
            }
            for op in [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge] {
                let _ = compare(op, a, b);
            }
        }
        if let Some(a) = args.first() {
            for op in [UnOp::Neg, UnOp::BNot, UnOp::LNot] {
                if let Some(r) = eval_unary(op, a) {
                    prop_assert_eq!(r.prim(), a.prim());
                    prop_assert!(unary_operand_prims(op).contains(&a.prim()));
                }
            }
        }
    }

    #[test]
    fn prefixes_contain_what_they_make(a in any::<u32>(), len in 0i64..=32, k in any::<u32>()) {
        let p = eval(Builtin::MakePrefix, &[Value::Ipv4(a), n(len)]).unwrap();
        prop_assert!(holds(Builtin::PrefixContains, &[p, Value::Ipv4(a)]));
        prop_assert!(holds(Builtin::PrefixContains, &[p, p]));
        let first = eval(Builtin::PrefixNetwork, &[p]).unwrap();
        let last = eval(Builtin::PrefixBroadcast, &[p]).unwrap();
        prop_assert!(first <= Value::Ipv4(a) && Value::Ipv4(a) <= last);
        let size = 1u64 << (32 - len);
        let k = u64::from(k) % size;
        let nth = eval(Builtin::NthAddr, &[p, u(k)]).unwrap();
        prop_assert!(holds(Builtin::PrefixContains, &[p, nth]));
        prop_assert_eq!(eval(Builtin::NthAddr, &[p, u(size - 1)]), Some(last));
        prop_assert_eq!(eval(Builtin::NthAddr, &[p, u(size)]), None);
        // A shorter prefix of the same address contains this one, a longer does not.
        if len > 0 {
            let wider = eval(Builtin::MakePrefix, &[Value::Ipv4(a), n(len - 1)]).unwrap();
            prop_assert!(holds(Builtin::PrefixContains, &[wider, p]));
            prop_assert!(!holds(Builtin::PrefixContains, &[p, wider]));
        }
    }

    #[test]
    fn text_conversions_round_trip(x in any_value()) {
        let text = eval(Builtin::ToString, &[x]).unwrap();
        let back = match x.prim() {
            Prim::Number => eval(Builtin::ToNumber, &[text]),
            Prim::Unsigned => eval(Builtin::ToUnsigned, &[text]),
            Prim::Ipv4 => eval(Builtin::ToIpv4, &[text]),
            Prim::Ipv6 => eval(Builtin::ToIpv6, &[text]),
            _ => return Ok(()),
        };
        prop_assert_eq!(back, Some(x));
    }

    #[test]
    fn substr_pieces_concatenate_back(t in "[a-zü]{0,8}", cut in 0i64..9) {
        let len = t.chars().count() as i64;
        let cut = cut.min(len);
        let head = eval(Builtin::Substr, &[s(&t), n(0), n(cut)]).unwrap();
        let tail = eval(Builtin::Substr, &[s(&t), n(cut), n(len)]).unwrap();
        prop_assert_eq!(eval(Builtin::Cat, &[head, tail]), Some(s(&t)));
        prop_assert_eq!(eval(Builtin::Strlen, &[head]), Some(n(cut)));
    }
}

proptest! {
    /// The fused `cat` the engine uses for `cat(.., to_string(x), ..)` gives
    /// the symbol `cat` gives over the converted arguments, and is undefined
    /// exactly when it is (an unconverted argument that is not a symbol).
    #[test]
    fn cat_converted_equals_cat_of_to_string(
        parts in proptest::collection::vec(
            (any::<bool>(), prop_oneof![any_value(), "[a-z,=:.ü]{0,6}".prop_map(|t| s(&t))]),
            0..9,
        )
    ) {
        let args: Vec<Value> = parts
            .iter()
            .map(|&(conv, v)| if conv { eval(Builtin::ToString, &[v]).unwrap() } else { v })
            .collect();
        prop_assert_eq!(cat_converted(&parts), eval(Builtin::Cat, &args));
    }
}

#[test]
fn cat_converted_formats_addresses_and_numbers() {
    let parts = [
        (false, s("ip,reg6=")),
        (true, n(-7)),
        (false, s(",nw_dst=")),
        (true, ip4("10.1.2.3")),
        (false, s(",dl_src=")),
        (true, v("de:ad:be:ef:00:01", Prim::Mac)),
        (true, s("x")),
    ];
    assert_eq!(
        cat_converted(&parts),
        Some(s("ip,reg6=-7,nw_dst=10.1.2.3,dl_src=de:ad:be:ef:00:01x"))
    );
    // An unconverted non-symbol is ill-typed for `cat`: undefined.
    assert_eq!(cat_converted(&[(false, n(1))]), None);
}
