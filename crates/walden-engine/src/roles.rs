//! Roles and the privileges granted on tables, sequences and databases: what
//! PostgreSQL keeps in `pg_authid`, `pg_auth_members`, `relacl`/`relowner`
//! and `datacl`. They are instance-wide and live in the instance catalog
//! (`instance.json`), written with it atomically (see `Instance::update_roles`).
//!
//! Owners and grants are keyed by the engine's ids (database id, table or
//! sequence id), which are never reused, so a stale entry for a dropped
//! object can never apply to a new one.

use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

mod grants;
pub use grants::{AclError, AclItem};

/// The bootstrap superuser (PostgreSQL gives it OID 10 too).
pub const BOOTSTRAP_OID: u32 = 10;
/// Its name: the user clients connect as when they name none.
pub const BOOTSTRAP_NAME: &str = "walden";
/// Roles made by CREATE ROLE are numbered from here: far above the OIDs
/// `pg_catalog` derives from table and sequence ids.
pub const FIRST_ROLE_OID: u32 = 1 << 30;
/// The grantee `PUBLIC` (every role), as in an `aclitem`.
pub const PUBLIC: u32 = 0;

/// PostgreSQL's predefined roles that Walden's checks know of.
pub const PG_CHECKPOINT: u32 = 4544;
pub const PG_READ_ALL_DATA: u32 = 6181;
pub const PG_WRITE_ALL_DATA: u32 = 6182;
/// Stands for the owner of the current database (PostgreSQL 15's owner of
/// the `public` schema); nobody is granted it, owning the database is
/// membership.
pub const PG_DATABASE_OWNER: u32 = 6171;
pub const PREDEFINED: &[(u32, &str)] = &[
    (PG_DATABASE_OWNER, "pg_database_owner"),
    (PG_READ_ALL_DATA, "pg_read_all_data"),
    (PG_WRITE_ALL_DATA, "pg_write_all_data"),
    (PG_CHECKPOINT, "pg_checkpoint"),
];

/// Privilege bits of a table or sequence, and their `aclitem` letters.
pub mod privs {
    pub const SELECT: u8 = 1;
    pub const INSERT: u8 = 2;
    pub const UPDATE: u8 = 4;
    pub const DELETE: u8 = 8;
    pub const TRUNCATE: u8 = 16;
    pub const USAGE: u8 = 32;
    /// Everything that applies to a table.
    pub const ALL_TABLE: u8 = SELECT | INSERT | UPDATE | DELETE | TRUNCATE;
    /// Everything that applies to a sequence.
    pub const ALL_SEQUENCE: u8 = SELECT | UPDATE | USAGE;
    /// CONNECT on a database.
    pub const CONNECT: u8 = 64;
    /// CREATE on a schema.
    pub const CREATE: u8 = 128;
    /// Everything that applies to a schema.
    pub const ALL_SCHEMA: u8 = USAGE | CREATE;
    /// In PostgreSQL's `aclitem` order.
    pub const LETTERS: &[(u8, char)] = &[
        (INSERT, 'a'),
        (SELECT, 'r'),
        (UPDATE, 'w'),
        (DELETE, 'd'),
        (TRUNCATE, 'D'),
        (USAGE, 'U'),
        (CREATE, 'C'),
        (CONNECT, 'c'),
    ];
}

/// A role (`pg_authid` row).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Role {
    pub oid: u32,
    pub name: String,
    #[serde(default)]
    pub superuser: bool,
    #[serde(default)]
    pub login: bool,
    #[serde(default)]
    pub createdb: bool,
    #[serde(default)]
    pub createrole: bool,
    #[serde(default = "yes")]
    pub inherit: bool,
    #[serde(default)]
    pub replication: bool,
    #[serde(default)]
    pub bypassrls: bool,
    /// -1: no limit.
    #[serde(default = "no_limit")]
    pub connection_limit: i32,
    /// A SCRAM-SHA-256 verifier (see `scram.rs`), never the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// `VALID UNTIL`: after this instant (UTC microseconds since the Unix
    /// epoch) the password no longer logs in; `None`: no expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<i64>,
}

fn yes() -> bool {
    true
}
fn no_limit() -> i32 {
    -1
}

impl Role {
    /// A role with PostgreSQL's CREATE ROLE defaults (NOLOGIN, INHERIT).
    pub fn new(oid: u32, name: &str) -> Role {
        Role {
            oid,
            name: name.to_string(),
            superuser: false,
            login: false,
            createdb: false,
            createrole: false,
            inherit: true,
            replication: false,
            bypassrls: false,
            connection_limit: -1,
            password: None,
            valid_until: None,
        }
    }
}

/// What an ACL entry is about.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ObjKind {
    Table,
    Sequence,
    Database,
    /// A schema of a database (`public`, by its OID).
    Schema,
}

impl ObjKind {
    /// Who owns an object that has no entry: the bootstrap superuser, and
    /// for a schema (`public`) the database's owner, as in PostgreSQL 15.
    pub fn default_owner(self) -> u32 {
        match self {
            ObjKind::Schema => PG_DATABASE_OWNER,
            _ => BOOTSTRAP_OID,
        }
    }
}

/// An object's owner and grants. `grants: None` is PostgreSQL's default
/// ACL (the owner holds everything; on a database PUBLIC may CONNECT);
/// once anything was granted or revoked the list is explicit, as
/// PostgreSQL materialises `acldefault` at the first GRANT.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Acl {
    pub db: u32,
    pub kind: ObjKind,
    /// Table or sequence id; the database id again for a database.
    pub id: u32,
    pub owner: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<Vec<AclItem>>,
}

impl Acl {
    /// An object's entry before any GRANT or REVOKE: its kind's default
    /// owner and privileges.
    fn initial(db: u32, kind: ObjKind, id: u32) -> Acl {
        Acl {
            db,
            kind,
            id,
            owner: kind.default_owner(),
            grants: None,
        }
    }

    fn default_grants(&self) -> Vec<AclItem> {
        let by_owner = AclItem::by_owner;
        match self.kind {
            ObjKind::Table => vec![by_owner(self.owner, privs::ALL_TABLE)],
            ObjKind::Sequence => vec![by_owner(self.owner, privs::ALL_SEQUENCE)],
            ObjKind::Database => vec![
                by_owner(PUBLIC, privs::CONNECT),
                by_owner(self.owner, privs::CONNECT),
            ],
            // PostgreSQL 15's `public`: its owner uses and creates, every
            // role uses (a schema made by CREATE SCHEMA would have the
            // owner's entry alone; Walden has no other schema).
            ObjKind::Schema => vec![
                by_owner(self.owner, privs::ALL_SCHEMA),
                by_owner(PUBLIC, privs::USAGE),
            ],
        }
    }

    /// The explicit grants (the default ones when none were made).
    pub fn effective(&self) -> Vec<AclItem> {
        self.grants.clone().unwrap_or_else(|| self.default_grants())
    }
}

/// A membership: `member` is granted `role` (GRANT role TO member).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Membership {
    pub role: u32,
    pub member: u32,
}

/// The roles, memberships and ACLs of an instance.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RoleCatalog {
    /// Counts the committed changes (one per transaction that changed
    /// roles; 0 in a catalog written before versions were kept).
    #[serde(default)]
    pub version: u64,
    pub roles: Vec<Role>,
    pub next_oid: u32,
    #[serde(default)]
    pub members: Vec<Membership>,
    #[serde(default)]
    pub acls: Vec<Acl>,
}

/// A commit's role changes as its log record carries them (see
/// `instance/roles_txn.rs`): the whole new catalog, numbered by its
/// `version`, and the instance that made it (a replica's or a restored
/// copy's log carries another instance's records, which are not its own).
#[derive(Clone, Debug, PartialEq)]
pub struct RoleRecord {
    pub instance: String,
    pub catalog: Arc<RoleCatalog>,
}

impl Default for RoleCatalog {
    /// A new instance's catalog: the bootstrap superuser alone.
    fn default() -> Self {
        let mut boot = Role::new(BOOTSTRAP_OID, BOOTSTRAP_NAME);
        boot.superuser = true;
        boot.login = true;
        boot.createdb = true;
        boot.createrole = true;
        boot.replication = true;
        boot.bypassrls = true;
        RoleCatalog {
            version: 0,
            roles: vec![boot],
            next_oid: FIRST_ROLE_OID,
            members: Vec::new(),
            acls: Vec::new(),
        }
    }
}

impl RoleCatalog {
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.iter().find(|r| r.name == name)
    }

    pub fn role_by_oid(&self, oid: u32) -> Option<&Role> {
        self.roles.iter().find(|r| r.oid == oid)
    }

    /// The OID of a stored or predefined role.
    pub fn oid_of(&self, name: &str) -> Option<u32> {
        self.role(name)
            .map(|r| r.oid)
            .or_else(|| PREDEFINED.iter().find(|(_, n)| *n == name).map(|(o, _)| *o))
    }

    /// A role's name (`PUBLIC` for 0; the OID for one that is gone).
    pub fn name_of(&self, oid: u32) -> String {
        if oid == PUBLIC {
            return "PUBLIC".into();
        }
        self.role_by_oid(oid)
            .map(|r| r.name.clone())
            .or_else(|| {
                PREDEFINED
                    .iter()
                    .find(|(o, _)| *o == oid)
                    .map(|(_, n)| n.to_string())
            })
            .unwrap_or_else(|| oid.to_string())
    }

    pub fn is_superuser(&self, oid: u32) -> bool {
        self.role_by_oid(oid).is_some_and(|r| r.superuser)
    }

    /// `oid` and every role it inherits the privileges of, through
    /// memberships of roles that have INHERIT (PostgreSQL's rule).
    pub fn effective_roles(&self, oid: u32) -> Vec<u32> {
        let mut out = vec![oid];
        let mut i = 0;
        while i < out.len() {
            let cur = out[i];
            let inherits = self.role_by_oid(cur).is_none_or(|r| r.inherit);
            if inherits {
                for m in &self.members {
                    if m.member == cur && !out.contains(&m.role) {
                        out.push(m.role);
                    }
                }
            }
            i += 1;
        }
        out
    }

    /// Whether `oid` is `role` or a member of it, directly or not
    /// (regardless of INHERIT, as `pg_has_role(..., 'MEMBER')`).
    pub fn is_member_of(&self, oid: u32, role: u32) -> bool {
        let mut seen = vec![oid];
        let mut i = 0;
        while i < seen.len() {
            if seen[i] == role {
                return true;
            }
            let cur = seen[i];
            for m in &self.members {
                if m.member == cur && !seen.contains(&m.role) {
                    seen.push(m.role);
                }
            }
            i += 1;
        }
        false
    }

    pub fn acl(&self, db: u32, kind: ObjKind, id: u32) -> Option<&Acl> {
        self.acls
            .iter()
            .find(|a| a.db == db && a.kind == kind && a.id == id)
    }

    /// The owner (the bootstrap superuser for objects made before roles
    /// existed, or by the engine directly).
    pub fn owner_of(&self, db: u32, kind: ObjKind, id: u32) -> u32 {
        self.acl(db, kind, id)
            .map_or(kind.default_owner(), |a| a.owner)
    }

    /// The roles whose grants apply to `oid` in database `db`: its
    /// effective roles, and `pg_database_owner` when it has the privileges
    /// of the database's owner.
    pub fn effective_roles_in(&self, oid: u32, db: u32) -> Vec<u32> {
        let mut mine = self.effective_roles(oid);
        if mine.contains(&self.owner_of(db, ObjKind::Database, db)) {
            mine.push(PG_DATABASE_OWNER);
        }
        mine
    }

    /// The privileges `oid` holds on an object, without superuser or
    /// predefined-role bypasses (the caller applies those).
    pub fn privileges(&self, oid: u32, db: u32, kind: ObjKind, id: u32) -> u8 {
        let grants = match self.acl(db, kind, id) {
            Some(a) => a.effective(),
            None => Acl::initial(db, kind, id).effective(),
        };
        let mine = self.effective_roles_in(oid, db);
        grants
            .iter()
            .filter(|i| i.grantee == PUBLIC || mine.contains(&i.grantee))
            .fold(0, |acc, i| acc | i.privs)
    }

    fn acl_mut(&mut self, db: u32, kind: ObjKind, id: u32) -> &mut Acl {
        let i = match self
            .acls
            .iter()
            .position(|a| a.db == db && a.kind == kind && a.id == id)
        {
            Some(i) => i,
            None => {
                self.acls.push(Acl::initial(db, kind, id));
                self.acls.len() - 1
            }
        };
        &mut self.acls[i]
    }

    /// Records the owner of a new object (its ACL starts as the default).
    pub fn set_owner(&mut self, db: u32, kind: ObjKind, id: u32, owner: u32) {
        let a = self.acl_mut(db, kind, id);
        a.owner = owner;
        a.grants = None;
    }

    /// Forgets a dropped object's owner and grants.
    pub fn forget(&mut self, db: u32, kind: ObjKind, id: u32) {
        self.acls
            .retain(|a| !(a.db == db && a.kind == kind && a.id == id));
    }

    /// Forgets every ACL of a dropped database.
    pub fn forget_database(&mut self, db: u32) {
        self.acls.retain(|a| a.db != db);
    }

    /// GRANT (`grant = true`) or REVOKE of `bits` for `grantee` by the
    /// owner, without grant options (REVOKE takes the grant options too,
    /// and what was granted under them).
    pub fn change_grant(
        &mut self,
        db: u32,
        kind: ObjKind,
        id: u32,
        grantee: u32,
        bits: u8,
        grant: bool,
    ) {
        let item = AclItem {
            options: if grant { 0 } else { bits },
            ..AclItem::by_owner(grantee, bits)
        };
        // Neither an owner's grant without options nor a cascading
        // revoke can be refused.
        let _ = self.update_acl(db, kind, id, item, grant, true);
    }

    /// A new role; fails if the name is taken.
    pub fn create_role(&mut self, mut role: Role) -> Result<u32> {
        if self.oid_of(&role.name).is_some() {
            return Err(EngineError::InvalidDefinition(format!(
                "role \"{}\" already exists",
                role.name
            )));
        }
        role.oid = self.next_oid;
        self.next_oid += 1;
        let oid = role.oid;
        self.roles.push(role);
        Ok(oid)
    }

    /// What a role owns (why it cannot be dropped), as names of kinds.
    pub fn owned_by(&self, oid: u32) -> Vec<&Acl> {
        self.acls.iter().filter(|a| a.owner == oid).collect()
    }

    /// Removes a role and every grant and membership naming it. The caller
    /// has checked that it owns nothing.
    pub fn drop_role(&mut self, oid: u32) {
        self.roles.retain(|r| r.oid != oid);
        self.members.retain(|m| m.role != oid && m.member != oid);
        for a in &mut self.acls {
            if let Some(g) = &mut a.grants {
                g.retain(|i| i.grantee != oid && i.grantor != Some(oid));
            }
        }
    }

    /// The `aclitem[]` text of an object (`{alice=arwdD/walden,...}`), or
    /// `None` when it has the default ACL (PostgreSQL shows NULL then;
    /// `public`'s ACL is always shown, as PostgreSQL 15 stores it).
    pub fn acl_text(&self, db: u32, kind: ObjKind, id: u32) -> Option<String> {
        let stored = self.acl(db, kind, id);
        let (owner, grants) = match stored {
            Some(a) if a.grants.is_some() || kind == ObjKind::Schema => (a.owner, a.effective()),
            None if kind == ObjKind::Schema => {
                (kind.default_owner(), Acl::initial(db, kind, id).effective())
            }
            _ => return None,
        };
        let items: Vec<String> = grants
            .iter()
            .map(|i| {
                let who = if i.grantee == PUBLIC {
                    String::new()
                } else {
                    acl_name(&self.name_of(i.grantee))
                };
                // Each letter, then `*` when it may be granted on.
                let mut letters = String::new();
                for (b, c) in privs::LETTERS {
                    if i.privs & b != 0 {
                        letters.push(*c);
                        if i.options & b != 0 {
                            letters.push('*');
                        }
                    }
                }
                let grantor = acl_name(&self.name_of(i.grantor.unwrap_or(owner)));
                format!("{who}={letters}/{grantor}")
            })
            .collect();
        Some(format!("{{{}}}", items.join(",")))
    }
}

/// A role name as an `aclitem` writes it: double-quoted when it holds
/// anything but letters, digits and underscores (PostgreSQL's `putid`).
fn acl_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return name.to_string();
    }
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The catalog as shared by the instance: readers take an `Arc` of it and
/// never wait for a writer.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedRoles(pub Arc<RoleCatalog>);

impl Serialize for SharedRoles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SharedRoles {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        RoleCatalog::deserialize(d).map(|c| SharedRoles(Arc::new(c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_and_memberships() {
        let mut c = RoleCatalog::default();
        let alice = c.create_role(Role::new(0, "alice")).unwrap();
        let group = c.create_role(Role::new(0, "readers")).unwrap();
        assert!(c.create_role(Role::new(0, "alice")).is_err());
        assert_eq!(c.privileges(alice, 5, ObjKind::Table, 1), 0);
        assert_eq!(
            c.privileges(BOOTSTRAP_OID, 5, ObjKind::Table, 1),
            privs::ALL_TABLE
        );
        c.change_grant(5, ObjKind::Table, 1, group, privs::SELECT, true);
        c.members.push(Membership {
            role: group,
            member: alice,
        });
        assert_eq!(c.privileges(alice, 5, ObjKind::Table, 1), privs::SELECT);
        assert_eq!(
            c.acl_text(5, ObjKind::Table, 1).unwrap(),
            "{walden=arwdD/walden,readers=r/walden}"
        );
        c.change_grant(5, ObjKind::Table, 1, group, privs::SELECT, false);
        assert_eq!(c.privileges(alice, 5, ObjKind::Table, 1), 0);
        // A database's default ACL lets PUBLIC connect.
        assert_ne!(
            c.privileges(alice, 5, ObjKind::Database, 5) & privs::CONNECT,
            0
        );
        c.drop_role(group);
        assert!(c.effective_roles(alice) == vec![alice]);
    }

    #[test]
    fn public_schema_as_postgres_15() {
        let mut c = RoleCatalog::default();
        let alice = c.create_role(Role::new(0, "alice")).unwrap();
        let bob = c.create_role(Role::new(0, "bob")).unwrap();
        let (db, ns) = (5, 2200);
        assert_eq!(c.owner_of(db, ObjKind::Schema, ns), PG_DATABASE_OWNER);
        assert_eq!(
            c.acl_text(db, ObjKind::Schema, ns).unwrap(),
            "{pg_database_owner=UC/pg_database_owner,=U/pg_database_owner}"
        );
        // Every role uses it; the database's owner creates too.
        assert_eq!(c.privileges(alice, db, ObjKind::Schema, ns), privs::USAGE);
        c.set_owner(db, ObjKind::Database, db, bob);
        assert_eq!(
            c.privileges(bob, db, ObjKind::Schema, ns),
            privs::ALL_SCHEMA
        );
        // Not in another database.
        assert_eq!(c.privileges(bob, 6, ObjKind::Schema, ns), privs::USAGE);
        c.change_grant(db, ObjKind::Schema, ns, PUBLIC, privs::USAGE, false);
        c.change_grant(db, ObjKind::Schema, ns, alice, privs::CREATE, true);
        assert_eq!(
            c.acl_text(db, ObjKind::Schema, ns).unwrap(),
            "{pg_database_owner=UC/pg_database_owner,alice=C/pg_database_owner}"
        );
        assert_eq!(c.privileges(alice, db, ObjKind::Schema, ns), privs::CREATE);
        // Quoted as an aclitem quotes names.
        let odd = c.create_role(Role::new(0, "a b")).unwrap();
        c.change_grant(db, ObjKind::Schema, ns, odd, privs::USAGE, true);
        assert!(c
            .acl_text(db, ObjKind::Schema, ns)
            .unwrap()
            .ends_with(",\"a b\"=U/pg_database_owner}"));
    }

    #[test]
    fn serde_round_trip() {
        let mut c = RoleCatalog::default();
        c.create_role(Role::new(0, "bob")).unwrap();
        let s = serde_json::to_string(&SharedRoles(Arc::new(c.clone()))).unwrap();
        let back: SharedRoles = serde_json::from_str(&s).unwrap();
        assert_eq!(*back.0, c);
    }
}
