use super::*;
use crate::alter::ColumnSource;
use crate::schema::{
    CheckDef, ColumnDef, DbSettings, DefaultExpr, DelayedDurability, FkAction, ForeignKeyDef,
    RecoveryModel, TableDef,
};

#[test]
fn values_round_trip() {
    let vals = vec![
        Value::Null,
        Value::Bool(true),
        Value::Int(-5),
        Value::Int(i64::MAX),
        Value::Float(1.5),
        Value::Decimal("-12.3400".parse().unwrap()),
        Value::Decimal("-123456789012345678901234567890.12345".parse().unwrap()),
        Value::Decimal("1e-40".parse().unwrap()),
        Value::Decimal("NaN".parse().unwrap()),
        Value::Decimal("Infinity".parse().unwrap()),
        Value::Decimal("-Infinity".parse().unwrap()),
        Value::text("héllo"),
        Value::Timestamp(1_700_000_000_000_000),
        Value::Date(-3),
        Value::Uuid(0x1234_5678_9abc_def0_1234_5678_9abc_def0),
        Value::Bytes(Arc::from(&b"\x00\xff"[..])),
        Value::TimestampTz(-1_700_000_000_000_001),
        Value::Time(86_399_999_999),
        Value::Interval(crate::types::Interval::new(-14, 3, -5_000_001)),
        Value::Array(vec![Value::Int(1), Value::Null, Value::Int(-3)].into()),
        Value::Array(vec![].into()),
        Value::Array(vec![Value::text("a,b"), Value::Null].into()),
        Value::Reg(crate::types::RegKind::Class, 16_384, Arc::from("t")),
        Value::Reg(
            crate::types::RegKind::Namespace,
            u32::MAX,
            Arc::from("4294967295"),
        ),
    ];
    let mut out = Vec::new();
    put_values(&mut out, &vals);
    let back = Reader::new(&out).values().unwrap();
    assert_eq!(back.len(), vals.len());
    for (a, b) in vals.iter().zip(&back) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}

#[test]
fn redo_round_trip() {
    let def = TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", DataType::BigInt).identity(1, 1),
            ColumnDef::new("v", DataType::Varchar(Some(10)))
                .default(DefaultExpr::Value(Value::text("x"))),
            ColumnDef::new(
                "d",
                DataType::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
        ],
        &["id"],
    )
    .unwrap()
    .with_checks(vec![CheckDef {
        name: "t_d_check".into(),
        expr: "d > 0".into(),
    }])
    .unwrap();
    let fk = ForeignKeyDef {
        name: "t_v_fkey".into(),
        columns: vec![1],
        ref_table: 7,
        ref_columns: vec![0],
        on_update: FkAction::Cascade,
        on_delete: FkAction::SetDefault,
        match_full: true,
        deferrable: true,
        initially_deferred: true,
    };
    let mut def = def;
    def.foreign_keys.push(fk.clone());
    for r in [
        Redo::CreateTable(def),
        Redo::AddForeignKey { table: 3, fk },
        Redo::DropForeignKey {
            table: 3,
            name: "t_v_fkey".into(),
        },
        Redo::Txn {
            txid: 9,
            commit: true,
            ops: vec![
                Op::Put {
                    table: 1,
                    key: vec![Value::Int(1)].into(),
                    row: Arc::from(vec![Value::Int(1), Value::text("a")]),
                },
                Op::Delete {
                    table: 1,
                    key: vec![Value::Int(2)].into(),
                },
            ],
        },
        Redo::Settings(DbSettings {
            delayed_durability: DelayedDurability::Forced,
            recovery_model: RecoveryModel::Full,
            max_exposure_bytes: Some(0),
            max_exposure_ms: None,
        }),
        Redo::SeqReserve { id: 3, upto: -7 },
        Redo::IdentitySet { table: 4, next: -9 },
        Redo::AlterTable {
            table: 4,
            def: TableDef {
                pk_name: Some("k".into()),
                partition_key: Some("RANGE (a)".into()),
                partition_of: Some(crate::schema::PartitionOf {
                    parent: 3,
                    bound: "FOR VALUES FROM (1) TO (10)".into(),
                }),
                ..TableDef::new("u", vec![ColumnDef::new("a", DataType::Int)], &["a"]).unwrap()
            },
            rewrite: Some(vec![
                ColumnSource::Old(1),
                ColumnSource::Fill(Value::Int(7)),
                ColumnSource::Values(vec![Value::Null, Value::text("x")]),
            ]),
        },
    ] {
        let b = encode_redo(&r);
        assert_eq!(decode_redo(&b, &|_, _| None).unwrap(), r);
    }
}

/// A table definition logged before constraints were stored still
/// decodes (tag 10: no constraints section).
#[test]
fn old_create_table_records_decode() {
    let def = TableDef::new("t", vec![ColumnDef::new("id", DataType::Int)], &["id"]).unwrap();
    let mut b = vec![10];
    let mut body = Vec::new();
    put_table_def(&mut body, &def);
    // Drop the (empty) constraints count the current encoding appends.
    body.pop();
    b.extend_from_slice(&body);
    assert_eq!(
        decode_redo(&b, &|_, _| None).unwrap(),
        Redo::CreateTable(def)
    );
}

/// A SQL-standard identity column keeps its kind through the log and
/// images (tail part 7); a definition without one encodes as before, and
/// the part naming a column without an identity is refused.
#[test]
fn generated_identity_round_trips() {
    use crate::schema::IdentityGeneration;
    let plain = TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", DataType::Int).identity(5, 2),
            ColumnDef::new("v", DataType::Text),
        ],
        &["id"],
    )
    .unwrap();
    let mut generated = plain.clone();
    generated.columns[0].identity.as_mut().unwrap().generated = Some(IdentityGeneration::ByDefault);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    put_table_def(&mut a, &plain);
    put_table_def(&mut b, &generated);
    assert_eq!(b.len(), a.len() + 3, "one part: tag, column, kind");
    assert_eq!(get_table_def(&mut Reader::new(&a), true).unwrap(), plain);
    assert_eq!(
        get_table_def(&mut Reader::new(&b), true).unwrap(),
        generated
    );
    // The same part on column 1, which has no identity.
    let n = b.len();
    b[n - 2] = 1;
    assert!(get_table_def(&mut Reader::new(&b), true).is_err());
}

/// A column's collation other than the default keeps through the log and
/// images (tail part 17); a definition without one encodes as before.
#[test]
fn column_collation_round_trips() {
    use crate::schema::Collation;
    let plain = TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", DataType::Int),
            ColumnDef::new("v", DataType::Text),
            ColumnDef::new("w", DataType::Text),
        ],
        &["id"],
    )
    .unwrap();
    let mut collated = plain.clone();
    collated.columns[1].collation = Collation::C;
    collated.columns[2].collation = Collation::Posix;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    put_table_def(&mut a, &plain);
    put_table_def(&mut b, &collated);
    assert_eq!(b.len(), a.len() + 6, "two parts: tag, column, code");
    assert_eq!(get_table_def(&mut Reader::new(&a), true).unwrap(), plain);
    assert_eq!(get_table_def(&mut Reader::new(&b), true).unwrap(), collated);
    // An unknown collation code is refused, not read as the default.
    let n = b.len();
    b[n - 1] = 9;
    assert!(get_table_def(&mut Reader::new(&b), true).is_err());
}

/// `"char"` is the bare type tag 24 that catalogs written before the reg
/// types carry; the reg types have their own tag (25 and a kind byte).
#[test]
fn catalog_type_tags() {
    let mut out = Vec::new();
    put_type(&mut out, &DataType::PgChar);
    assert_eq!(out, [24]);
    assert_eq!(get_type(&mut Reader::new(&[24])).unwrap(), DataType::PgChar);
    use crate::types::RegKind;
    for (k, tag) in [
        (RegKind::Class, 0),
        (RegKind::Type, 1),
        (RegKind::Namespace, 2),
    ] {
        let mut out = Vec::new();
        put_type(&mut out, &DataType::Reg(k));
        assert_eq!(out, [25, tag]);
        assert_eq!(get_type(&mut Reader::new(&out)).unwrap(), DataType::Reg(k));
    }
    assert!(get_type(&mut Reader::new(&[25, 3])).is_err());
}

/// A sequence's owning column, ALTER SEQUENCE's record (with and without a
/// restart) and an expression default round-trip; a sequence without an
/// owner encodes as before (no flag, nothing after CYCLE).
#[test]
fn sequence_alterations_and_expression_defaults_round_trip() {
    let plain = crate::schema::SequenceDef {
        id: 5,
        name: "s".into(),
        start: 3,
        increment: -2,
        data_type: crate::schema::SeqType::Int,
        min: -100,
        max: 10,
        cycle: true,
        owned_by: None,
    };
    let owned = crate::schema::SequenceDef {
        owned_by: Some(crate::schema::SeqOwner {
            table: 9,
            column: 2,
        }),
        ..plain.clone()
    };
    let mut a = Vec::new();
    super::defs::put_sequence(&mut a, &plain);
    let mut b = Vec::new();
    super::defs::put_sequence(&mut b, &owned);
    assert_eq!(b.len(), a.len() + 2);
    let def = TableDef::new(
        "t",
        vec![ColumnDef::new("z", DataType::Int)
            .default(DefaultExpr::Expr("-1 * currval('s')".into()))],
        &[],
    )
    .unwrap();
    for r in [
        Redo::CreateSequence(plain.clone()),
        Redo::CreateSequence(owned.clone()),
        Redo::AlterSequence {
            def: owned,
            restart: Some(-7),
        },
        Redo::AlterSequence {
            def: plain,
            restart: None,
        },
        Redo::CreateTable(def),
    ] {
        let b = encode_redo(&r);
        assert_eq!(decode_redo(&b, &|_, _| None).unwrap(), r);
    }
}

/// A numeric a Decimal holds is written as older versions wrote it (tag
/// 5 and the Decimal's 16 bytes), so they read it and it reads back; the
/// others take tag 26.
#[test]
fn small_numerics_keep_the_old_form() {
    let d: rust_decimal::Decimal = "-12.3400".parse().unwrap();
    let mut old = vec![5u8];
    old.extend_from_slice(&d.serialize());
    let mut out = Vec::new();
    put_value(&mut out, &Value::Decimal(d.into()));
    assert_eq!(out, old);
    let back = Reader::new(&old).value().unwrap();
    assert_eq!(back.to_string(), "-12.3400");
    let mut big = Vec::new();
    put_value(&mut big, &Value::Decimal("1e40".parse().unwrap()));
    assert_eq!(big[0], 26);
}

/// A damaged big numeric whose scale is negative or huge is refused at once (the
/// fuzzer found one that asked for 10^1,000,000,000 while decoding).
#[test]
fn a_negative_stored_scale_is_refused() {
    let mut out = vec![26u8, 3];
    put_ivar(&mut out, -1_000_000_000);
    out.extend_from_slice(&[0, 1, 7]);
    assert!(Reader::new(&out).value().is_err());
    // Nor one of two trillion, whose text would not fit in memory.
    let mut out = vec![26u8, 3];
    put_ivar(&mut out, 2_000_000_000_000);
    out.extend_from_slice(&[0, 1, 7]);
    assert!(Reader::new(&out).value().is_err());
}

/// numeric typmods PostgreSQL allows: the old 3-byte form where it
/// holds them, tag 27 for a precision past 255 or a negative scale.
#[test]
fn numeric_typmods_round_trip() {
    for (p, s, tag) in [
        (10u16, 2i16, 7u8),
        (0, 0, 7),
        (1000, 1000, 27),
        (3, -3, 27),
        (300, 0, 27),
    ] {
        let t = DataType::Decimal {
            precision: p,
            scale: s,
        };
        let mut out = Vec::new();
        put_type(&mut out, &t);
        assert_eq!(out[0], tag);
        assert_eq!(get_type(&mut Reader::new(&out)).unwrap(), t);
    }
}

/// Arrays of other shapes (tag 255) round-trip, and damaged ones are
/// refused before anything is allocated for them: more than six
/// dimensions, an empty dimension, more elements than bytes left, a
/// shape `Value::Array` holds, an array inside one.
#[test]
fn md_arrays_round_trip_and_damage_is_refused() {
    use crate::types::array::{make, Dim};
    let two = make(
        vec![Dim { len: 2, lower: 1 }, Dim { len: 2, lower: 0 }],
        vec![Value::Int(1), Value::Null, Value::text("x"), Value::Int(-4)],
    );
    let from0 = make(
        vec![Dim { len: 2, lower: 0 }],
        vec![Value::Int(7), Value::Int(8)],
    );
    for v in [&two, &from0] {
        let mut out = Vec::new();
        put_value(&mut out, v);
        assert_eq!(out[0], 255);
        let back = Reader::new(&out).value().unwrap();
        assert_eq!(&back, v);
        assert_eq!(back.to_string(), v.to_string());
    }
    assert_eq!(two.to_string(), "[1:2][0:1]={{1,NULL},{x,-4}}");
    let damaged: &[&[u8]] = &[
        &[255, 7, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3, 1],
        &[255, 0],
        &[255, 2, 0, 2, 1, 2],
        // 2^31 - 1 elements claimed, three bytes given.
        &[255, 1, 0xff, 0xff, 0xff, 0xff, 0x07, 0, 3, 1, 3],
        // One dimension from 1: a Value::Array's shape.
        &[255, 1, 1, 2, 3, 1],
        // An array as an element.
        &[255, 1, 1, 0, 16, 0],
        &[255, 2, 1, 2, 1, 2, 255, 1, 1, 0, 3, 1],
    ];
    for d in damaged {
        assert!(Reader::new(d).value().is_err(), "{d:?}");
    }
    // The fuzz seed of a redo record holding such a row decodes.
    let seed = include_bytes!("../../../../fuzz/corpus/redo_record/seed-md-array");
    let r = Redo::Txn {
        txid: 3,
        commit: true,
        ops: vec![Op::Put {
            table: 1,
            key: vec![Value::Int(1)].into(),
            row: Arc::from(vec![Value::Int(1), two.clone(), from0.clone()]),
        }],
    };
    assert_eq!(encode_redo(&r), seed.to_vec());
    let back = decode_redo(seed, &|_, row| Some(row[..1].to_vec().into_boxed_slice())).unwrap();
    assert_eq!(encode_redo(&back), seed.to_vec());
}

#[test]
fn a_generated_column_round_trips_and_plain_tables_encode_as_before() {
    let plain = TableDef::new(
        "g",
        vec![
            ColumnDef::new("a", DataType::Int),
            ColumnDef::new("b", DataType::Int),
        ],
        &[],
    )
    .unwrap();
    let mut generated = plain.clone();
    generated.columns[1].generated = Some("a * 2".into());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    super::defs::put_table_def(&mut a, &plain);
    super::defs::put_table_def(&mut b, &generated);
    // One more part: its tag, the position and the text.
    assert_eq!(b.len(), a.len() + 1 + 1 + 1 + "a * 2".len());
    for def in [plain, generated] {
        let r = Redo::CreateTable(def);
        assert_eq!(decode_redo(&encode_redo(&r), &|_, _| None).unwrap(), r);
    }
}

#[test]
fn index_column_options_round_trip_and_plain_indexes_encode_as_before() {
    use crate::schema::{IndexDef, INDEX_DESC, INDEX_NULLS_FIRST};
    let mut def = TableDef::new(
        "ix",
        vec![
            ColumnDef::new("a", DataType::Int),
            ColumnDef::new("b", DataType::Int),
        ],
        &[],
    )
    .unwrap();
    let index = |options: Vec<u8>| IndexDef {
        id: 7,
        name: "ix_ab".into(),
        columns: vec![0, 1],
        unique: false,
        constraint: false,
        options,
    };
    def.indexes.push(index(Vec::new()));
    let plain = def.clone();
    def.indexes[0].options = vec![INDEX_DESC | INDEX_NULLS_FIRST, INDEX_NULLS_FIRST];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    super::defs::put_table_def(&mut a, &plain);
    super::defs::put_table_def(&mut b, &def);
    // One more part: its tag, the index's position, the count and a byte each.
    assert_eq!(b.len(), a.len() + 1 + 1 + 1 + 2);
    for d in [plain.clone(), def.clone()] {
        let r = Redo::CreateTable(d);
        assert_eq!(decode_redo(&encode_redo(&r), &|_, _| None).unwrap(), r);
    }
    // CREATE INDEX: the old record for a plain index, tag 27 with options.
    let plain_rec = encode_redo(&Redo::CreateIndex {
        table: 3,
        index: index(Vec::new()),
    });
    assert_eq!(plain_rec[0], 21);
    let rec = Redo::CreateIndex {
        table: 3,
        index: index(vec![INDEX_DESC, 0]),
    };
    let bytes = encode_redo(&rec);
    assert_eq!(bytes[0], 27);
    assert_eq!(decode_redo(&bytes, &|_, _| None).unwrap(), rec);
    // An option bit this reader does not know is refused, not dropped.
    let mut bad = bytes.clone();
    *bad.last_mut().unwrap() = 0x80;
    assert!(decode_redo(&bad, &|_, _| None).is_err());
}
