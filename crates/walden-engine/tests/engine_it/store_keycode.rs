//! The key encoding orders bytes as `Value` orders keys, and decodes back.

use proptest::prelude::*;
use rust_decimal::Decimal;
use std::cmp::Ordering;
use walden_engine::store::{decode_key, key_bytes};
use walden_engine::types::Numeric;
use walden_engine::types::Value;

/// One column's value of a given variant (or NULL): key columns hold one.
fn column_value(kind: u8) -> BoxedStrategy<Value> {
    let v = match kind {
        0 => any::<bool>().prop_map(Value::Bool).boxed(),
        1 => any::<i64>().prop_map(Value::Int).boxed(),
        2 => any::<f64>()
            .prop_filter("NaN", |f| !f.is_nan())
            .prop_map(Value::Float)
            .boxed(),
        // Small and big decimals, and the special values.
        3 => prop_oneof![
            6 => (any::<i64>(), 0u32..=12)
                .prop_map(|(m, s)| Value::Decimal(Decimal::new(m, s).into())),
            2 => (any::<i64>(), any::<u64>(), 0i64..=40, -40i64..=0).prop_map(|(a, b, s, e)| {
                let int = num_bigint::BigInt::from(a) * num_bigint::BigInt::from(b);
                Value::Decimal(Numeric::from_parts(int, s + e))
            }),
            1 => prop_oneof![Just(Numeric::NaN), Just(Numeric::PosInf), Just(Numeric::NegInf)]
                .prop_map(Value::Decimal),
        ]
        .boxed(),
        4 => proptest::collection::vec(
            prop_oneof![Just('\0'), Just('a'), Just('b'), Just('é'), any::<char>()],
            0..6,
        )
        .prop_map(|c| Value::text(c.into_iter().collect::<String>()))
        .boxed(),
        5 => any::<i64>().prop_map(Value::Timestamp).boxed(),
        6 => any::<i32>().prop_map(Value::Date).boxed(),
        7 => any::<u128>().prop_map(Value::Uuid).boxed(),
        9 => any::<i64>().prop_map(Value::TimestampTz).boxed(),
        10 => any::<i64>().prop_map(Value::Time).boxed(),
        // Arrays: of integers, or of text, with NULL elements.
        11 => proptest::collection::vec(
            prop_oneof![1 => Just(Value::Null), 4 => (-3i64..3).prop_map(Value::Int)],
            0..4,
        )
        .prop_map(|v| Value::Array(v.into()))
        .boxed(),
        12 => proptest::collection::vec(
            prop_oneof![
                1 => Just(Value::Null),
                4 => prop_oneof![Just(""), Just("a"), Just("a\0"), Just("b")].prop_map(Value::text)
            ],
            0..4,
        )
        .prop_map(|v| Value::Array(v.into()))
        .boxed(),
        _ => proptest::collection::vec(
            prop_oneof![Just(0u8), Just(1), Just(255), any::<u8>()],
            0..6,
        )
        .prop_map(|b| Value::Bytes(b.into()))
        .boxed(),
    };
    prop_oneof![1 => Just(Value::Null), 8 => v].boxed()
}

/// Two keys with the same column types (1-3 columns).
fn key_pair() -> impl Strategy<Value = (Vec<Value>, Vec<Value>)> {
    proptest::collection::vec(0u8..13, 1..4).prop_flat_map(|kinds| {
        let a: Vec<_> = kinds.iter().map(|&k| column_value(k)).collect();
        let b: Vec<_> = kinds.iter().map(|&k| column_value(k)).collect();
        (a, b)
    })
}

fn same(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.cmp(y) == Ordering::Equal)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn bytes_order_as_values((a, b) in key_pair()) {
        let (ea, eb) = (key_bytes(&a), key_bytes(&b));
        prop_assert_eq!(ea.cmp(&eb), a.cmp(&b), "{:?} vs {:?}", a, b);
    }

    #[test]
    fn decodes_back((a, _) in key_pair()) {
        let d = decode_key(&key_bytes(&a)).unwrap();
        prop_assert!(same(&d, &a), "{:?} decoded as {:?}", a, d);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic(b in proptest::collection::vec(any::<u8>(), 0..40)) {
        let _ = decode_key(&b);
    }
}

proptest! {
    #[test]
    fn intervals_order_by_span(a in (-400i32..400, -400i32..400, any::<i32>()), b in (-400i32..400, -400i32..400, any::<i32>())) {
        let iv = |(m, d, u): (i32, i32, i32)| Value::Interval(walden_engine::types::Interval { months: m, days: d, micros: u as i64 });
        let (x, y) = (iv(a), iv(b));
        prop_assert_eq!(key_bytes(std::slice::from_ref(&x)).cmp(&key_bytes(std::slice::from_ref(&y))), x.cmp(&y));
        let back = decode_key(&key_bytes(std::slice::from_ref(&x))).unwrap();
        prop_assert_eq!(back[0].cmp(&x), Ordering::Equal);
    }
}

#[test]
fn decimals_that_compare_equal_encode_alike() {
    let a = Value::Decimal(Decimal::new(150, 2).into());
    let b = Value::Decimal(Decimal::new(15, 1).into());
    assert_eq!(key_bytes(&[a]), key_bytes(&[b]));
    let neg = key_bytes(&[Value::Decimal(Decimal::new(-12, 0).into())]);
    let neg_longer = key_bytes(&[Value::Decimal(Decimal::new(-123, 1).into())]);
    assert!(neg_longer < neg, "-12.3 sorts before -12");
}

#[test]
fn huge_exponents_and_specials_order_and_decode() {
    let n = |s: &str| Value::Decimal(s.parse::<Numeric>().unwrap());
    // Exponents past i16 take the long form and still sort.
    let big = Value::Decimal(Numeric::from_parts(1.into(), -40_000));
    let tiny = Value::Decimal(Numeric::from_parts(1.into(), 16_000));
    let order = [
        n("-inf"),
        neg(&big),
        n("-1e100"),
        n("-1"),
        n("0"),
        tiny.clone(),
        n("1"),
        n("1e300"),
        big.clone(),
        n("inf"),
        n("NaN"),
    ];
    for w in order.windows(2) {
        assert!(
            key_bytes(&w[..1]) < key_bytes(&w[1..]),
            "{:?} < {:?}",
            w[0],
            w[1]
        );
        assert!(w[0] < w[1]);
    }
    for v in &order {
        let back = decode_key(&key_bytes(std::slice::from_ref(v))).unwrap();
        assert_eq!(back[0].cmp(v), Ordering::Equal, "{v:?}");
    }
}

fn neg(v: &Value) -> Value {
    match v {
        Value::Decimal(d) => Value::Decimal(-d),
        other => other.clone(),
    }
}
