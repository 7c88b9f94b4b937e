//! GRANT and REVOKE of privileges on tables, databases and `public`, as
//! PostgreSQL 15 runs them: the owner (or a superuser, acting as the
//! owner) grants anything; another role grants what it holds with grant
//! option, as the grantor PostgreSQL would pick, and is warned (01007 /
//! 01006) about what it could not grant or revoke; a role with no
//! privilege at all on the object is refused (42501).

use super::*;
use crate::{Warning, WarningKind};
use walden_engine::roles::{AclError, AclItem};

/// One object a GRANT or REVOKE names.
struct Target {
    db: u32,
    kind: ObjKind,
    id: u32,
    name: String,
}

impl Target {
    fn what(&self) -> &'static str {
        match self.kind {
            ObjKind::Database => "database",
            ObjKind::Schema => "schema",
            ObjKind::Sequence => "sequence",
            ObjKind::Table => "table",
        }
    }
}

fn targets(
    instance: &Instance,
    db: &Database,
    tx: &Transaction,
    objects: &Objects,
) -> Result<Vec<Target>> {
    let table = |t: &walden_engine::Table| Target {
        db: db.id(),
        kind: ObjKind::Table,
        id: t.id(),
        name: t.name().to_string(),
    };
    Ok(match objects {
        Objects::PublicSchema => vec![Target {
            db: db.id(),
            kind: ObjKind::Schema,
            id: crate::catalog::privileges::PUBLIC_SCHEMA,
            name: "public".to_string(),
        }],
        Objects::Tables(names) => names
            .iter()
            .map(|n| Ok(table(db.table_as(Some(tx.id()), n)?.as_ref())))
            .collect::<Result<_>>()?,
        Objects::AllTables => db.tables().iter().map(|t| table(t.as_ref())).collect(),
        Objects::Databases(names) => names
            .iter()
            .map(|n| {
                let d = instance.database(n).map_err(|_| {
                    SqlError::new(
                        ErrorKind::UndefinedDatabase,
                        format!("database \"{n}\" does not exist"),
                    )
                })?;
                Ok(Target {
                    db: d.id(),
                    kind: ObjKind::Database,
                    id: d.id(),
                    name: d.name().to_string(),
                })
            })
            .collect::<Result<_>>()?,
    })
}

/// Whether `who` holds any privilege or grant option on the object (a
/// role with none may not even try to grant on it).
fn holds_any(who: &Who, c: &RoleCatalog, t: &Target) -> bool {
    let privileges = match t.kind {
        ObjKind::Schema => who.schema_privileges(t.db),
        ObjKind::Database => u8::from(who.can_connect(t.db)),
        ObjKind::Table | ObjKind::Sequence => who.table_privileges(t.db, t.kind, t.id),
    };
    privileges != 0 || c.grant_options(who.oid, t.db, t.kind, t.id) != 0
}

fn acl_error(e: AclError) -> SqlError {
    match e {
        AclError::DependentPrivileges => SqlError::new(ErrorKind::DependentObjects, e.to_string())
            .with_fields(crate::error::ErrorFields {
                hint: Some("Use CASCADE to revoke them too.".into()),
                ..Default::default()
            }),
        AclError::GrantBack => SqlError::new(ErrorKind::InvalidGrantOperation, e.to_string()),
    }
}

pub(super) fn privileges(
    who: &Who,
    instance: &Instance,
    db: &Database,
    tx: &mut Transaction,
    stmt: &AccessStmt,
) -> Result<QueryOutput> {
    let AccessStmt::Privileges {
        grant,
        bits,
        all,
        grant_option,
        objects,
        grantees,
        cascade,
    } = stmt
    else {
        unreachable!("called for GRANT and REVOKE of privileges")
    };
    let (grant, bits, all, grant_option, cascade) = (*grant, *bits, *all, *grant_option, *cascade);
    let tag = if grant { "GRANT" } else { "REVOKE" };
    let grantees: Vec<String> = grantees.iter().map(|g| resolve(who, g)).collect();
    let targets = targets(instance, db, tx, objects)?;
    let mut warnings = Vec::new();
    instance.update_roles_in(tx, |c| -> Result<()> {
        let mut oids = Vec::new();
        for g in &grantees {
            oids.push(if g == "PUBLIC" {
                PUBLIC
            } else {
                c.oid_of(g).ok_or_else(|| no_role(g))?
            });
        }
        for t in &targets {
            let (grantor, held) = c.best_grantor(who.oid, t.db, t.kind, t.id, bits);
            if held == 0 && !holds_any(who, c, t) {
                return Err(denied(format!(
                    "permission denied for {} {}",
                    t.what(),
                    t.name
                )));
            }
            let these = bits & held;
            let (none, some, kind) = if grant {
                (
                    "no privileges were granted",
                    "not all privileges were granted",
                    WarningKind::PrivilegeNotGranted,
                )
            } else {
                (
                    "no privileges could be revoked",
                    "not all privileges could be revoked",
                    WarningKind::PrivilegeNotRevoked,
                )
            };
            if these == 0 {
                warnings.push(Warning {
                    kind,
                    message: format!("{none} for \"{}\"", t.name),
                });
            } else if !all && these != bits {
                warnings.push(Warning {
                    kind,
                    message: format!("{some} for \"{}\"", t.name),
                });
            }
            for &g in &oids {
                if grant && grant_option && g == PUBLIC {
                    return Err(SqlError::new(
                        ErrorKind::InvalidGrantOperation,
                        "grant options can only be granted to roles",
                    ));
                }
                if these == 0 {
                    continue;
                }
                // GRANT adds the privileges (and their grant options);
                // REVOKE takes the grant options, and the privileges too
                // unless it is REVOKE GRANT OPTION FOR.
                let item = AclItem {
                    grantee: g,
                    grantor: Some(grantor),
                    privs: if grant || !grant_option { these } else { 0 },
                    options: if grant_option || !grant { these } else { 0 },
                };
                c.update_acl(t.db, t.kind, t.id, item, grant, cascade)
                    .map_err(acl_error)?;
            }
        }
        Ok(())
    })?;
    let mut out = QueryOutput::command(tag);
    out.warnings = warnings;
    Ok(out)
}
