//! The numeric type against answers checked on PostgreSQL 15.

use super::*;

fn n(s: &str) -> Numeric {
    parse_numeric(s).unwrap().unwrap()
}

#[test]
fn reads_every_digit_and_the_specials() {
    for (s, want) in [
        ("9.4999999", "9.4999999"),
        ("1.000000000000000000001", "1.000000000000000000001"),
        (" -0.50 ", "-0.50"),
        ("+3", "3"),
        (".5", "0.5"),
        ("5.", "5"),
        ("1.5e3", "1500"),
        ("12E-2", "0.12"),
        ("-0", "0"),
        (
            "123456789012345678901234567890.5",
            "123456789012345678901234567890.5",
        ),
        (
            "1.0000000000000000000000000000001",
            "1.0000000000000000000000000000001",
        ),
        ("1e40", "10000000000000000000000000000000000000000"),
        ("1e-30", "0.000000000000000000000000000001"),
        ("NaN", "NaN"),
        ("nan", "NaN"),
        ("Infinity", "Infinity"),
        ("+inf", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("-inf", "-Infinity"),
    ] {
        assert_eq!(n(s).to_string(), want, "{s}");
    }
    for s in ["", "abc", "1.2.3", "1e", "e5", "1_000", "-nan", "0x10", "."] {
        assert!(matches!(parse_numeric(s), Ok(None)), "{s}");
    }
    // Exponents past 1000 are taken while the value fits (PostgreSQL 15).
    assert_eq!(n("1e1001").to_string().len(), 1002);
    assert_eq!(n("1e-16383").scale(), 16383);
    assert!(parse_numeric("5e-16384").is_err());
    assert!(parse_numeric("1e131072").is_err());
}

#[test]
fn small_whenever_it_fits() {
    assert!(matches!(n("1.5"), Numeric::Small(_)));
    assert!(matches!(n("1e40"), Numeric::Big(_)));
    let sum = n("1e40").add(&n("-1e40")).unwrap();
    assert!(matches!(sum, Numeric::Small(_)), "{sum:?}");
    assert_eq!(sum.to_string(), "0");
}

#[test]
fn orders_nan_above_infinity() {
    let mut v: Vec<Numeric> = ["NaN", "1e40", "-inf", "inf", "0", "-1e40", "1.5", "NaN"]
        .iter()
        .map(|s| n(s))
        .collect();
    v.sort();
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        s,
        [
            "-Infinity",
            "-10000000000000000000000000000000000000000",
            "0",
            "1.5",
            "10000000000000000000000000000000000000000",
            "Infinity",
            "NaN",
            "NaN"
        ]
    );
    assert_eq!(n("NaN"), n("nan"));
    assert_eq!(n("1.50"), n("1.5"));
}

/// An operator of numeric.
type BinOp = fn(&Numeric, &Numeric) -> Result<Numeric, NumericError>;

#[test]
fn arithmetic_as_postgres() {
    let cases: [(&str, BinOp, &str, &str); 14] = [
        ("1", Numeric::div, "3", "0.33333333333333333333"),
        ("10", Numeric::div, "4", "2.5000000000000000"),
        (
            "1e30",
            Numeric::mul,
            "1e30",
            "1000000000000000000000000000000000000000000000000000000000000",
        ),
        ("inf", Numeric::add, "1", "Infinity"),
        ("inf", Numeric::sub, "inf", "NaN"),
        ("0", Numeric::mul, "inf", "NaN"),
        ("1", Numeric::div, "inf", "0"),
        ("NaN", Numeric::div, "0", "NaN"),
        ("7.5", Numeric::rem, "2", "1.5"),
        ("-7", Numeric::rem, "2", "-1"),
        ("inf", Numeric::rem, "2", "NaN"),
        ("3", Numeric::rem, "inf", "3"),
        (
            "0.000000000000001",
            Numeric::mul,
            "0.000000000000001",
            "0.000000000000000000000000000001",
        ),
        (
            "99999999999999999999999999999",
            Numeric::add,
            "1",
            "100000000000000000000000000000",
        ),
    ];
    for (a, f, b, want) in cases {
        assert_eq!(f(&n(a), &n(b)).unwrap().to_string(), want, "{a} {b}");
    }
    assert_eq!(n("1").div(&n("0")), Err(NumericError::DivisionByZero));
    assert_eq!(n("inf").div(&n("0")), Err(NumericError::DivisionByZero));
    assert_eq!(n("1").rem(&n("0")), Err(NumericError::DivisionByZero));
}

#[test]
fn roots_and_rounding_as_postgres() {
    for (x, want) in [
        ("2", "1.414213562373095"),
        ("200", "14.142135623730950"),
        ("0.0002", "0.01414213562373095"),
        ("NaN", "NaN"),
        ("inf", "Infinity"),
    ] {
        assert_eq!(n(x).sqrt().unwrap().to_string(), want, "{x}");
    }
    assert_eq!(n("-1").sqrt(), Err(NumericError::NegativeSqrt));
    assert_eq!(n("-inf").sqrt(), Err(NumericError::NegativeSqrt));
    assert_eq!(n("2.5").round_at(0).to_string(), "3");
    assert_eq!(n("-2.5").round_at(0).to_string(), "-3");
    assert_eq!(n("1234.5678").round_at(-2).to_string(), "1200");
    assert_eq!(n("1234.5678").trunc_at(2).to_string(), "1234.56");
    assert_eq!(n("1.5").round_at(3).to_string(), "1.500");
    assert_eq!(n("-1.5").ceil().to_string(), "-1");
    assert_eq!(n("-1.5").floor().to_string(), "-2");
    assert_eq!(n("12.345").fit(4, 2).unwrap().to_string(), "12.35");
    assert!(n("123.45").fit(4, 2).is_none());
    assert_eq!(n("0.00123").fit(3, 5).unwrap().to_string(), "0.00123");
    assert!(n("0.0123").fit(3, 5).is_none());
    assert_eq!(n("123456").fit(3, -3).unwrap().to_string(), "123000");
    assert!(n("999500").fit(3, -3).is_none());
    assert!(n("inf").fit(10, 2).is_none());
}

#[test]
fn to_integers_as_postgres() {
    assert_eq!(
        n("2.5").to_integer(i32::MIN as i64, i32::MAX as i64, "integer"),
        Ok(3)
    );
    assert_eq!(n("-2.5").to_integer(i64::MIN, i64::MAX, "bigint"), Ok(-3));
    assert_eq!(
        n("NaN").to_integer(i64::MIN, i64::MAX, "bigint"),
        Err(NumericError::NaNTo("bigint"))
    );
    assert_eq!(
        n("1e20").to_integer(i64::MIN, i64::MAX, "bigint"),
        Err(NumericError::IntegerRange("bigint"))
    );
}

#[test]
fn floats_convert_at_postgres_digits() {
    for (f, digits, want) in [
        (0.1 + 0.2, 15, "0.3"),
        (0.1, 15, "0.1"),
        (
            1.234_567_890_123_456_8e-10,
            15,
            "0.000000000123456789012346",
        ),
        (1.5e20, 15, "150000000000000000000"),
        (-3.0, 15, "-3"),
        (123456.7890625, 6, "123457"),
        (-0.0, 15, "0"),
        (1e30, 15, "1000000000000000000000000000000"),
        (f64::NAN, 15, "NaN"),
        (f64::NEG_INFINITY, 15, "-Infinity"),
    ] {
        assert_eq!(
            float_to_numeric(f, digits).unwrap().to_string(),
            want,
            "{f}"
        );
    }
}

proptest::proptest! {
    /// Small-path arithmetic agrees with the big path (bigdecimal's own
    /// arithmetic as the reference).
    #[test]
    fn small_and_big_paths_agree(a in -1_000_000_000_000i64..1_000_000_000_000, sa in 0u32..12,
                                 b in -1_000_000_000_000i64..1_000_000_000_000, sb in 0u32..12) {
        let x = Numeric::small(rust_decimal::Decimal::new(a, sa));
        let y = Numeric::small(rust_decimal::Decimal::new(b, sb));
        let (bx, by) = (x.to_big().unwrap(), y.to_big().unwrap());
        let sum = x.add(&y).unwrap();
        proptest::prop_assert_eq!(sum.to_big().unwrap(), &bx + &by);
        proptest::prop_assert_eq!(sum.scale(), (sa.max(sb)) as i64);
        let prod = x.mul(&y).unwrap();
        proptest::prop_assert_eq!(prod.to_big().unwrap(), &bx * &by);
        proptest::prop_assert_eq!(prod.scale(), (sa + sb) as i64);
        if b != 0 {
            let r = x.rem(&y).unwrap();
            proptest::prop_assert_eq!(r.to_big().unwrap(), &bx % &by);
            let q = x.div(&y).unwrap();
            // The quotient is within half a unit of its last place.
            let err = (q.to_big().unwrap() * &by - &bx).abs();
            let unit = bigdecimal::BigDecimal::new(1.into(), q.scale()) * by.abs();
            proptest::prop_assert!(err.double() <= unit);
        }
        proptest::prop_assert_eq!(x.cmp(&y), bx.cmp(&by));
    }
}
