//! Array functions and operators (array_*, cardinality, `a[i]`, `@>`,
//! `&&`, `x op ANY (a)`), and the ARRAY[...] and ROW(...) constructors.

use super::*;

/// Calls one of the array functions (the dispatcher in `call.rs` sends only those).
pub(super) fn call(f: Func, a: Vec<Value>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    // The array arguments' positions.
    let (what, arrays): (_, &[usize]) = match f {
        Func::ArrayCat => (Some("array_cat"), &[0, 1]),
        Func::ArrayAppend => (Some("array_append"), &[0]),
        Func::ArrayPrepend => (Some("array_prepend"), &[1]),
        Func::ArrayRemove => (Some("array_remove"), &[0]),
        Func::ArrayPosition => (Some("array_position"), &[0]),
        Func::ArrayPositions => (Some("array_positions"), &[0]),
        _ => (None, &[]),
    };
    if let Some(what) = what {
        for (i, v) in a.iter().enumerate() {
            if arrays.contains(&i) {
                crate::functions::arrays::one_dim_from_1_arg(v, what)?;
            } else {
                crate::functions::arrays::one_dim_from_1(v, what)?;
            }
        }
    }
    Ok(match f {
        Func::ArrayBuild | Func::RowBuild => Value::Array(a.into()),
        Func::ArrayBuildNested => crate::functions::arrays::stack(&a)?,
        Func::RecordField(i) => match arg(0) {
            Value::Array(fields) => fields.get(i as usize).cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Func::AnyArray(op, all) => {
            // SQL's quantified comparison: a NULL comparison makes an
            // undecided result NULL; an empty array gives ALL true, ANY false.
            let x = arg(0);
            if arg(1).is_null() {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for item in crate::functions::arrays::elements(&arg(1)) {
                let r = crate::functions::binary(op, x.clone(), item)?;
                match crate::functions::truth(&r)? {
                    Some(true) if !all => return Ok(Value::Bool(true)),
                    Some(false) if all => return Ok(Value::Bool(false)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bool(all)
            }
        }
        // Not strict: NULL arrays, elements and delimiters mean something.
        Func::ArrayCat => crate::functions::arrays::cat(&arg(0), &arg(1)),
        Func::ArrayAppend => crate::functions::arrays::append(&arg(0), arg(1)),
        Func::ArrayPrepend => crate::functions::arrays::prepend(arg(0), &arg(1)),
        Func::StringToArray => {
            crate::functions::arrays::string_to_array(&arg(0), &arg(1), a.get(2))
        }
        // Not strict: a NULL null_string is as if omitted.
        Func::ArrayRemove if arg(0).is_null() => Value::Null,
        // Removes the elements equal to the value (NULL removes NULLs).
        Func::ArrayRemove => {
            let x = arg(1);
            let kept: Vec<Value> = crate::functions::arrays::elements(&arg(0))
                .into_iter()
                .filter(|e| match (e.is_null(), x.is_null()) {
                    (true, true) => false,
                    (false, false) => !matches!(compare(e, &x), Ok(Some(Ordering::Equal))),
                    _ => true,
                })
                .collect();
            Value::Array(kept.into())
        }
        Func::ArrayPosition | Func::ArrayPositions if arg(0).is_null() => Value::Null,
        Func::ArrayPosition | Func::ArrayPositions => {
            let start = match a.get(2) {
                None => 1,
                Some(Value::Null) => {
                    return Err(SqlError::new(
                        ErrorKind::NullValueNotAllowed,
                        "initial position must not be null",
                    ))
                }
                Some(v) => int_arg(v, "integer")?,
            };
            let x = arg(1);
            let mut found = crate::functions::arrays::elements(&arg(0))
                .into_iter()
                .enumerate()
                .map(|(k, e)| (k as i64 + 1, e))
                .filter(|(k, e)| {
                    *k >= start
                        && match (e.is_null(), x.is_null()) {
                            (true, true) => true,
                            (false, false) => {
                                matches!(compare(e, &x), Ok(Some(Ordering::Equal)))
                            }
                            _ => false,
                        }
                })
                .map(|(k, _)| Value::Int(k));
            if f == Func::ArrayPosition {
                found.next().unwrap_or(Value::Null)
            } else {
                Value::Array(found.collect::<Vec<_>>().into())
            }
        }
        Func::ArrayToString if arg(0).is_null() || arg(1).is_null() => Value::Null,
        Func::ArrayToString => {
            let sep = text_arg(&arg(1));
            let null_as = a.get(2).filter(|v| !v.is_null()).map(text_arg);
            let parts: Vec<String> = crate::functions::arrays::elements(&arg(0))
                .into_iter()
                .filter_map(|e| {
                    (!e.is_null())
                        .then(|| e.to_string())
                        .or_else(|| null_as.clone())
                })
                .collect();
            Value::text(parts.join(&sep))
        }
        // The rest are strict: a NULL argument makes the result NULL.
        _ if null_in => Value::Null,
        // An array in text form (catalog columns) has one dimension from 1.
        Func::ArrayUpper | Func::ArrayLower | Func::ArrayLength
            if !matches!(arg(0), Value::Array(_) | Value::MdArray(_)) =>
        {
            let n = crate::functions::arrays::elements(&arg(0)).len();
            if n == 0 || !crate::functions::arrays::dimension_is_first(&arg(1))? {
                Value::Null
            } else if f == Func::ArrayLower {
                Value::Int(1)
            } else {
                Value::Int(n as i64)
            }
        }
        Func::ArrayUpper | Func::ArrayLower | Func::ArrayLength => {
            crate::functions::arrays::bound(&arg(0), &arg(1), f)?
        }
        Func::ArrayNdims => crate::functions::arrays::ndims(&arg(0)),
        Func::ArrayDims => crate::functions::arrays::dims_text(&arg(0)),
        Func::Cardinality if null_in => Value::Null,
        Func::Cardinality => Value::Int(crate::functions::arrays::elements(&arg(0)).len() as i64),
        Func::ArrayElement => crate::functions::arrays::subscript(&arg(0), &a[1..])?,
        Func::ArrayContains(false) => crate::functions::arrays::contains(&arg(0), &arg(1))?,
        Func::ArrayContains(true) => crate::functions::arrays::contains(&arg(1), &arg(0))?,
        Func::ArrayOverlap => crate::functions::arrays::overlap(&arg(0), &arg(1))?,
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of the array functions"
            )))
        }
    })
}
