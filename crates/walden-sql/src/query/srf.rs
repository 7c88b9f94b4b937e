//! Set-returning functions: the rows each gives for its argument values,
//! shared by FROM (`SELECT * FROM generate_series(1, 3)`) and the select
//! list, where PostgreSQL's ProjectSet runs them: every SRF of a list
//! advances in lockstep, the shorter ones padded with NULLs, and an input
//! row for which all give no rows gives no output rows.

use super::*;

/// A set-returning function Walden runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SrfFunc {
    /// generate_series over integers, numerics and timestamps.
    Series,
    /// unnest(array), one argument (several only in FROM).
    Unnest,
    /// generate_subscripts(array, dim [, reverse]).
    Subscripts,
    /// The same over an int2vector or oidvector, numbered from 0.
    SubscriptsFromZero,
    /// information_schema._pg_expandarray(array): (x, n).
    ExpandArray,
    /// regexp_split_to_table(s, pattern [, flags]).
    RegexpSplit,
    /// regexp_matches(s, pattern [, flags]): a text[] per match.
    RegexpMatches,
    Json(crate::functions::json::JsonSrf),
    /// pg_get_keywords(): PostgreSQL 15's key words.
    Keywords,
    /// pg_listening_channels(): the session's LISTEN channels.
    ListeningChannels,
    /// T-SQL's STRING_SPLIT(s, separator [, enable_ordinal]): a `value`
    /// column, and an `ordinal` one when the third argument is 1.
    StringSplit(bool),
    /// A stored function that gives rows:
    /// `walden_routine_set('name', 'columns', args...)`, run by the
    /// procedural runtime (`functions::routines`).
    Routine,
}

/// The name this SRF of user function calls shows (its own name for a
/// stored function's call), from the compiled arguments.
pub fn routine_name(args: &[Expr]) -> Option<String> {
    match args.first() {
        Some(Expr::Lit(Value::Text(n))) => Some(n.split('(').next().unwrap_or(n).to_string()),
        _ => None,
    }
}

/// A stored function's result columns (unnamed: `label`).
pub fn routine_cols(args: &[Expr], label: &str) -> Result<Vec<(String, DataType)>> {
    let Some(Expr::Lit(Value::Text(spec))) = args.get(1) else {
        return Err(SqlError::internal("walden_routine_set without its columns"));
    };
    Ok(crate::functions::routine_columns(spec)?
        .into_iter()
        .map(|(n, t)| (n.unwrap_or_else(|| label.to_string()), t))
        .collect())
}

/// The SRF a call names, if any.
pub fn lookup(name: &str) -> Option<SrfFunc> {
    Some(match name {
        "generate_series" => SrfFunc::Series,
        "unnest" => SrfFunc::Unnest,
        "generate_subscripts" => SrfFunc::Subscripts,
        "_pg_expandarray" => SrfFunc::ExpandArray,
        "regexp_split_to_table" => SrfFunc::RegexpSplit,
        "regexp_matches" => SrfFunc::RegexpMatches,
        "pg_get_keywords" => SrfFunc::Keywords,
        "pg_listening_channels" => SrfFunc::ListeningChannels,
        "string_split" => SrfFunc::StringSplit(false),
        "walden_routine_set" => SrfFunc::Routine,
        other => SrfFunc::Json(crate::functions::json::srf(other)?),
    })
}

/// The type generate_series yields for arguments of these types, as
/// PostgreSQL resolves its overloads (int4, int8, numeric, timestamp,
/// timestamptz; a date is promoted to timestamptz).
pub fn series_type(args: &[Option<DataType>]) -> DataType {
    let has = |f: &dyn Fn(&DataType) -> bool| args.iter().flatten().any(f);
    if has(&|t| matches!(t, DataType::Timestamp)) {
        DataType::Timestamp
    } else if has(&|t| matches!(t, DataType::TimestampTz | DataType::Date)) {
        DataType::TimestampTz
    } else if has(&|t| {
        matches!(
            t,
            DataType::Decimal { .. } | DataType::Double | DataType::Real
        )
    }) {
        DataType::Decimal {
            precision: 0,
            scale: 0,
        }
    } else if args
        .iter()
        .all(|t| matches!(t, Some(DataType::Int | DataType::SmallInt)))
    {
        DataType::Int
    } else {
        DataType::BigInt
    }
}

/// The variant of `func` for arguments of these types.
pub fn for_types(func: SrfFunc, args: &[Option<DataType>]) -> SrfFunc {
    match (func, args.first()) {
        (SrfFunc::Subscripts, Some(Some(DataType::Int2Vector | DataType::OidVector))) => {
            SrfFunc::SubscriptsFromZero
        }
        _ => func,
    }
}

/// Output columns (name, type) of a call to `func` named `label`, given its
/// arguments' static types.
pub fn columns(func: SrfFunc, label: &str, args: &[Option<DataType>]) -> Vec<(String, DataType)> {
    let elem = || {
        args.first()
            .and_then(|t| t.as_ref()?.element())
            .unwrap_or(DataType::Text)
    };
    match func {
        SrfFunc::Series => vec![(label.into(), series_type(args))],
        SrfFunc::Unnest => vec![(label.into(), elem())],
        SrfFunc::Subscripts | SrfFunc::SubscriptsFromZero => {
            vec![(label.into(), DataType::Int)]
        }
        SrfFunc::ExpandArray => vec![("x".into(), elem()), ("n".into(), DataType::Int)],
        SrfFunc::RegexpSplit => vec![(label.into(), DataType::Text)],
        SrfFunc::RegexpMatches => vec![(label.into(), DataType::Array(Box::new(DataType::Text)))],
        SrfFunc::Json(j) => j.columns(label),
        SrfFunc::Keywords => crate::front::keywords::columns(),
        SrfFunc::ListeningChannels => vec![(label.into(), DataType::Text)],
        SrfFunc::StringSplit(ordinal) => {
            let mut c = vec![("value".to_string(), DataType::Text)];
            if ordinal {
                c.push(("ordinal".to_string(), DataType::BigInt));
            }
            c
        }
        // Read from the call's arguments ([`routine_cols`]).
        SrfFunc::Routine => vec![(label.into(), DataType::Text)],
    }
}

/// Runs `func` over argument values, handing each row to `each` (which
/// returns false to stop early).
pub fn run(
    func: SrfFunc,
    args: &[Value],
    out_type: &DataType,
    env: &Env<'_>,
    each: &mut dyn FnMut(Vec<Value>) -> Result<bool>,
) -> Result<()> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    match func {
        SrfFunc::Series => series(args, out_type, env, each),
        SrfFunc::Unnest => {
            for v in crate::functions::arrays::elements(&arg(0)) {
                if !each(vec![v])? {
                    break;
                }
            }
            Ok(())
        }
        SrfFunc::Subscripts | SrfFunc::SubscriptsFromZero => {
            let (a, dim) = (arg(0), arg(1));
            if a.is_null() || dim.is_null() {
                return Ok(());
            }
            crate::functions::arrays::one_dim_from_1(&a, "generate_subscripts")?;
            let n = crate::functions::arrays::elements(&a).len() as i64;
            // Walden's arrays have one dimension, numbered from 1.
            if crate::functions::cast(dim, &DataType::BigInt)?.as_i64() != Some(1) || n == 0 {
                return Ok(());
            }
            let reverse = crate::functions::truth(&arg(2))? == Some(true);
            let lower = (func == SrfFunc::Subscripts) as i64;
            let mut subs: Vec<i64> = (lower..n + lower).collect();
            if reverse {
                subs.reverse();
            }
            for i in subs {
                if !each(vec![Value::Int(i)])? {
                    break;
                }
            }
            Ok(())
        }
        SrfFunc::ExpandArray => {
            crate::functions::arrays::one_dim_from_1(&arg(0), "_pg_expandarray")?;
            for (i, v) in crate::functions::arrays::elements(&arg(0))
                .into_iter()
                .enumerate()
            {
                if !each(vec![v, Value::Int(i as i64 + 1)])? {
                    break;
                }
            }
            Ok(())
        }
        SrfFunc::RegexpSplit | SrfFunc::RegexpMatches => regexp(func, args, each),
        SrfFunc::StringSplit(ordinal) => string_split(args, ordinal, each),
        SrfFunc::Routine => {
            for r in crate::functions::call_routine_rows(args.to_vec(), env)? {
                if !each(r)? {
                    break;
                }
            }
            Ok(())
        }
        SrfFunc::ListeningChannels => {
            no_arguments("pg_listening_channels", args)?;
            for c in env.info.listener.channels() {
                if !each(vec![Value::text(c)])? {
                    break;
                }
            }
            Ok(())
        }
        SrfFunc::Keywords => {
            no_arguments("pg_get_keywords", args)?;
            for r in crate::front::keywords::rows() {
                if !each(r)? {
                    break;
                }
            }
            Ok(())
        }
        SrfFunc::Json(j) => {
            for r in j.rows(&arg(0))? {
                if !each(r)? {
                    break;
                }
            }
            Ok(())
        }
    }
}

fn no_arguments(name: &str, args: &[Value]) -> Result<()> {
    if !args.is_empty() {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function {name}() with {} arguments does not exist",
                args.len()
            ),
        ));
    }
    Ok(())
}

/// All rows of `func` for argument values.
pub fn collect(
    func: SrfFunc,
    args: &[Value],
    out_type: &DataType,
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    let mut out = Vec::new();
    run(func, args, out_type, env, &mut |r| {
        env.info.mem.charge_row(r.len())?;
        out.push(r);
        Ok(true)
    })?;
    Ok(out)
}

fn series(
    args: &[Value],
    ty: &DataType,
    env: &Env<'_>,
    each: &mut dyn FnMut(Vec<Value>) -> Result<bool>,
) -> Result<()> {
    if args.len() < 2 || args.len() > 3 {
        return Err(SqlError::syntax("generate_series(start, stop [, step])"));
    }
    // A NULL bound or step gives no rows, as in PostgreSQL.
    if args.iter().any(Value::is_null) {
        return Ok(());
    }
    let zero_step = || SqlError::new(ErrorKind::InvalidParameter, "step size cannot equal zero");
    if let DataType::Int | DataType::BigInt | DataType::SmallInt = ty {
        let int = |v: &Value| match v {
            Value::Int(i) => Ok(*i),
            other => crate::functions::cast(other.clone(), &DataType::BigInt).and_then(|x| {
                x.as_i64().ok_or_else(|| {
                    SqlError::new(ErrorKind::DataException, "generate_series needs integers")
                })
            }),
        };
        let (a, b) = (int(&args[0])?, int(&args[1])?);
        let st = match args.get(2) {
            Some(s) => int(s)?,
            None => 1,
        };
        if st == 0 {
            return Err(zero_step());
        }
        let mut i = a;
        let mut n = 0u64;
        while (st > 0 && i <= b) || (st < 0 && i >= b) {
            // Counted in steps, not rows kept: a consumer that keeps few
            // rows must not make the series uncancellable.
            n += 1;
            if n.is_multiple_of(65536) {
                check_cancel(env)?;
            }
            if !each(vec![Value::Int(i)])? {
                break;
            }
            // Near i64::MAX the next value does not exist: the series ends.
            match i.checked_add(st) {
                Some(n) => i = n,
                None => break,
            }
        }
        return Ok(());
    }
    // Numerics and timestamps: value arithmetic, the step's sign (or, for
    // an interval, where one step leads) giving the direction.
    let temporal = matches!(ty, DataType::Timestamp | DataType::TimestampTz);
    // A numeric keeps its own scale (casting to bare `numeric` would not).
    let to_ty = |v: &Value| match (v, ty) {
        (Value::Decimal(_), DataType::Decimal { .. }) => Ok(v.clone()),
        (Value::Int(i), DataType::Decimal { .. }) => {
            Ok(Value::Decimal(walden_engine::types::Numeric::from(*i)))
        }
        _ => crate::functions::cast(v.clone(), ty),
    };
    let a = to_ty(&args[0])?;
    let b = to_ty(&args[1])?;
    let st = match args.get(2) {
        Some(s) if temporal => crate::functions::cast(s.clone(), &DataType::Interval)?,
        Some(s) => to_ty(s)?,
        None if temporal => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                "function generate_series(timestamp, timestamp) does not exist",
            ))
        }
        None => crate::functions::cast(Value::Int(1), ty)?,
    };
    // A NaN or infinite numeric bound or step would never end the series.
    for (what, v) in [("start value", &a), ("stop value", &b), ("step size", &st)] {
        if let Value::Decimal(d) = v {
            let bad = if d.is_nan() {
                "NaN"
            } else if d.is_infinite() {
                "infinity"
            } else {
                continue;
            };
            return Err(SqlError::new(
                ErrorKind::InvalidParameter,
                format!("{what} cannot be {bad}"),
            ));
        }
    }
    let after_one = crate::functions::binary(BinOp::Add, a.clone(), st.clone())?;
    let dir = match compare(&after_one, &a)? {
        Some(Ordering::Equal) | None => return Err(zero_step()),
        Some(o) => o,
    };
    let mut i = a;
    let mut n = 0u64;
    loop {
        match compare(&i, &b)? {
            Some(o) if o == dir => break,
            None => break,
            _ => {}
        }
        n += 1;
        if n.is_multiple_of(65536) {
            check_cancel(env)?;
        }
        if !each(vec![i.clone()])? {
            break;
        }
        i = match crate::functions::binary(BinOp::Add, i, st.clone()) {
            Ok(v) => v,
            // Past the type's range the series ends.
            Err(_) => break,
        };
    }
    Ok(())
}

/// STRING_SPLIT: the pieces of `s` between single-character separators
/// (empty pieces included); no rows when `s` or the separator is NULL.
fn string_split(
    args: &[Value],
    ordinal: bool,
    each: &mut dyn FnMut(Vec<Value>) -> Result<bool>,
) -> Result<()> {
    if !(2..=3).contains(&args.len()) {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "The string_split function requires 2 to 3 arguments, not {}.",
                args.len()
            ),
        ));
    }
    if args[0].is_null() || args[1].is_null() {
        return Ok(());
    }
    let sep = args[1].to_string();
    let mut chars = sep.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            "Procedure expects parameter 'separator' of type 'nchar(1)/nvarchar(1)'.",
        ));
    };
    let s = args[0].to_string();
    for (k, piece) in s.split(c).enumerate() {
        let mut row = vec![Value::text(piece)];
        if ordinal {
            row.push(Value::Int(k as i64 + 1));
        }
        if !each(row)? {
            break;
        }
    }
    Ok(())
}

fn regexp(
    func: SrfFunc,
    args: &[Value],
    each: &mut dyn FnMut(Vec<Value>) -> Result<bool>,
) -> Result<()> {
    if args.len() < 2 || args.len() > 3 {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            "regexp functions take (string, pattern [, flags])",
        ));
    }
    if args.iter().any(Value::is_null) {
        return Ok(());
    }
    let (s, pat) = (args[0].to_string(), args[1].to_string());
    let flags = args.get(2).map(|f| f.to_string()).unwrap_or_default();
    let mut ci = false;
    let mut global = false;
    for f in flags.chars() {
        match f {
            'i' => ci = true,
            'c' => ci = false,
            'g' if func == SrfFunc::RegexpMatches => global = true,
            'g' => {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    "regexp_split_to_table() does not support the \"global\" option",
                ))
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "regular expression flag \"{other}\""
                )))
            }
        }
    }
    let re = regex::RegexBuilder::new(&pat)
        .case_insensitive(ci)
        .build()
        .map_err(|e| {
            SqlError::new(
                ErrorKind::InvalidParameter,
                format!("invalid regular expression: {e}"),
            )
        })?;
    if func == SrfFunc::RegexpMatches {
        for caps in re.captures_iter(&s) {
            // The groups, or the whole match when there are none.
            let items: Vec<Value> = if caps.len() > 1 {
                (1..caps.len())
                    .map(|g| {
                        caps.get(g)
                            .map(|m| Value::text(m.as_str()))
                            .unwrap_or(Value::Null)
                    })
                    .collect()
            } else {
                vec![Value::text(&caps[0])]
            };
            if !each(vec![Value::Array(items.into())])? || !global {
                break;
            }
        }
        return Ok(());
    }
    // PostgreSQL ignores an empty match at the start or end of the string
    // or right after the previous match.
    let mut start = 0;
    let mut last_end = None;
    for m in re.find_iter(&s) {
        if m.start() == m.end()
            && (m.start() == 0 || m.start() == s.len() || Some(m.start()) == last_end)
        {
            continue;
        }
        if !each(vec![Value::text(&s[start..m.start()])])? {
            return Ok(());
        }
        start = m.end();
        last_end = Some(m.end());
    }
    each(vec![Value::text(&s[start..])])?;
    Ok(())
}

/// Marks a select-list SRF column before its place in the row is known
/// (below the window functions' mark).
pub const SRF_MARK: usize = usize::MAX / 4;

/// An SRF call in a select list: its output columns follow the row it is
/// computed over, at `first` (counted from the first SRF column).
#[derive(Debug)]
pub struct SrfCall {
    pub func: SrfFunc,
    pub args: Vec<Expr>,
    pub cols: Vec<(String, DataType)>,
    pub first: usize,
    /// 1 for a call whose arguments hold no SRF, else one more than the
    /// deepest SRF in them (PostgreSQL's stacked ProjectSet nodes).
    pub level: usize,
}

impl SrfCall {
    /// The row slots the call fills: its columns, then whether it produced
    /// this row (false once it ran out while a longer SRF went on), which
    /// tells a NULL record from a record of NULLs.
    pub fn slots(&self) -> usize {
        self.cols.len() + 1
    }

    /// The types of [`Self::slots`].
    pub fn slot_types(&self) -> impl Iterator<Item = DataType> + '_ {
        self.cols
            .iter()
            .map(|(_, t)| t.clone())
            .chain(std::iter::once(DataType::Bool))
    }
}

/// Where an SRF call may appear while an expression is compiled.
#[derive(Debug)]
pub enum SrfSlot {
    /// Not here: the clause PostgreSQL's error names ("" when none).
    Refused(&'static str),
    /// In a select list: the calls so far.
    Open(Vec<SrfCall>),
}

impl SrfSlot {
    fn refusal(&self, name: &str) -> SqlError {
        match self {
            SrfSlot::Refused(w) if !w.is_empty() => {
                let msg = match *w {
                    "aggregate" => {
                        "aggregate function calls cannot contain set-returning function calls"
                            .to_string()
                    }
                    "window" => "window function calls cannot contain set-returning function calls"
                        .to_string(),
                    w => format!("set-returning functions are not allowed in {w}"),
                };
                SqlError::new(ErrorKind::FeatureNotSupported, msg)
            }
            _ => SqlError::new(
                ErrorKind::FeatureNotSupported,
                format!("set-returning function {name}() is not supported here"),
            ),
        }
    }
}

/// Compiles `f(...)` (already known to be an SRF) in a select list into a
/// reference to its first output column, or refuses it where it may not
/// be. `field` picks one output column of a multi-column SRF (`(f(x)).n`).
pub fn compile_call(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    func: SrfFunc,
    field: Option<&str>,
) -> Result<Expr> {
    let name = crate::front::fname(f);
    if matches!(p.srf, SrfSlot::Refused(_)) {
        return Err(p.srf.refusal(&name));
    }
    let raw = crate::front::args_of(f);
    let mut args = Vec::new();
    for a in &raw {
        let e = crate::front::arg_expr(a)
            .ok_or_else(|| SqlError::syntax(format!("unsupported argument to {name}")))?;
        args.push(Expr::compile(p, scope, e)?);
    }
    if func == SrfFunc::Unnest && args.len() != 1 {
        // unnest of several arrays exists in FROM only.
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function unnest() with {} arguments does not exist",
                args.len()
            ),
        ));
    }
    let SrfSlot::Open(calls) = &mut p.srf else {
        unreachable!("checked above");
    };
    let mut deepest = 0;
    for a in &args {
        deepest = deepest.max(srf_level(a, calls));
    }
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let arg_types: Vec<Option<DataType>> = args
        .iter()
        .map(|a| crate::query::scoped_type(a, scope, &types, &p.params))
        .collect();
    let func = for_types(func, &arg_types);
    let cols = if func == SrfFunc::Routine {
        // One column is named after the function in a select list.
        let label = routine_name(&args).unwrap_or_else(|| name.clone());
        let mut c = routine_cols(&args, &label)?;
        if let [one] = c.as_mut_slice() {
            one.0 = label;
        }
        c
    } else {
        columns(func, &name, &arg_types)
    };
    let pick = match field {
        // A multi-column function's row as a whole: a record of its columns.
        None if cols.len() > 1 => None,
        None => Some(0),
        Some(fld) => Some(cols.iter().position(|(n, _)| n == fld).ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedColumn,
                format!("could not identify column \"{fld}\" in record data type"),
            )
        })?),
    };
    let first = calls.iter().map(SrfCall::slots).sum::<usize>();
    calls.push(SrfCall {
        func,
        args,
        cols,
        first,
        level: deepest + 1,
    });
    Ok(match pick {
        Some(k) => Expr::Col(SRF_MARK + first + k),
        // NULL for a row the call did not produce, as PostgreSQL.
        None => {
            let fields = calls.last().expect("pushed").cols.clone();
            let produced = Expr::Col(SRF_MARK + first + fields.len());
            let values = (0..fields.len())
                .map(|k| Expr::Col(SRF_MARK + first + k))
                .collect();
            Expr::Case(
                None,
                vec![(produced, crate::expr::record::named(values, fields))],
                None,
            )
        }
    })
}

/// The level of the deepest SRF column `e` reads.
fn srf_level(e: &Expr, calls: &[SrfCall]) -> usize {
    let own = match e {
        Expr::Col(i) if (SRF_MARK..window_mark()).contains(i) => calls
            .iter()
            .find(|c| (c.first..c.first + c.slots()).contains(&(i - SRF_MARK)))
            .map_or(0, |c| c.level),
        _ => 0,
    };
    e.children()
        .into_iter()
        .map(|c| srf_level(c, calls))
        .fold(own, usize::max)
}

/// The type of the SRF column a mark `col` names, if it names one.
pub fn column_type(calls: &[SrfCall], col: usize) -> Option<DataType> {
    let k = col.checked_sub(SRF_MARK).filter(|_| col < window_mark())?;
    calls.iter().flat_map(SrfCall::slot_types).nth(k)
}

fn window_mark() -> usize {
    usize::MAX / 2
}

/// Moves SRF column marks in `e` to `base` onward.
pub fn place(e: &mut Expr, base: usize) {
    if let Expr::Col(i) = e {
        if (SRF_MARK..window_mark()).contains(i) {
            *i = base + (*i - SRF_MARK);
        }
    }
    for c in e.children_mut() {
        place(c, base);
    }
}

/// The select-list SRFs of one SELECT, run over its rows (after grouping
/// and windows, before DISTINCT, ORDER BY and LIMIT, as PostgreSQL does).
#[derive(Debug)]
pub struct ProjectSet {
    pub calls: Vec<SrfCall>,
    /// Width of the rows the calls extend.
    pub base: usize,
}

impl ProjectSet {
    pub fn width(&self) -> usize {
        self.calls.iter().map(SrfCall::slots).sum()
    }

    /// Each row extended with the SRF columns, one row per step of the
    /// longest SRF at each level.
    pub fn run(&self, rows: Vec<Vec<Value>>, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
        let (width, base) = (self.width(), self.base);
        let mut rows: Vec<Vec<Value>> = rows
            .into_iter()
            .map(|mut r| {
                r.resize(r.len() + width, Value::Null);
                r
            })
            .collect();
        let top = self.calls.iter().map(|c| c.level).max().unwrap_or(0);
        for level in 1..=top {
            let calls: Vec<&SrfCall> = self.calls.iter().filter(|c| c.level == level).collect();
            let mut out = Vec::new();
            for (n, r) in rows.into_iter().enumerate() {
                if n % 1024 == 0 {
                    check_cancel(env)?;
                }
                let mut results = Vec::with_capacity(calls.len());
                for c in &calls {
                    let args = c
                        .args
                        .iter()
                        .map(|a| a.eval(&r, env))
                        .collect::<Result<Vec<_>>>()?;
                    results.push(collect(c.func, &args, &c.cols[0].1, env)?);
                }
                let steps = results.iter().map(Vec::len).max().unwrap_or(0);
                for step in 0..steps {
                    let mut nr = r.clone();
                    for (c, res) in calls.iter().zip(&results) {
                        for k in 0..c.cols.len() {
                            nr[base + c.first + k] = res
                                .get(step)
                                .and_then(|row| row.get(k).cloned())
                                .unwrap_or(Value::Null);
                        }
                        nr[base + c.first + c.cols.len()] = Value::Bool(step < res.len());
                    }
                    env.info.mem.charge_row(nr.len())?;
                    out.push(nr);
                }
            }
            rows = out;
        }
        Ok(rows)
    }
}
