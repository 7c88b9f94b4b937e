//! LISTEN / UNLISTEN / NOTIFY: the session's side (the channel names and
//! the transaction's pending changes); delivery is `context/notify.rs`.

use super::SqlSession;
use crate::context::notify::{self, Pending};
use crate::error::Result;
use crate::QueryOutput;

impl SqlSession {
    pub(super) fn listen(&mut self, channel: &str) -> Result<QueryOutput> {
        let mut out = QueryOutput::command("LISTEN");
        let c = truncated_channel(channel, &mut out.notices);
        self.in_tx(|tx, _| notify::listen(tx, Pending::Listen(c)))?;
        Ok(out)
    }

    /// UNLISTEN channel, or UNLISTEN * (`None`).
    pub(super) fn unlisten(&mut self, channel: Option<&str>) -> Result<QueryOutput> {
        let mut out = QueryOutput::command("UNLISTEN");
        let c = channel.map(|c| truncated_channel(c, &mut out.notices));
        self.in_tx(|tx, _| notify::listen(tx, Pending::Unlisten(c)))?;
        Ok(out)
    }

    pub(super) fn notify(&mut self, channel: &str, payload: &str) -> Result<QueryOutput> {
        let mut out = QueryOutput::command("NOTIFY");
        let c = truncated_channel(channel, &mut out.notices);
        self.in_tx(|tx, _| notify::notify(tx, &c, payload))?;
        Ok(out)
    }
}

/// A LISTEN / UNLISTEN / NOTIFY channel: an identifier, which PostgreSQL
/// truncates to 63 bytes with a notice.
fn truncated_channel(channel: &str, notices: &mut Vec<String>) -> String {
    let max = crate::context::notify::MAX_CHANNEL;
    if channel.len() <= max {
        return channel.to_string();
    }
    let mut end = max;
    while !channel.is_char_boundary(end) {
        end -= 1;
    }
    let short = &channel[..end];
    notices.push(format!(
        "identifier \"{channel}\" will be truncated to \"{short}\""
    ));
    short.to_string()
}
