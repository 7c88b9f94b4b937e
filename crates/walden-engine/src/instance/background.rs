//! The instance's background threads: the checkpointer (by log growth and
//! by time) and the one read-back check of every data file after an open.

use super::Instance;
use std::sync::Arc;
use std::time::Duration;

impl Instance {
    pub(super) fn start_checkpointer(&self) {
        let weak = Arc::downgrade(&self.inner);
        let h = std::thread::Builder::new()
            .name("walden-checkpointer".into())
            .spawn(move || {
                crate::priority::lower_for_background();
                loop {
                let Some(inner) = weak.upgrade() else { return };
                {
                    let mut stop = inner.stop.0.lock();
                    if *stop {
                        return;
                    }
                    inner.stop.1.wait_for(&mut stop, Duration::from_millis(250));
                    if *stop {
                        return;
                    }
                }
                let dbs: Vec<_> = inner.dbs.read().values().cloned().collect();
                for db in dbs {
                    let grown = db.log_since_checkpoint();
                    let due_by_size = grown >= inner.cfg.checkpoint_log_bytes;
                    let due_by_time = grown > 0
                        && inner
                            .cfg
                            .checkpoint_interval
                            .is_some_and(|i| db.checkpoints.last.lock().elapsed() >= i);
                    if (due_by_size || due_by_time)
                        && db.log.is_poisoned().is_none()
                        && db.store_damaged().is_none()
                    {
                        if let Err(e) = db.checkpoint_spread(inner.cfg.checkpoint_log_bytes) {
                            tracing::warn!(database = %db.name, error = %e, "background checkpoint failed");
                        }
                    }
                }
                }
            })
            .ok();
        *self.inner.bg.lock() = h;
    }

    pub(super) fn stop_checkpointer(&self) {
        *self.inner.stop.0.lock() = true;
        self.inner.stop.1.notify_all();
        if let Some(h) = self.inner.bg.lock().take() {
            let _ = h.join();
        }
        if let Some(h) = self.inner.check_bg.lock().take() {
            let _ = h.join();
        }
    }

    /// Reads every database's data file back once, in the background, at a
    /// quarter of a core (the open no longer verifies every page; see
    /// `store/check.rs`).
    pub(super) fn start_check(&self) {
        let stop = self.inner.stop.clone();
        // Holding the databases is safe: `Inner`'s drop joins this thread
        // before it drops them, so a database is never closed here, after
        // its instance is gone (a new instance may have opened its files).
        let dbs: Vec<_> = self.inner.dbs.read().values().cloned().collect();
        let h = std::thread::Builder::new()
            .name("walden-check".into())
            .spawn(move || {
                crate::priority::lower_for_background();
                for db in dbs {
                    let mut pace = |took: Duration| {
                        let mut stopped = stop.0.lock();
                        if !*stopped {
                            stop.1.wait_for(&mut stopped, took * 3);
                        }
                        !*stopped
                    };
                    match db.check_store_paced(&mut pace) {
                        Ok(r) if r.stopped => return,
                        Ok(r) if r.problem_count == 0 => tracing::info!(
                            database = %db.name,
                            tables = r.tables.len(),
                            entries = r.entries,
                            bytes = r.bytes,
                            ms = r.elapsed.as_millis() as u64,
                            "data file checked"
                        ),
                        Ok(r) => tracing::error!(
                            database = %db.name,
                            problems = r.problem_count,
                            first = %r.problems.first().cloned().unwrap_or_default(),
                            "data file check found damage"
                        ),
                        Err(e) => tracing::error!(database = %db.name, error = %e, "data file check failed"),
                    }
                }
            })
            .ok();
        *self.inner.check_bg.lock() = h;
    }
}
