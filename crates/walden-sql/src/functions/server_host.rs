//! What the server hosting the engine lets SQL see and do: reload its
//! configuration (`pg_reload_conf()`) and show its host-based
//! authentication rules (`pg_hba_file_rules`). An embedded engine has no
//! host: the function answers false and the view is empty.

/// The hosting server's side.
pub trait ServerHost: Send + Sync + std::fmt::Debug {
    /// Re-reads the configuration file; an error leaves the settings in
    /// force as they were.
    fn reload_config(&self) -> Result<(), String>;
    /// The host-based rules in force, in order.
    fn hba_rules(&self) -> Vec<HbaRuleRow>;
}

/// One row of `pg_hba_file_rules` (PostgreSQL 15's columns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HbaRuleRow {
    pub line_number: i32,
    /// host | hostssl | hostnossl.
    pub conn_type: String,
    pub database: Vec<String>,
    pub user_name: Vec<String>,
    /// `None` for "all".
    pub address: Option<String>,
    pub netmask: Option<String>,
    pub auth_method: String,
}

pub(crate) fn columns() -> Vec<(&'static str, walden_engine::DataType)> {
    use walden_engine::DataType as T;
    let text_array = || T::Array(Box::new(T::Text));
    vec![
        ("line_number", T::Int),
        ("type", T::Text),
        ("database", text_array()),
        ("user_name", text_array()),
        ("address", T::Text),
        ("netmask", T::Text),
        ("auth_method", T::Text),
        ("options", text_array()),
        ("error", T::Text),
    ]
}

pub(crate) fn rows(host: Option<&dyn ServerHost>) -> Vec<Vec<walden_engine::Value>> {
    use walden_engine::Value;
    let text = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::text);
    let array = |v: &[String]| Value::Array(v.iter().map(Value::text).collect());
    host.map(|h| h.hba_rules())
        .unwrap_or_default()
        .iter()
        .map(|r| {
            vec![
                Value::Int(r.line_number as i64),
                Value::text(&r.conn_type),
                array(&r.database),
                array(&r.user_name),
                text(&r.address),
                text(&r.netmask),
                Value::text(&r.auth_method),
                Value::Null,
                Value::Null,
            ]
        })
        .collect()
}
