//! Running the cells: an instance per sync mode, the sessions that commit
//! for a slice, the recovery log and its timed reopen, and CPU sampling.

use super::*;

/// Raw counts of one cell, summed over its slices.
#[derive(Default)]
pub(super) struct RawCell {
    commits: u64,
    seconds: f64,
    log_writes: u64,
    log_bytes_written: u64,
    io_stall_write_ms: f64,
    log_flushes: u64,
    log_bytes_flushed: u64,
    writelog_waits: u64,
    writelog_wait_ms: f64,
    logbuffer_waits: u64,
    other_cpu_seconds: f64,
    device_bytes_written: u64,
    prealloc_bytes: u64,
    latencies_ns: Vec<u32>,
}

impl RawCell {
    pub(super) fn add(&mut self, o: RawCell) {
        self.commits += o.commits;
        self.seconds += o.seconds;
        self.log_writes += o.log_writes;
        self.log_bytes_written += o.log_bytes_written;
        self.io_stall_write_ms += o.io_stall_write_ms;
        self.log_flushes += o.log_flushes;
        self.log_bytes_flushed += o.log_bytes_flushed;
        self.writelog_waits += o.writelog_waits;
        self.writelog_wait_ms += o.writelog_wait_ms;
        self.logbuffer_waits += o.logbuffer_waits;
        self.other_cpu_seconds += o.other_cpu_seconds;
        self.device_bytes_written += o.device_bytes_written;
        self.prealloc_bytes += o.prealloc_bytes;
        self.latencies_ns.extend(o.latencies_ns);
    }

    pub(super) fn finish(mut self) -> CellResult {
        let lat = &mut self.latencies_ns;
        lat.sort_unstable();
        let (c, secs, w, b) = (
            self.commits as f64,
            self.seconds,
            self.log_writes as f64,
            self.log_bytes_written,
        );
        CellResult {
            commits: self.commits,
            seconds: secs,
            commits_per_s: ratio(c, secs),
            ratio_to_ceiling: 0.0,
            log_writes: self.log_writes,
            log_writes_per_s: ratio(w, secs),
            log_bytes_written: b,
            bytes_per_write: ratio(b as f64, w),
            io_stall_write_ms: self.io_stall_write_ms,
            stall_per_write_ms: ratio(self.io_stall_write_ms, w),
            log_flushes: self.log_flushes,
            log_bytes_flushed: self.log_bytes_flushed,
            commits_per_flush: ratio(c, self.log_flushes as f64),
            prealloc_bytes: self.prealloc_bytes,
            writelog_waits: self.writelog_waits,
            writelog_wait_ms: self.writelog_wait_ms,
            writelog_avg_ms: ratio(self.writelog_wait_ms, self.writelog_waits as f64),
            logbuffer_waits: self.logbuffer_waits,
            latency_p50_us: percentile_sorted(lat, 0.50) as f64 / 1000.0,
            latency_p99_us: percentile_sorted(lat, 0.99) as f64 / 1000.0,
            latency_max_us: lat.last().copied().unwrap_or(0) as f64 / 1000.0,
            interleaved_ceiling_dsync_4k: Vec::new(),
            ratio_to_interleaved_ceiling: None,
            other_cpu: ratio(self.other_cpu_seconds, secs),
            other_disk_write_mb_per_s: ratio(
                self.device_bytes_written
                    .saturating_sub(b + self.prealloc_bytes) as f64
                    / 1e6,
                secs,
            ),
        }
    }
}

/// An instance with the benchmark table.
pub(super) struct Bench {
    inst: Instance,
    db: Arc<Database>,
    table: Arc<Table>,
    admin: Arc<Session>,
    mode: Mode,
}

pub(super) fn instance_config(dir: &Path, cfg: &LogBenchConfig, sync: SyncMode) -> InstanceConfig {
    let mut ic = InstanceConfig::new(dir);
    ic.log = cfg.log_config(sync);
    // Checkpoints run between cells instead, so none lands inside one.
    ic.background_checkpoints = false;
    ic
}

impl Bench {
    pub(super) fn open(dir: &Path, cfg: &LogBenchConfig, sync: SyncMode) -> Result<Bench> {
        let inst = Instance::open(instance_config(dir, cfg, sync))?;
        let db = inst.database("walden")?;
        let admin = inst.new_session();
        let table = db.create_table(
            &admin,
            TableDef::new(
                "t",
                vec![
                    ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                    ColumnDef::new("v", DataType::Int),
                ],
                &["id"],
            )?,
        )?;
        db.log().prepare_spare(Duration::from_secs(30));
        Ok(Bench {
            inst,
            db,
            table,
            admin,
            mode: Mode::Durable,
        })
    }

    /// Sets the mode and brings the database back to the same starting state.
    fn prepare(&mut self, mode: Mode) -> Result<()> {
        if mode != self.mode {
            let dd = match mode {
                Mode::Durable => DelayedDurability::Disabled,
                Mode::Delayed => DelayedDurability::Forced,
            };
            self.db
                .alter_settings(&self.admin, |s| s.delayed_durability = dd)?;
            self.mode = mode;
        }
        self.db.truncate(&self.admin, "t")?;
        // TRUNCATE made the table anew: a handle to the old one is stale.
        self.table = self.db.table("t")?;
        self.db.checkpoint()?;
        self.db.log().prepare_spare(Duration::from_secs(30));
        Ok(())
    }

    pub(super) fn run_cell(&mut self, mode: Mode, sessions: usize, secs: f64) -> Result<RawCell> {
        self.prepare(mode)?;
        let db = &self.db;
        let table = &self.table;
        let sess: Vec<Arc<Session>> = (0..sessions).map(|_| self.inst.new_session()).collect();
        let stop = AtomicBool::new(false);
        let barrier = Barrier::new(sessions + 1);
        let dev0 = device_sample(db.dir());
        let cpu0 = CpuSample::now();
        let fs0 = db.log_file_stats().snapshot();
        let flushes0 = db.log().counters().log_flushes.load(Relaxed);
        let flushed0 = db.log().counters().log_bytes_flushed.load(Relaxed);
        let (elapsed, outs) = std::thread::scope(|sc| {
            let handles: Vec<_> = sess
                .iter()
                .map(|s| {
                    let (stop, barrier) = (&stop, &barrier);
                    sc.spawn(move || -> Result<(u64, Vec<u32>)> {
                        let mut lat: Vec<u32> = Vec::with_capacity(1 << 16);
                        barrier.wait();
                        let mut i: i64 = 0;
                        let r = (|| {
                            while !stop.load(Relaxed) {
                                let t0 = Instant::now();
                                let mut tx = db.begin(s);
                                tx.insert_into(table, vec![None, Some(Value::Int(i))])?;
                                tx.commit(CommitRequest::Default)?;
                                let ns = t0.elapsed().as_nanos();
                                lat.push(ns.min(u32::MAX as u128) as u32);
                                i += 1;
                            }
                            Ok::<(), BenchError>(())
                        })();
                        if r.is_err() {
                            stop.store(true, Relaxed);
                        }
                        r.map(|_| (i as u64, lat))
                    })
                })
                .collect();
            barrier.wait();
            let t0 = Instant::now();
            let deadline = t0 + Duration::from_secs_f64(secs);
            while !stop.load(Relaxed) {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
            }
            stop.store(true, Relaxed);
            let outs: Vec<_> = handles
                .into_iter()
                .map(|h| h.join().expect("bench session panicked"))
                .collect();
            (t0.elapsed().as_secs_f64(), outs)
        });
        let other_cpu = cpu0.other_cpus_since();
        let dev1 = device_sample(db.dir());
        // Count the bytes of the last delayed commits too.
        db.flush_log(&self.admin)?;
        let fs1 = db.log_file_stats().snapshot();
        let flushes = db.log().counters().log_flushes.load(Relaxed) - flushes0;
        let flushed = db.log().counters().log_bytes_flushed.load(Relaxed) - flushed0;
        let mut commits = 0;
        let mut lat = Vec::new();
        for o in outs {
            let (n, l) = o?;
            commits += n;
            lat.extend(l);
        }
        // Free the rows now rather than at the next cell.
        self.db.truncate(&self.admin, "t")?;
        let mut raw = RawCell {
            commits,
            seconds: elapsed,
            log_writes: fs1.num_of_writes - fs0.num_of_writes,
            log_bytes_written: fs1.num_of_bytes_written - fs0.num_of_bytes_written,
            io_stall_write_ms: fs1.io_stall_write_ms - fs0.io_stall_write_ms,
            prealloc_bytes: fs1.prealloc_bytes - fs0.prealloc_bytes,
            log_flushes: flushes,
            log_bytes_flushed: flushed,
            other_cpu_seconds: other_cpu * elapsed,
            device_bytes_written: match (dev0, dev1) {
                (Some(a), Some(b)) => b.bytes_written.saturating_sub(a.bytes_written),
                _ => 0,
            },
            latencies_ns: lat,
            ..RawCell::default()
        };
        for s in &sess {
            let w = s.waits.get(WaitType::WriteLog);
            raw.writelog_waits += w.waiting_tasks_count;
            raw.writelog_wait_ms += w.wait_time_ms;
            raw.logbuffer_waits += s.waits.get(WaitType::LogBuffer).waiting_tasks_count;
        }
        Ok(raw)
    }

    pub(super) fn close(self) -> Result<()> {
        self.inst.close()?;
        Ok(())
    }
}

/// Writes about `cfg.recovery_bytes` of log that no checkpoint covers, then
/// stops the instance without a checkpoint.
pub(super) fn make_recovery_log(dir: &Path, cfg: &LogBenchConfig) -> Result<RecoverySetup> {
    let inst = Instance::open(instance_config(dir, cfg, SyncMode::Fdatasync))?;
    let db = inst.database("walden")?;
    let s = inst.new_session();
    let t = db.create_table(
        &s,
        TableDef::new(
            "r",
            vec![
                ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                ColumnDef::new("payload", DataType::Text),
            ],
            &["id"],
        )?,
    )?;
    db.alter_settings(&s, |st| st.delayed_durability = DelayedDurability::Forced)?;
    db.log().prepare_spare(Duration::from_secs(30));
    let start = db.log().end_lsn();
    let payload: String = (0..cfg.recovery_row_bytes.max(1))
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let t0 = Instant::now();
    let (mut txns, mut rows) = (0u64, 0u64);
    while db.log().end_lsn() - start < cfg.recovery_bytes {
        let mut tx = db.begin(&s);
        for _ in 0..cfg.recovery_rows_per_txn.max(1) {
            tx.insert_into(&t, vec![None, Some(Value::text(&payload))])?;
            rows += 1;
        }
        tx.commit(CommitRequest::Default)?;
        txns += 1;
    }
    db.flush_log(&s)?;
    let secs = t0.elapsed().as_secs_f64();
    let log_bytes = db.log().end_lsn() - start;
    db.log().prepare_spare(Duration::from_secs(30));
    inst.shutdown_nowait()?;
    drop(db);
    drop(inst);
    Ok(RecoverySetup {
        log_bytes,
        transactions: txns,
        rows,
        seconds: secs,
        write_mb_per_s: ratio(log_bytes as f64 / 1e6, secs),
    })
}

/// Opens the recovery instance once, timed, and stops it again without a checkpoint.
pub(super) fn recover_once(dir: &Path, cfg: &LogBenchConfig, cold: bool) -> Result<RecoveryRun> {
    let db_dir = dir.join("walden");
    if cold {
        evict_dir(&db_dir.join("log"))?;
        evict_dir(&db_dir.join("data"))?;
        evict_dir(dir)?;
    }
    let t0 = Instant::now();
    let inst = Instance::open(instance_config(dir, cfg, SyncMode::Fdatasync))?;
    let open = t0.elapsed().as_secs_f64();
    let db = inst.database("walden")?;
    let rep = db.recovery_report();
    let span = db.log().end_lsn() - db.checkpoint_lsn();
    let run = RecoveryRun {
        cold,
        open_seconds: open,
        log_recovery_seconds: rep.elapsed.as_secs_f64(),
        lsn_span_bytes: span,
        bytes_read: rep.scan.bytes_read,
        records: rep.scan.records,
        mb_per_s: ratio(span as f64 / 1e6, open),
        read_mb_per_s: ratio(rep.scan.bytes_read as f64 / 1e6, open),
    };
    db.log().prepare_spare(Duration::from_secs(30));
    inst.shutdown_nowait()?;
    Ok(run)
}

pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Machine-wide busy CPU time and this process's CPU time at one moment.
pub(super) struct CpuSample {
    at: Instant,
    busy: Option<f64>,
    own: f64,
}

impl CpuSample {
    fn now() -> CpuSample {
        CpuSample {
            at: Instant::now(),
            busy: machine_busy_seconds(),
            own: own_cpu_seconds(),
        }
    }
    /// CPUs' worth of time used by other processes since `self` (0 if unknown).
    fn other_cpus_since(&self) -> f64 {
        let now = CpuSample::now();
        let (Some(b0), Some(b1)) = (self.busy, now.busy) else {
            return 0.0;
        };
        let wall = now.at.duration_since(self.at).as_secs_f64();
        ratio(((b1 - b0) - (now.own - self.own)).max(0.0), wall)
    }
}

/// Busy CPU seconds of the whole machine since boot (`/proc/stat`).
pub(super) fn machine_busy_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 8 {
        return None;
    }
    // user nice system idle iowait irq softirq steal
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some(busy as f64 / if hz > 0 { hz as f64 } else { 100.0 })
}

/// User and system CPU seconds of this process (all threads).
pub(super) fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
