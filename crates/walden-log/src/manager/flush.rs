//! Writing the log: cutting the buffer into blocks, the writer, group
//! flushes by a committer or the flusher thread, and waking the waiters a
//! flush covers.

use super::*;

/// Block boundaries for `take` bytes of `buf`: (offset, length, cont_len) per
/// block, and how many bytes of a record continue past `take`.
/// `rec_remaining` is how many leading bytes of `buf` continue an earlier record.
pub(super) fn plan_blocks(
    buf: &[u8],
    rec_remaining: u64,
    take: usize,
    payload: usize,
) -> (Vec<(usize, usize, u32)>, u64) {
    let mut blocks = Vec::with_capacity(take / payload + 1);
    let mut next_start = rec_remaining as usize;
    let mut off = 0;
    while off < take {
        let len = payload.min(take - off);
        let cont = next_start.saturating_sub(off).min(len) as u32;
        blocks.push((off, len, cont));
        // Records are appended whole, so a record starting inside `take` has
        // its length prefix inside `buf`.
        while next_start < off + len {
            let l = u32::from_le_bytes(buf[next_start..next_start + 4].try_into().unwrap());
            next_start += 4 + l as usize;
        }
        off += len;
    }
    (blocks, (next_start - take) as u64)
}

/// The flusher's own state: the segment being written and where.
pub(super) struct Writer {
    file: Arc<dyn VfsFile>,
    seq: u64,
    off: u64,
    rec_remaining: u64,
    out: Vec<u8>,
    spare_buf: Vec<u8>,
    /// Whether the spare for the next segment has been asked for (once the
    /// current one is a quarter full, so an idle log keeps one segment).
    spare_asked: bool,
    /// When the last slow-flush warning was logged, and the slow flushes
    /// since that were not (at most one line a second on a slow disk).
    slow_logged: Option<Instant>,
    slow_unlogged: u64,
}

impl Writer {
    pub(super) fn new(file: Arc<dyn VfsFile>, seq: u64, off: u64, spare_buf: Vec<u8>) -> Self {
        Writer {
            file,
            seq,
            off,
            rec_remaining: 0,
            out: Vec::new(),
            spare_buf,
            spare_asked: false,
            slow_logged: None,
            slow_unlogged: 0,
        }
    }

    /// Starts zero-filling the next segment once this one is a quarter
    /// full: early enough to be ready long before the switch, late enough
    /// that a database that writes little costs one segment of disk.
    fn ask_spare_if_due(&mut self, sh: &Shared) {
        if self.take_spare_due(&sh.cfg) {
            sh.files.ensure_spare();
        }
    }

    /// Whether a spare should be asked for now (marking it asked).
    pub(super) fn take_spare_due(&mut self, cfg: &LogConfig) -> bool {
        let due = !self.spare_asked && cfg.preallocate_spare && self.off >= cfg.segment_size / 4;
        self.spare_asked |= due;
        due
    }

    /// Writes the planned blocks and makes them durable. Returns bytes
    /// written, with where the time went.
    fn write_batch(
        &mut self,
        sh: &Shared,
        start_lsn: Lsn,
        synced: Lsn,
        data: &[u8],
        plan: &[(usize, usize, u32)],
        times: &mut FlushTimes,
    ) -> Result<u64> {
        let seg_size = sh.cfg.segment_size;
        let mut touched: Vec<Arc<dyn VfsFile>> = Vec::with_capacity(2);
        let mut written = 0u64;
        self.out.clear();
        let mut run_off = self.off;
        for &(o, len, cont) in plan {
            let block_len = block::pad_to_page(block::BLOCK_HEADER + len) as u64;
            if self.off + block_len > seg_size {
                if !self.out.is_empty() {
                    self.file
                        .write_at(&self.out, run_off)
                        .map_err(io_err(&sh.files.dir))?;
                    written += self.out.len() as u64;
                    touched.push(self.file.clone());
                }
                self.out.clear();
                let t = Instant::now();
                let (f, header) = sh.files.activate(self.seq + 1, start_lsn + o as u64)?;
                times.switch += t.elapsed();
                self.file = f;
                self.seq += 1;
                self.out.extend_from_slice(&header);
                run_off = 0;
                self.off = SEGMENT_HEADER as u64;
                self.spare_asked = false;
            }
            block::encode_block(
                &mut self.out,
                start_lsn + o as u64,
                synced,
                cont,
                &data[o..o + len],
            );
            self.off += block_len;
        }
        if !self.out.is_empty() {
            self.file
                .write_at(&self.out, run_off)
                .map_err(io_err(&sh.files.dir))?;
            written += self.out.len() as u64;
            touched.push(self.file.clone());
        }
        self.ask_spare_if_due(sh);
        let t = Instant::now();
        for f in &touched {
            f.sync_data().map_err(io_err(&sh.files.dir))?;
        }
        times.sync = t.elapsed();
        Ok(written)
    }
}

/// Where one flush's time went, for the slow-flush warning.
#[derive(Default)]
pub(super) struct FlushTimes {
    switch: Duration,
    sync: Duration,
}

/// A flush this slow is worth a line in the server log: every durable
/// committer it covers waited at least this long.
const SLOW_FLUSH: Duration = Duration::from_millis(40);

pub(super) fn flush_delay(st: &State, cfg: &LogConfig) -> Duration {
    match st.max_exposure {
        Some(m) => cfg.max_flush_delay.min(m.saturating_sub(st.flush_ewma) / 2),
        None => cfg.max_flush_delay,
    }
}

pub(super) fn wake(ready: BTreeMap<(Lsn, u64), Waiter>) {
    for (_, w) in ready {
        w.done.store(true, Release);
        w.thread.unpark();
    }
}

pub(super) type Ready = BTreeMap<(Lsn, u64), Waiter>;

/// Wakes hardened committers on its own thread, so the flusher can start the
/// next write at once instead of spending microseconds per waiter on futex
/// wake-ups (which bound group commit at 16+ sessions otherwise).
pub(super) fn spawn_waker() -> Option<mpsc::Sender<Ready>> {
    let (tx, rx) = mpsc::channel::<Ready>();
    std::thread::Builder::new()
        .name("walden-log-waker".into())
        .spawn(move || {
            while let Ok(ready) = rx.recv() {
                wake(ready);
            }
        })
        .ok()?;
    Some(tx)
}

/// A durable committer's own flush: writes everything buffered (in batches
/// of at most `max_write`) until `lsn` is hardened or the log is poisoned.
/// The caller holds the writer, so no other flush is running and everything
/// before `buf_lsn` is hardened.
pub(super) fn lead_flush(sh: &Shared, st: &mut MutexGuard<'_, State>, w: &mut Writer, lsn: Lsn) {
    let max_take = (sh.cfg.max_write / sh.cfg.block_size) * sh.cfg.block_payload();
    while st.hardened < lsn && st.poisoned.is_none() {
        let pending = (st.end_lsn - st.buf_lsn) as usize;
        if pending == 0 {
            break;
        }
        flush_step(sh, st, w, pending.min(max_take));
    }
}

/// Writes and syncs the first `take` buffered bytes with the state mutex
/// released, then publishes the new hardened LSN and wakes the waiters it
/// covers; on failure poisons the log and wakes everyone. The caller holds
/// the writer (taken out of the state), which keeps flushes in LSN order.
pub(super) fn flush_step(sh: &Shared, st: &mut MutexGuard<'_, State>, w: &mut Writer, take: usize) {
    let payload = sh.cfg.block_payload();
    let (plan, rem_after) = plan_blocks(&st.buf, w.rec_remaining, take, payload);
    let cont0 = w.rec_remaining as u32;
    let data = if take == st.buf.len() {
        let fresh = std::mem::take(&mut w.spare_buf);
        st.buf_since = None;
        std::mem::replace(&mut st.buf, fresh)
    } else {
        let d = st.buf[..take].to_vec();
        st.buf.drain(..take);
        d
    };
    let start_lsn = st.buf_lsn;
    st.buf_lsn += take as u64;
    let synced = st.hardened;
    let t0 = Instant::now();
    let mut times = FlushTimes::default();
    let res = MutexGuard::unlocked(st, || {
        if sh.has_subscribers.load(Acquire) {
            publish(
                sh,
                LogWrite {
                    lsn: start_lsn,
                    cont_len: cont0,
                    bytes: Arc::new(data.clone()),
                },
            );
        }
        w.write_batch(sh, start_lsn, synced, &data, &plan, &mut times)
    });
    let took = t0.elapsed();
    if took >= SLOW_FLUSH {
        sh.counters.slow_log_flushes.fetch_add(1, Relaxed);
        if w.slow_logged
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!(
                total_ms = took.as_secs_f64() * 1e3,
                sync_ms = times.sync.as_secs_f64() * 1e3,
                segment_switch_ms = times.switch.as_secs_f64() * 1e3,
                bytes = take,
                slow_flushes_not_logged = w.slow_unlogged,
                "slow log flush"
            );
            w.slow_logged = Some(Instant::now());
            w.slow_unlogged = 0;
        } else {
            w.slow_unlogged += 1;
        }
    }
    let mut data = data;
    data.clear();
    w.spare_buf = data;
    match res {
        Ok(written) => {
            w.rec_remaining = rem_after;
            let end = start_lsn + take as u64;
            st.hardened = end;
            st.flush_ewma = (st.flush_ewma * 7 + took) / 8;
            let max_age = st.max_exposure;
            // Not only from the front: acknowledgement order is not LSN
            // order, and a hardened entry left behind would make the next
            // acknowledgement wait for nothing and overstate the exposure.
            let counters = &sh.counters;
            st.exposure.retain(|&(l, t)| {
                if l > end {
                    return true;
                }
                let age = t.elapsed();
                if max_age.is_some_and(|m| age > m) {
                    counters.exposure_bound_misses.fetch_add(1, Relaxed);
                }
                counters
                    .peak_exposure_us
                    .fetch_max(age.as_micros() as u64, Relaxed);
                false
            });
            let rest = st.waiters.split_off(&(end + 1, 0));
            let ready = std::mem::replace(&mut st.waiters, rest);
            sh.counters.log_flushes.fetch_add(1, Relaxed);
            sh.counters.log_bytes_flushed.fetch_add(written, Relaxed);
            sh.space_cv.notify_all();
            MutexGuard::unlocked(st, || match &sh.waker {
                Some(tx) if ready.len() > 1 => {
                    if let Err(mpsc::SendError(ready)) = tx.send(ready) {
                        wake(ready);
                    }
                }
                _ => wake(ready),
            });
        }
        Err(e) => {
            tracing::error!(error = %e, "log write failed; database poisoned");
            st.poisoned = Some(e.to_string());
            let ready = std::mem::take(&mut st.waiters);
            sh.space_cv.notify_all();
            MutexGuard::unlocked(st, || wake(ready));
        }
    }
}

pub(super) fn flusher(sh: Arc<Shared>) {
    let payload = sh.cfg.block_payload();
    let max_take = (sh.cfg.max_write / sh.cfg.block_size) * payload;
    let mut st = sh.state.lock();
    loop {
        st.flusher_wants_writer = false;
        if st.poisoned.is_some() {
            break;
        }
        let pending = (st.end_lsn - st.buf_lsn) as usize;
        if pending == 0 {
            // At shutdown, a committer's flush may still be in flight: wait for
            // it, so its waiters are woken hardened rather than told "closed".
            if st.shutdown {
                if st.writer.is_some() {
                    break;
                }
                st.flusher_wants_writer = true;
            }
            st.flusher_idle = true;
            sh.flusher_cv.wait(&mut st);
            st.flusher_idle = false;
            continue;
        }
        let urgent = st.flush_target > st.buf_lsn || st.shutdown;
        let delay = flush_delay(&st, &sh.cfg);
        let since = st.buf_since.unwrap_or_else(Instant::now);
        let due = since.elapsed() >= delay;
        if !(urgent || due || pending >= payload) {
            sh.flusher_cv.wait_until(&mut st, since + delay);
            continue;
        }
        let Some(mut w) = st.writer.take() else {
            // A committer is flushing; it notifies us when it puts the writer back.
            st.flusher_wants_writer = true;
            sh.flusher_cv.wait(&mut st);
            continue;
        };
        let take = if urgent || due {
            pending.min(max_take)
        } else {
            (pending.min(max_take) / payload) * payload
        };
        flush_step(&sh, &mut st, &mut w, take);
        st.writer = Some(w);
    }
    // Poisoned or shut down: release anyone still waiting.
    let ready = std::mem::take(&mut st.waiters);
    sh.space_cv.notify_all();
    drop(st);
    wake(ready);
}

pub(super) fn publish(sh: &Shared, w: LogWrite) {
    let mut subs = sh.subscribers.lock();
    subs.retain(|s| s.offer(&w));
    if subs.is_empty() {
        sh.has_subscribers.store(false, Release);
    }
}
