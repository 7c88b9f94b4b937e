//! Who may become a group's primary when its leader key is absent, and who
//! goes first (docs/design.md, "Automatic failover through etcd").

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `groups/<ag>/sync`: the last primary, its epoch, and the synchronous
/// secondaries that counted for its commits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncKey {
    pub leader: String,
    pub epoch: u64,
    pub members: Vec<String>,
    /// Bounded-lag asynchronous secondaries whose bound the primary's
    /// commits kept: eligible after the synchronous ones (a failover to one
    /// loses at most its bound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounded: Vec<String>,
}

/// `groups/<ag>/leader`: who holds it (the key's lease says until when).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderKey {
    pub name: String,
    pub epoch: u64,
}

/// `groups/<ag>/switchover`: `to` asks `from`, primary in `epoch`, to give
/// up the leader key so that `to` can take it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchoverKey {
    pub to: String,
    pub from: String,
    pub epoch: u64,
}

/// One group as a member registration tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberGroup {
    /// "primary", "resolving" (primary held read-only) or "secondary".
    pub role: String,
    /// The group's epoch as this node knows it.
    pub epoch: u64,
    /// The primary as this node knows it.
    pub primary: String,
    /// Per database: the epoch whose log it holds.
    pub followed: BTreeMap<String, u64>,
    /// Per database: hardened log end.
    pub hardened: BTreeMap<String, u64>,
    /// Per database: SYNCHRONIZED, SYNCHRONIZING, NOT SYNCHRONIZING.
    #[serde(default)]
    pub sync_state: BTreeMap<String, String>,
}

/// `members/<name>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    #[serde(default)]
    pub sql: Option<String>,
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub api: Option<String>,
    #[serde(default)]
    pub groups: BTreeMap<String, MemberGroup>,
}

/// Whether `name`, whose view of the group is `g`, may take the group's
/// leader key: it holds every commit the last primary acknowledged.
pub fn eligible(name: &str, g: &MemberGroup, sync: Option<&SyncKey>) -> bool {
    match sync {
        // No primary has published a sync set: only the recorded primary.
        None => g.primary.eq_ignore_ascii_case(name),
        Some(s) => {
            if s.leader.eq_ignore_ascii_case(name) {
                return true;
            }
            // A member was SYNCHRONIZED under that primary in that epoch
            // (its log continues the primary's, divergence cut at the
            // handshake), and has followed no newer primary since.
            s.members
                .iter()
                .chain(&s.bounded)
                .any(|m| m.eq_ignore_ascii_case(name))
                && g.epoch == s.epoch
                && g.followed.values().all(|e| *e <= s.epoch)
        }
    }
}

/// How a candidate ranks: the last leader and synchronous members (which
/// hold every acknowledged commit) before bounded-lag ones (which may lack
/// up to their bound), then how much log it holds (the group's databases
/// summed).
pub fn score(name: &str, g: &MemberGroup, sync: Option<&SyncKey>) -> (u8, u64) {
    let bounded_only = sync.is_some_and(|s| {
        !s.leader.eq_ignore_ascii_case(name)
            && !s.members.iter().any(|m| m.eq_ignore_ascii_case(name))
            && s.bounded.iter().any(|m| m.eq_ignore_ascii_case(name))
    });
    (
        u8::from(!bounded_only),
        g.hardened.values().fold(0u64, |a, b| a.saturating_add(*b)),
    )
}

/// Whether `me` goes first among the eligible `candidates` (name, score; `me`
/// included): the most log, then the smallest name.
pub fn goes_first(me: &str, candidates: &[(String, (u8, u64))]) -> bool {
    candidates
        .iter()
        .max_by(|a, b| {
            a.1.cmp(&b.1)
                .then_with(|| b.0.to_ascii_lowercase().cmp(&a.0.to_ascii_lowercase()))
        })
        .is_some_and(|(n, _)| n.eq_ignore_ascii_case(me))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mg(primary: &str, epoch: u64, followed: u64, lsn: u64) -> MemberGroup {
        MemberGroup {
            role: "secondary".into(),
            epoch,
            primary: primary.into(),
            followed: [("db".to_string(), followed)].into(),
            hardened: [("db".to_string(), lsn)].into(),
            sync_state: Default::default(),
        }
    }

    #[test]
    fn without_a_sync_key_only_the_recorded_primary() {
        assert!(eligible("a", &mg("a", 1, 1, 10), None));
        assert!(!eligible("b", &mg("a", 1, 1, 99), None));
    }

    #[test]
    fn sync_members_of_the_same_epoch_and_the_last_leader() {
        let s = SyncKey {
            leader: "a".into(),
            epoch: 3,
            members: vec!["b".into()],
            bounded: vec![],
        };
        assert!(eligible("a", &mg("a", 3, 3, 1), Some(&s)));
        assert!(eligible("b", &mg("a", 3, 3, 1), Some(&s)));
        // Following an older or newer primary, or not counted for commits:
        // not eligible.
        assert!(eligible("b", &mg("a", 3, 2, 1), Some(&s)));
        assert!(!eligible("b", &mg("a", 2, 2, 1), Some(&s)));
        assert!(!eligible("b", &mg("c", 4, 4, 1), Some(&s)));
        assert!(!eligible("c", &mg("a", 3, 3, 100), Some(&s)));
    }

    #[test]
    fn most_log_goes_first_then_the_name() {
        let c = vec![("a".to_string(), (1, 5)), ("b".to_string(), (1, 7))];
        assert!(goes_first("b", &c));
        assert!(!goes_first("a", &c));
        let c = vec![("b".to_string(), (1, 7)), ("a".to_string(), (1, 7))];
        assert!(goes_first("a", &c));
    }

    #[test]
    fn a_bounded_secondary_is_eligible_after_the_synchronous_ones() {
        let s = SyncKey {
            leader: "a".into(),
            epoch: 3,
            members: vec!["b".into()],
            bounded: vec!["c".into()],
        };
        assert!(eligible("c", &mg("a", 3, 3, 1), Some(&s)));
        // Following a newer primary: not eligible.
        assert!(!eligible("c", &mg("d", 4, 4, 1), Some(&s)));
        // More log, but only bounded: the synchronous member goes first.
        let c = vec![
            ("b".to_string(), score("b", &mg("a", 3, 3, 10), Some(&s))),
            ("c".to_string(), score("c", &mg("a", 3, 3, 99), Some(&s))),
        ];
        assert!(goes_first("b", &c));
        // Alone, it goes.
        assert!(goes_first("c", &c[1..]));
        // Not in the published set: not eligible at all.
        let none = SyncKey {
            bounded: vec![],
            ..s
        };
        assert!(!eligible("c", &mg("a", 3, 3, 1), Some(&none)));
    }
}
