//! PostgreSQL procedures: `CALL p(args)` runs the body on the runtime with
//! the session as host (data changes included), in the open transaction
//! or in one of its own that an error rolls back, as a DO block. Its OUT
//! and INOUT parameters, as the body left them, are the one row CALL
//! returns (PostgreSQL's rule); without any, CALL reports a command.

use super::*;

impl<'h, H: Host> Runner<'h, H> {
    pub fn run_call(&mut self, name: &str, args: &[String]) -> Result<QueryOutput> {
        let f = self
            .func_definition(name)?
            .and_then(|d| crate::front::plpgsql::parse_pg_function(&d));
        let f = match f {
            Some(f) if f.procedure => f,
            Some(f) => {
                let types: Vec<&str> = f.params.iter().map(|p| p.ty.as_str()).collect();
                return Err(SqlError::new(
                    ErrorKind::WrongObjectType,
                    format!("{name}({}) is not a procedure", types.join(", ")),
                )
                .with_fields(crate::error::ErrorFields {
                    hint: Some("To call a function, use SELECT.".into()),
                    ..Default::default()
                }));
            }
            None => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("procedure {name}() does not exist"),
                )
                .with_fields(crate::error::ErrorFields {
                    hint: Some(
                        "No procedure matches the given name and argument types. You might need to add explicit type casts."
                            .into(),
                    ),
                    ..Default::default()
                }))
            }
        };
        let given: Vec<Option<String>> = args.iter().map(|a| Some(a.clone())).collect();
        let exprs = super::pg_funcs::bind_call(&f, &given)?;
        self.pg = true;
        let mut values = Vec::new();
        for e in &exprs {
            values.push(self.eval(e)?);
        }
        let own = !self.host.in_transaction();
        if own {
            self.fixed("BEGIN", &[])?;
        }
        let r = self.invoke_pg(&f, values);
        if own {
            let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
            let o = self.fixed(end, &[]);
            if r.is_ok() && o?.tag == "ROLLBACK" {
                return Err(SqlError::new(
                    ErrorKind::InFailedTransaction,
                    "the procedure's transaction failed and was rolled back",
                ));
            }
        }
        let (_, frame) = r?;
        let outs: Vec<&crate::front::ProcParam> = f.params.iter().filter(|p| p.output).collect();
        let mut o = if outs.is_empty() {
            QueryOutput::command("CALL")
        } else {
            let mut columns = Vec::new();
            let mut row = Vec::new();
            for p in outs {
                let ty = crate::types::names::parse_type_name(&p.ty)?;
                row.push(
                    frame
                        .get(&p.name)
                        .map(|v| v.value.clone())
                        .unwrap_or(Value::Null),
                );
                columns.push(crate::Column {
                    name: p.name[1..].to_string(),
                    ty,
                    origin: None,
                });
            }
            QueryOutput {
                tag: "CALL".into(),
                columns: Some(columns),
                rows: vec![row],
                ..Default::default()
            }
        };
        o.notices = std::mem::take(&mut self.notices);
        Ok(o)
    }
}
