//! Overloaded PostgreSQL functions: several definitions of one name with
//! different argument types. Each is a row of `walden_functions`; the
//! row's `name` is only a unique handle (a key): the first definition of
//! a name is stored under the name, others under `name(types)`, and a
//! definition's own text says its arguments. A call is resolved when its
//! statement is compiled, from its arguments' texts, by PostgreSQL's rules
//! for the common cases (ch. 10.3 of its manual): the candidates the
//! arguments can be cast to implicitly, then most exact matches, then
//! most preferred types where a cast is needed, then string types for
//! untyped literals. An argument whose type only planning would know (a
//! column, an expression) matches any candidate; when the choice then
//! depends on it, the call is refused (0A000) rather than guessed.

use super::funcs::FUNC_TABLE;
use super::*;
use crate::front::plpgsql::{lex, parse_pg_function, PgFunc, K};

/// A stored definition: its key (the row's `name`) and its text.
pub(super) struct StoredDef {
    pub key: String,
    pub text: String,
}

/// The function name a key is of (`f(integer)` is `f`'s).
pub fn key_name(key: &str) -> &str {
    key.split('(').next().unwrap_or(key)
}

/// What is known of an argument's type before planning.
enum ArgTy {
    Known(DataType),
    /// An untyped literal (`'x'`, NULL): PostgreSQL's `unknown`.
    Unknown,
    /// An expression only planning would type.
    Opaque,
}

fn type_text(t: &DataType) -> String {
    crate::types::regtype_name(crate::types::type_oid_and_mod(t).0)
}

impl<'h, H: Host> Runner<'h, H> {
    /// Every stored definition of `name`, by key.
    pub(super) fn func_definitions(&mut self, name: &str) -> Result<Vec<StoredDef>> {
        let q = format!(
            "SELECT name, definition FROM public.{FUNC_TABLE} WHERE name = $1 OR name LIKE $2 ORDER BY name"
        );
        let o = match self.fixed(&q, &[Value::text(name), Value::text(format!("{name}(%"))]) {
            Ok(o) => o,
            Err(e) if e.kind == ErrorKind::UndefinedTable => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(o.rows
            .into_iter()
            .filter_map(|r| {
                let mut r = r.into_iter();
                let key = r.next()?.to_string();
                let text = r.next()?.to_string();
                (key_name(&key) == name).then_some(StoredDef { key, text })
            })
            .collect())
    }

    /// The PostgreSQL functions and procedures of `name`, with their keys.
    pub(super) fn pg_overloads(&mut self, name: &str) -> Result<Vec<(String, PgFunc)>> {
        Ok(self
            .func_definitions(name)?
            .into_iter()
            .filter_map(|d| parse_pg_function(&d.text).map(|f| (d.key, f)))
            .collect())
    }

    /// The type of an argument as its text shows it.
    fn arg_type(&mut self, a: &str) -> ArgTy {
        let Ok(t) = lex(a) else {
            return ArgTy::Opaque;
        };
        let known = |ty: &str| match crate::types::names::parse_type_name(ty) {
            Ok(t) => ArgTy::Known(t),
            Err(_) => ArgTy::Opaque,
        };
        // `x::type` at the top level: its last cast.
        let mut depth = 0;
        let mut cast_at = None;
        for (k, x) in t.iter().enumerate() {
            if x.op("(") || x.op("[") {
                depth += 1;
            } else if x.op(")") || x.op("]") {
                depth -= 1;
            } else if depth == 0 && x.op("::") {
                cast_at = Some(k);
            }
        }
        if let Some(k) = cast_at {
            return match t.get(k + 1) {
                Some(x) => known(&a[x.s..]),
                None => ArgTy::Opaque,
            };
        }
        // CAST(x AS type)
        if t.len() > 4 && t[0].is("cast") && t[1].op("(") && t[t.len() - 1].op(")") {
            let mut depth = 0;
            for k in 1..t.len() - 1 {
                if t[k].op("(") {
                    depth += 1;
                } else if t[k].op(")") {
                    depth -= 1;
                } else if depth == 1 && t[k].is("as") {
                    return known(&a[t[k + 1].s..t[t.len() - 1].s]);
                }
            }
        }
        let num = |w: &str| {
            if w.contains(['.', 'e', 'E']) {
                DataType::Decimal {
                    precision: 0,
                    scale: 0,
                }
            } else {
                match w.parse::<i64>() {
                    Ok(n) if i32::try_from(n).is_ok() => DataType::Int,
                    Ok(_) => DataType::BigInt,
                    Err(_) => DataType::Decimal {
                        precision: 0,
                        scale: 0,
                    },
                }
            }
        };
        match t.as_slice() {
            [x] if x.k == K::Num => ArgTy::Known(num(&x.w)),
            [m, x] if m.op("-") && x.k == K::Num => ArgTy::Known(num(&format!("-{}", x.w))),
            [x] if x.k == K::Str && a.trim_start().starts_with('\'') => ArgTy::Unknown,
            [x] if x.is("null") => ArgTy::Unknown,
            [x] if x.is("true") || x.is("false") => ArgTy::Known(DataType::Bool),
            [at, x] if at.op("@") && x.k == K::Word => {
                let name = format!("@{}", x.w);
                match self.frames.last().and_then(|f| f.get(&name)) {
                    Some(v) => ArgTy::Known(v.ty.clone()),
                    None => ArgTy::Opaque,
                }
            }
            _ => ArgTy::Opaque,
        }
    }

    /// The definition a call `name(args)` means among `cands` (all of the
    /// name's PostgreSQL functions), with its key.
    pub(super) fn choose(
        &mut self,
        name: &str,
        cands: Vec<(String, PgFunc)>,
        args: &[Option<String>],
    ) -> Result<(String, PgFunc)> {
        if cands.len() == 1 {
            return Ok(cands.into_iter().next().expect("one"));
        }
        let positional: Vec<&str> = args
            .iter()
            .map_while(|a| a.as_deref())
            .take_while(|a| !lex(a).is_ok_and(|t| t.len() > 2 && (t[1].op("=>") || t[1].op(":="))))
            .collect();
        let tys: Vec<ArgTy> = positional.iter().map(|a| self.arg_type(a)).collect();
        let shown = || {
            tys.iter()
                .map(|t| match t {
                    ArgTy::Known(t) => type_text(t),
                    _ => "unknown".to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        // The candidates the call binds to and its arguments cast to.
        let mut c: Vec<(String, PgFunc, Vec<DataType>)> = Vec::new();
        for (key, f) in cands {
            if super::pg_funcs::bind_call(&f, args).is_err() {
                continue;
            }
            let mut pts = Vec::new();
            for p in f.params.iter().take(tys.len()) {
                pts.push(crate::types::names::parse_type_name(&p.ty)?);
            }
            // A VARIADIC parameter takes elements (unless the call passes
            // the array with VARIADIC, which `arg_type` cannot see).
            if f.variadic && pts.len() == f.params.len() {
                if let Some(DataType::Array(e)) = pts.pop() {
                    let vararr = positional.last().is_some_and(|a| {
                        lex(a).is_ok_and(|t| t.first().is_some_and(|x| x.is("variadic")))
                    });
                    if vararr {
                        pts.push(DataType::Array(e));
                    } else {
                        while pts.len() < tys.len() {
                            pts.push((*e).clone());
                        }
                    }
                }
            }
            let fits = tys.iter().zip(&pts).all(|(a, p)| match a {
                ArgTy::Known(a) => crate::query::implicit(a, p),
                _ => true,
            });
            if fits {
                c.push((key, f, pts));
            }
        }
        if c.is_empty() {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!("function {name}({}) does not exist", shown()),
            )
            .with_fields(crate::error::ErrorFields {
                hint: Some(
                    "No function matches the given name and argument types. You might need to add explicit type casts."
                        .into(),
                ),
                ..Default::default()
            }));
        }
        // Most exact matches, then most preferred types where a cast is
        // needed.
        let score = |c: &[(String, PgFunc, Vec<DataType>)],
                     f: &dyn Fn(&DataType, &DataType) -> bool| {
            c.iter()
                .map(|(_, _, pts)| {
                    tys.iter()
                        .zip(pts)
                        .filter(|(a, p)| matches!(a, ArgTy::Known(a) if f(a, p)))
                        .count()
                })
                .collect::<Vec<_>>()
        };
        for rule in [
            &(|a: &DataType, p: &DataType| crate::query::same_type(a, p))
                as &dyn Fn(&DataType, &DataType) -> bool,
            &|a: &DataType, p: &DataType| {
                !crate::query::same_type(a, p) && crate::query::preferred(p)
            },
        ] {
            if c.len() == 1 {
                break;
            }
            let s = score(&c, rule);
            let best = s.iter().copied().max().unwrap_or(0);
            let mut k = 0;
            c.retain(|_| {
                k += 1;
                s[k - 1] == best
            });
        }
        // Untyped literals: a string type where a candidate has one, else
        // one category's preferred type.
        for (k, a) in tys.iter().enumerate() {
            if c.len() == 1 || !matches!(a, ArgTy::Unknown) {
                continue;
            }
            if c.iter().any(|x| crate::query::string_category(&x.2[k])) {
                c.retain(|x| crate::query::string_category(&x.2[k]));
            } else if c
                .iter()
                .all(|x| crate::query::same_category(&x.2[k], &c[0].2[k]))
                && c.iter().any(|x| crate::query::preferred(&x.2[k]))
            {
                c.retain(|x| crate::query::preferred(&x.2[k]));
            }
        }
        if c.len() == 1 {
            let (key, f, _) = c.pop().expect("one");
            return Ok((key, f));
        }
        if tys.iter().any(|a| matches!(a, ArgTy::Opaque)) {
            return Err(SqlError::unsupported(format!(
                "choosing among the overloads of {name}() by the type of an argument that is not a literal or a cast (write the argument with a cast, e.g. x::integer)"
            )));
        }
        Err(SqlError::new(
            ErrorKind::AmbiguousFunction,
            format!("function {name}({}) is not unique", shown()),
        )
        .with_fields(crate::error::ErrorFields {
            hint: Some(
                "Could not choose a best candidate function. You might need to add explicit type casts."
                    .into(),
            ),
            ..Default::default()
        }))
    }
}

/// Whether two functions take the same argument types (their IN and INOUT
/// parameters: what tells overloads apart).
pub(super) fn same_signature(a: &PgFunc, b: &PgFunc) -> bool {
    a.params.len() == b.params.len()
        && a.params.iter().zip(&b.params).all(|(x, y)| {
            match (
                crate::types::names::parse_type_name(&x.ty),
                crate::types::names::parse_type_name(&y.ty),
            ) {
                (Ok(p), Ok(q)) => p == q,
                _ => false,
            }
        })
}

/// Whether a function takes exactly these argument types (as DROP
/// FUNCTION names them; OUT parameters are left out by the caller).
pub(super) fn takes(f: &PgFunc, types: &[String]) -> bool {
    f.params.len() == types.len()
        && f.params.iter().zip(types).all(|(p, t)| {
            match (
                crate::types::names::parse_type_name(&p.ty),
                crate::types::names::parse_type_name(t),
            ) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            }
        })
}
