//! Grantors and grant options in an object's ACL, as PostgreSQL keeps them
//! in `aclitem`s: the updates GRANT and REVOKE make, the revocation of
//! what depended on a lost grant option (CASCADE, or 2BP01 under RESTRICT),
//! the refusal of grant options given back to their own grantor, the
//! choice of grantor for a role that is not the owner, and the rewrite of
//! an ACL for a new owner.

use super::{Acl, ObjKind, RoleCatalog};
use serde::{Deserialize, Serialize};

/// One entry of an ACL: `grantee` holds `privs`, and may grant on those in
/// `options`, by the grant of `grantor`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(from = "ItemForm")]
pub struct AclItem {
    pub grantee: u32,
    /// `None`: the object's owner. Kept so rather than by OID so that a new
    /// owner becomes the grantor of the owner's grants, as PostgreSQL
    /// rewrites them when the owner changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grantor: Option<u32>,
    pub privs: u8,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub options: u8,
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

impl AclItem {
    /// An entry granted by the owner, without grant options.
    pub fn by_owner(grantee: u32, privs: u8) -> AclItem {
        AclItem {
            grantee,
            grantor: None,
            privs,
            options: 0,
        }
    }
}

/// The forms an entry is read in: `[grantee, privileges]` as catalogs
/// written before grantors were kept have it (the owner granted it), or
/// the item itself.
#[derive(Deserialize)]
#[serde(untagged)]
enum ItemForm {
    Pair(u32, u8),
    Item {
        grantee: u32,
        #[serde(default)]
        grantor: Option<u32>,
        privs: u8,
        #[serde(default)]
        options: u8,
    },
}

impl From<ItemForm> for AclItem {
    fn from(f: ItemForm) -> AclItem {
        match f {
            ItemForm::Pair(grantee, privs) => AclItem::by_owner(grantee, privs),
            ItemForm::Item {
                grantee,
                grantor,
                privs,
                options,
            } => AclItem {
                grantee,
                grantor,
                privs,
                options,
            },
        }
    }
}

/// Why an ACL update is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// REVOKE ... RESTRICT would leave grants made under a revoked grant
    /// option.
    #[error("dependent privileges exist")]
    DependentPrivileges,
    /// The grantee's grant options would rest on its own grants.
    #[error("grant options cannot be granted back to your own grantor")]
    GrantBack,
}

/// An ACL being changed, with what its rules need to know.
struct Edit<'a> {
    cat: &'a RoleCatalog,
    db: u32,
    owner: u32,
}

impl Edit<'_> {
    /// A grantor as stored: the owner is `None`.
    fn norm(&self, g: Option<u32>) -> Option<u32> {
        g.filter(|g| *g != self.owner)
    }

    fn holds_owner(&self, role: u32) -> bool {
        self.cat.is_superuser(role)
            || self
                .cat
                .effective_roles_in(role, self.db)
                .contains(&self.owner)
    }

    /// The grant options `role` holds in `list`: all of them with the
    /// owner's privileges, else those granted to it or to a role whose
    /// privileges it has (never PUBLIC's: PUBLIC holds none).
    fn options_of(&self, list: &[AclItem], role: u32) -> u8 {
        if self.holds_owner(role) {
            return u8::MAX;
        }
        let mine = self.cat.effective_roles_in(role, self.db);
        list.iter()
            .filter(|i| mine.contains(&i.grantee))
            .fold(0, |acc, i| acc | i.options)
    }

    /// Adds (`add`) or removes the privileges and grant options of `m`,
    /// the entry of its grantee and grantor; grant options lost take the
    /// grants made under them along (`cascade`) or refuse the change.
    fn update(
        &self,
        list: &mut Vec<AclItem>,
        m: AclItem,
        add: bool,
        cascade: bool,
    ) -> Result<(), AclError> {
        let grantor = self.norm(m.grantor);
        if add && m.options != 0 {
            self.check_circularity(list, m.grantee, grantor, m.options)?;
        }
        let pos = list
            .iter()
            .position(|i| i.grantee == m.grantee && self.norm(i.grantor) == grantor);
        let (old, new) = match pos {
            Some(p) => {
                let it = &mut list[p];
                let old = it.options;
                if add {
                    it.privs |= m.privs;
                    it.options |= m.options;
                } else {
                    it.privs &= !m.privs;
                    it.options &= !m.options;
                }
                let new = it.options;
                if it.privs == 0 && it.options == 0 {
                    list.remove(p);
                }
                (old, new)
            }
            None if add && (m.privs | m.options) != 0 => {
                list.push(AclItem {
                    grantee: m.grantee,
                    grantor,
                    privs: m.privs,
                    options: m.options,
                });
                (0, m.options)
            }
            None => (0, 0),
        };
        let lost = old & !new;
        if lost != 0 {
            self.recursive_revoke(list, m.grantee, lost, cascade)?;
        }
        Ok(())
    }

    /// `grantee` lost the grant options `lost`: what it granted under them,
    /// and does not hold otherwise, goes too.
    fn recursive_revoke(
        &self,
        list: &mut Vec<AclItem>,
        grantee: u32,
        lost: u8,
        cascade: bool,
    ) -> Result<(), AclError> {
        if grantee == self.owner {
            return Ok(());
        }
        let revoke = lost & !self.options_of(list, grantee);
        if revoke == 0 {
            return Ok(());
        }
        while let Some(dep) = list
            .iter()
            .find(|i| i.grantor == Some(grantee) && i.privs & revoke != 0)
            .copied()
        {
            if !cascade {
                return Err(AclError::DependentPrivileges);
            }
            let m = AclItem {
                grantee: dep.grantee,
                grantor: Some(grantee),
                privs: revoke,
                options: revoke,
            };
            self.update(list, m, false, cascade)?;
        }
        Ok(())
    }

    /// A grant of options to `grantee` by `grantor` must not rest on
    /// options `grantee` itself passed on (PostgreSQL's rule): without
    /// everything `grantee` holds with grant option, the grantor must
    /// still have them.
    fn check_circularity(
        &self,
        list: &[AclItem],
        grantee: u32,
        grantor: Option<u32>,
        options: u8,
    ) -> Result<(), AclError> {
        let Some(grantor) = grantor else {
            return Ok(());
        };
        let mut tmp = list.to_vec();
        while let Some(it) = tmp
            .iter()
            .find(|i| i.grantee == grantee && i.options != 0)
            .copied()
        {
            self.update(&mut tmp, it, false, true)?;
        }
        if options & !self.options_of(&tmp, grantor) != 0 {
            return Err(AclError::GrantBack);
        }
        Ok(())
    }
}

impl RoleCatalog {
    fn edit(&self, db: u32, kind: ObjKind, id: u32) -> (Edit<'_>, Vec<AclItem>) {
        let owner = self.owner_of(db, kind, id);
        let list = match self.acl(db, kind, id) {
            Some(a) => a.effective(),
            None => Acl::initial(db, kind, id).effective(),
        };
        (
            Edit {
                cat: self,
                db,
                owner,
            },
            list,
        )
    }

    /// GRANT (`grant`) or REVOKE of `item`'s privileges and grant options,
    /// as the entry of its grantee and grantor (`None` or the owner: the
    /// owner's). A REVOKE that takes grant options away revokes what was
    /// granted under them with `cascade`, and fails without.
    pub fn update_acl(
        &mut self,
        db: u32,
        kind: ObjKind,
        id: u32,
        item: AclItem,
        grant: bool,
        cascade: bool,
    ) -> Result<(), AclError> {
        let (edit, mut list) = self.edit(db, kind, id);
        edit.update(&mut list, item, grant, cascade)?;
        self.acl_mut(db, kind, id).grants = Some(list);
        Ok(())
    }

    /// The grant options `oid` holds on an object: all of them with the
    /// owner's privileges (a superuser has them), else those granted to it
    /// and to the roles whose privileges it has.
    pub fn grant_options(&self, oid: u32, db: u32, kind: ObjKind, id: u32) -> u8 {
        let (edit, list) = self.edit(db, kind, id);
        edit.options_of(&list, oid)
    }

    /// Who grants `needed` when `oid` does (PostgreSQL's choice): the
    /// owner when `oid` has the owner's privileges; else the first of
    /// `oid` and the roles whose privileges it has that holds every needed
    /// grant option itself, or the one holding most of them. Returns the
    /// grantor and the grant options it holds of `needed` (none: `oid`).
    pub fn best_grantor(&self, oid: u32, db: u32, kind: ObjKind, id: u32, needed: u8) -> (u32, u8) {
        let (edit, list) = self.edit(db, kind, id);
        if edit.holds_owner(oid) {
            return (edit.owner, needed);
        }
        let mut best = (oid, 0u8);
        for r in self.effective_roles_in(oid, db) {
            let held = if r == edit.owner {
                needed
            } else {
                list.iter()
                    .filter(|i| i.grantee == r)
                    .fold(0, |acc, i| acc | i.options)
                    & needed
            };
            if held == needed {
                return (r, held);
            }
            if held.count_ones() > best.1.count_ones() {
                best = (r, held);
            }
        }
        best
    }

    /// Gives an object to `new_owner`, keeping its grants: the old owner's
    /// own entry becomes the new owner's, and entries that then name the
    /// same grantee and grantor merge (PostgreSQL's rewrite).
    pub fn change_owner(&mut self, db: u32, kind: ObjKind, id: u32, new_owner: u32) {
        let a = self.acl_mut(db, kind, id);
        let old = a.owner;
        a.owner = new_owner;
        let Some(list) = a.grants.take() else {
            return;
        };
        let mut out: Vec<AclItem> = Vec::with_capacity(list.len());
        for mut it in list {
            if it.grantee == old {
                it.grantee = new_owner;
            }
            it.grantor = it.grantor.filter(|g| *g != old && *g != new_owner);
            match out
                .iter_mut()
                .find(|o| o.grantee == it.grantee && o.grantor == it.grantor)
            {
                Some(o) => {
                    o.privs |= it.privs;
                    o.options |= it.options;
                }
                None => out.push(it),
            }
        }
        a.grants = Some(out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{privs, Role, BOOTSTRAP_OID, PUBLIC};
    use super::*;

    const T: (u32, ObjKind, u32) = (5, ObjKind::Table, 1);

    fn acl(c: &RoleCatalog) -> String {
        c.acl_text(T.0, T.1, T.2).unwrap()
    }

    fn item(grantee: u32, grantor: u32, privs: u8, options: u8) -> AclItem {
        AclItem {
            grantee,
            grantor: Some(grantor),
            privs,
            options,
        }
    }

    /// The statements of PostgreSQL 15 they mirror are in comments; the
    /// ACLs are what it shows after each.
    #[test]
    fn grant_options_as_postgres_15() {
        let mut c = RoleCatalog::default();
        let alice = c.create_role(Role::new(0, "alice")).unwrap();
        let bob = c.create_role(Role::new(0, "bob")).unwrap();
        let carol = c.create_role(Role::new(0, "carol")).unwrap();
        let (db, k, id) = T;
        let ri = privs::SELECT | privs::INSERT;
        // GRANT SELECT, INSERT ON t TO alice WITH GRANT OPTION
        c.update_acl(db, k, id, item(alice, BOOTSTRAP_OID, ri, ri), true, false)
            .unwrap();
        assert_eq!(acl(&c), "{walden=arwdD/walden,alice=a*r*/walden}");
        // alice: GRANT SELECT ON t TO bob; GRANT ALL ON t TO carol WITH GRANT OPTION
        assert_eq!(
            c.best_grantor(alice, db, k, id, privs::ALL_TABLE),
            (alice, ri)
        );
        c.update_acl(db, k, id, item(bob, alice, privs::SELECT, 0), true, false)
            .unwrap();
        c.update_acl(db, k, id, item(carol, alice, ri, ri), true, false)
            .unwrap();
        assert_eq!(
            acl(&c),
            "{walden=arwdD/walden,alice=a*r*/walden,bob=r/alice,carol=a*r*/alice}"
        );
        // alice may not get back from carol what carol has from her.
        assert_eq!(
            c.update_acl(
                db,
                k,
                id,
                item(alice, carol, privs::SELECT, privs::SELECT),
                true,
                false
            ),
            Err(AclError::GrantBack)
        );
        // REVOKE GRANT OPTION FOR SELECT ON t FROM alice: RESTRICT refuses,
        // CASCADE takes what rested on it.
        let opt = AclItem {
            options: privs::SELECT,
            ..item(alice, BOOTSTRAP_OID, 0, 0)
        };
        assert_eq!(
            c.update_acl(db, k, id, opt, false, false),
            Err(AclError::DependentPrivileges)
        );
        c.update_acl(db, k, id, opt, false, true).unwrap();
        assert_eq!(
            acl(&c),
            "{walden=arwdD/walden,alice=a*r/walden,carol=a*/alice}"
        );
        assert_eq!(c.grant_options(alice, db, k, id), privs::INSERT);
        assert_eq!(c.privileges(alice, db, k, id), ri);
        assert_eq!(c.grant_options(BOOTSTRAP_OID, db, k, id), u8::MAX);
        // Nobody holds options through PUBLIC.
        c.update_acl(
            db,
            k,
            id,
            item(PUBLIC, BOOTSTRAP_OID, privs::SELECT, 0),
            true,
            false,
        )
        .unwrap();
        assert_eq!(c.grant_options(bob, db, k, id), 0);
        // Dropping a grantor takes its grants.
        c.drop_role(alice);
        assert_eq!(acl(&c), "{walden=arwdD/walden,=r/walden}");
    }

    #[test]
    fn a_new_owner_takes_the_old_owners_grants() {
        let mut c = RoleCatalog::default();
        let dan = c.create_role(Role::new(0, "dan")).unwrap();
        let erin = c.create_role(Role::new(0, "erin")).unwrap();
        let alice = c.create_role(Role::new(0, "alice")).unwrap();
        let (db, k, id) = T;
        c.set_owner(db, k, id, dan);
        c.update_acl(
            db,
            k,
            id,
            item(erin, dan, privs::SELECT, privs::SELECT),
            true,
            false,
        )
        .unwrap();
        c.update_acl(db, k, id, item(alice, erin, privs::SELECT, 0), true, false)
            .unwrap();
        assert_eq!(acl(&c), "{dan=arwdD/dan,erin=r*/dan,alice=r/erin}");
        c.change_owner(db, k, id, erin);
        assert_eq!(acl(&c), "{erin=ar*wdD/erin,alice=r/erin}");
    }

    #[test]
    fn catalogs_written_before_grantors_read_as_the_owners_grants() {
        let json = r#"{"version":3,"roles":[],"next_oid":1073741824,"members":[],
            "acls":[{"db":5,"kind":"table","id":1,"owner":10,"grants":[[10,31],[0,1]]}]}"#;
        let c: RoleCatalog = serde_json::from_str(json).unwrap();
        let g = c.acls[0].grants.clone().unwrap();
        assert_eq!(g[1], AclItem::by_owner(PUBLIC, privs::SELECT));
        let again: RoleCatalog = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(again, c);
    }
}
