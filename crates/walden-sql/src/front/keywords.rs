//! `pg_get_keywords()`: PostgreSQL 15's SQL key words as that server lists
//! them (word, category, whether it may be a bare column label), so that
//! clients asking which words to quote (pgjdbc's `getSQLKeywords`, psql's
//! completion) get PostgreSQL's answer: Walden reads the same grammar's
//! words as identifiers or key words.

use walden_engine::{DataType, Value};

/// `word/CB`: the word, its category code (U unreserved, C unreserved but
/// not a function or type name, T reserved but allowed as a function or
/// type name, R reserved), then `b` when it may be a bare column label,
/// `a` when it needs AS. In PostgreSQL 15's order (by word).
const KEYWORDS: &[&str] = &[
    "abort/Ub absolute/Ub access/Ub action/Ub add/Ub admin/Ub after/Ub aggregate/Ub all/Rb ",
    "also/Ub alter/Ub always/Ub analyse/Rb analyze/Rb and/Rb any/Rb array/Ra as/Ra asc/Rb ",
    "asensitive/Ub assertion/Ub assignment/Ub asymmetric/Rb at/Ub atomic/Ub attach/Ub ",
    "attribute/Ub authorization/Tb backward/Ub before/Ub begin/Ub between/Cb bigint/Cb ",
    "binary/Tb bit/Cb boolean/Cb both/Rb breadth/Ub by/Ub cache/Ub call/Ub called/Ub ",
    "cascade/Ub cascaded/Ub case/Rb cast/Rb catalog/Ub chain/Ub char/Ca character/Ca ",
    "characteristics/Ub check/Rb checkpoint/Ub class/Ub close/Ub cluster/Ub coalesce/Cb ",
    "collate/Rb collation/Tb column/Rb columns/Ub comment/Ub comments/Ub commit/Ub ",
    "committed/Ub compression/Ub concurrently/Tb configuration/Ub conflict/Ub connection/Ub ",
    "constraint/Rb constraints/Ub content/Ub continue/Ub conversion/Ub copy/Ub cost/Ub ",
    "create/Ra cross/Tb csv/Ub cube/Ub current/Ub current_catalog/Rb current_date/Rb ",
    "current_role/Rb current_schema/Tb current_time/Rb current_timestamp/Rb current_user/Rb ",
    "cursor/Ub cycle/Ub data/Ub database/Ub day/Ua deallocate/Ub dec/Cb decimal/Cb declare/Ub ",
    "default/Rb defaults/Ub deferrable/Rb deferred/Ub definer/Ub delete/Ub delimiter/Ub ",
    "delimiters/Ub depends/Ub depth/Ub desc/Rb detach/Ub dictionary/Ub disable/Ub discard/Ub ",
    "distinct/Rb do/Rb document/Ub domain/Ub double/Ub drop/Ub each/Ub else/Rb enable/Ub ",
    "encoding/Ub encrypted/Ub end/Rb enum/Ub escape/Ub event/Ub except/Ra exclude/Ub ",
    "excluding/Ub exclusive/Ub execute/Ub exists/Cb explain/Ub expression/Ub extension/Ub ",
    "external/Ub extract/Cb false/Rb family/Ub fetch/Ra filter/Ua finalize/Ub first/Ub ",
    "float/Cb following/Ub for/Ra force/Ub foreign/Rb forward/Ub freeze/Tb from/Ra full/Tb ",
    "function/Ub functions/Ub generated/Ub global/Ub grant/Ra granted/Ub greatest/Cb group/Ra ",
    "grouping/Cb groups/Ub handler/Ub having/Ra header/Ub hold/Ub hour/Ua identity/Ub if/Ub ",
    "ilike/Tb immediate/Ub immutable/Ub implicit/Ub import/Ub in/Rb include/Ub including/Ub ",
    "increment/Ub index/Ub indexes/Ub inherit/Ub inherits/Ub initially/Rb inline/Ub inner/Tb ",
    "inout/Cb input/Ub insensitive/Ub insert/Ub instead/Ub int/Cb integer/Cb intersect/Ra ",
    "interval/Cb into/Ra invoker/Ub is/Tb isnull/Ta isolation/Ub join/Tb key/Ub label/Ub ",
    "language/Ub large/Ub last/Ub lateral/Rb leading/Rb leakproof/Ub least/Cb left/Tb ",
    "level/Ub like/Tb limit/Ra listen/Ub load/Ub local/Ub localtime/Rb localtimestamp/Rb ",
    "location/Ub lock/Ub locked/Ub logged/Ub mapping/Ub match/Ub matched/Ub materialized/Ub ",
    "maxvalue/Ub merge/Ub method/Ub minute/Ua minvalue/Ub mode/Ub month/Ua move/Ub name/Ub ",
    "names/Ub national/Cb natural/Tb nchar/Cb new/Ub next/Ub nfc/Ub nfd/Ub nfkc/Ub nfkd/Ub ",
    "no/Ub none/Cb normalize/Cb normalized/Ub not/Rb nothing/Ub notify/Ub notnull/Ta ",
    "nowait/Ub null/Rb nullif/Cb nulls/Ub numeric/Cb object/Ub of/Ub off/Ub offset/Ra oids/Ub ",
    "old/Ub on/Ra only/Rb operator/Ub option/Ub options/Ub or/Rb order/Ra ordinality/Ub ",
    "others/Ub out/Cb outer/Tb over/Ua overlaps/Ta overlay/Cb overriding/Ub owned/Ub owner/Ub ",
    "parallel/Ub parameter/Ub parser/Ub partial/Ub partition/Ub passing/Ub password/Ub ",
    "placing/Rb plans/Ub policy/Ub position/Cb preceding/Ub precision/Ca prepare/Ub ",
    "prepared/Ub preserve/Ub primary/Rb prior/Ub privileges/Ub procedural/Ub procedure/Ub ",
    "procedures/Ub program/Ub publication/Ub quote/Ub range/Ub read/Ub real/Cb reassign/Ub ",
    "recheck/Ub recursive/Ub ref/Ub references/Rb referencing/Ub refresh/Ub reindex/Ub ",
    "relative/Ub release/Ub rename/Ub repeatable/Ub replace/Ub replica/Ub reset/Ub restart/Ub ",
    "restrict/Ub return/Ub returning/Ra returns/Ub revoke/Ub right/Tb role/Ub rollback/Ub ",
    "rollup/Ub routine/Ub routines/Ub row/Cb rows/Ub rule/Ub savepoint/Ub schema/Ub ",
    "schemas/Ub scroll/Ub search/Ub second/Ua security/Ub select/Rb sequence/Ub sequences/Ub ",
    "serializable/Ub server/Ub session/Ub session_user/Rb set/Ub setof/Cb sets/Ub share/Ub ",
    "show/Ub similar/Tb simple/Ub skip/Ub smallint/Cb snapshot/Ub some/Rb sql/Ub stable/Ub ",
    "standalone/Ub start/Ub statement/Ub statistics/Ub stdin/Ub stdout/Ub storage/Ub ",
    "stored/Ub strict/Ub strip/Ub subscription/Ub substring/Cb support/Ub symmetric/Rb ",
    "sysid/Ub system/Ub table/Rb tables/Ub tablesample/Tb tablespace/Ub temp/Ub template/Ub ",
    "temporary/Ub text/Ub then/Rb ties/Ub time/Cb timestamp/Cb to/Ra trailing/Rb ",
    "transaction/Ub transform/Ub treat/Cb trigger/Ub trim/Cb true/Rb truncate/Ub trusted/Ub ",
    "type/Ub types/Ub uescape/Ub unbounded/Ub uncommitted/Ub unencrypted/Ub union/Ra ",
    "unique/Rb unknown/Ub unlisten/Ub unlogged/Ub until/Ub update/Ub user/Rb using/Rb ",
    "vacuum/Ub valid/Ub validate/Ub validator/Ub value/Ub values/Cb varchar/Cb variadic/Rb ",
    "varying/Ua verbose/Tb version/Ub view/Ub views/Ub volatile/Ub when/Rb where/Ra ",
    "whitespace/Ub window/Ra with/Ra within/Ua without/Ua work/Ub wrapper/Ub write/Ub xml/Ub ",
    "xmlattributes/Cb xmlconcat/Cb xmlelement/Cb xmlexists/Cb xmlforest/Cb xmlnamespaces/Cb ",
    "xmlparse/Cb xmlpi/Cb xmlroot/Cb xmlserialize/Cb xmltable/Cb year/Ua yes/Ub zone/Ub",
];

/// A key word's category code (`U`, `C`, `T` or `R`, see [`KEYWORDS`]);
/// `None` for a word that is no key word.
pub fn category(word: &str) -> Option<char> {
    let word = word.to_ascii_lowercase();
    KEYWORDS.iter().flat_map(|l| l.split(' ')).find_map(|e| {
        let (w, code) = e.split_once('/')?;
        (w == word).then(|| code.chars().next()).flatten()
    })
}

/// The output columns, as PostgreSQL declares them.
pub fn columns() -> Vec<(String, DataType)> {
    [
        ("word", DataType::Text),
        // "char", typed as the other catalogs' "char" columns are.
        ("catcode", DataType::PgChar),
        ("barelabel", DataType::Bool),
        ("catdesc", DataType::Text),
        ("baredesc", DataType::Text),
    ]
    .into_iter()
    .map(|(n, t)| (n.to_string(), t))
    .collect()
}

/// One row per key word.
pub fn rows() -> Vec<Vec<Value>> {
    KEYWORDS
        .concat()
        .split(' ')
        .filter_map(|e| {
            let (word, code) = e.split_once('/')?;
            let mut c = code.chars();
            let (cat, bare) = (c.next()?, c.next()? == 'b');
            let catdesc = match cat {
                'U' => "unreserved",
                'C' => "unreserved (cannot be function or type name)",
                'T' => "reserved (can be function or type name)",
                _ => "reserved",
            };
            Some(vec![
                Value::text(word),
                Value::text(cat.to_string()),
                Value::Bool(bare),
                Value::text(catdesc),
                Value::text(if bare {
                    "can be bare label"
                } else {
                    "requires AS"
                }),
            ])
        })
        .collect()
}
