//! The parent's side of `walden crash-test`: spawning and killing a child,
//! then reopening the instance and checking what recovery kept.

use super::*;

impl Tester<'_> {
    pub(super) fn spawn_child(&mut self, run: u32, acks: &Path) -> Result<Child, String> {
        let mut cmd = Command::new(&self.exe);
        cmd.arg("crash-test-child")
            .arg("--data")
            .arg(&self.data)
            .arg("--acks")
            .arg(acks)
            .arg("--run")
            .arg(run.to_string())
            .arg("--mode")
            .arg(self.args.mode.as_str())
            .arg("--sessions")
            .arg(self.args.sessions.to_string())
            .arg("--seed")
            .arg(self.rng.gen::<u64>().to_string());
        if let Some(b) = self.args.max_exposure_bytes {
            cmd.arg("--max-exposure-bytes").arg(b.to_string());
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()))
    }

    /// Spawns a child, kills it, and checks what recovery kept.
    pub(super) fn one_kill(&mut self, run: u32) -> Result<KillRecord, String> {
        let mut rec = KillRecord {
            run,
            ..KillRecord::default()
        };
        let acks_path = self.acks_dir.join(format!("run-{run:05}.log"));
        let t0 = Instant::now();
        let mut child = self.spawn_child(run, &acks_path)?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        rec.early = self.rng.gen_bool(EARLY_KILL_PROBABILITY);
        if rec.early {
            std::thread::sleep(Duration::from_millis(self.rng.gen_range(0..50)));
        } else {
            match rx.recv_timeout(READY_TIMEOUT) {
                Ok(l) if l == "ready" => rec.ready = true,
                Ok(l) => rec.violation(Kind::Child, format!("unexpected child output {l:?}")),
                Err(mpsc::RecvTimeoutError::Timeout) => rec.violation(
                    Kind::Child,
                    format!("child not ready after {} s", READY_TIMEOUT.as_secs()),
                ),
                Err(mpsc::RecvTimeoutError::Disconnected) => {}
            }
            if rec.ready {
                std::thread::sleep(Duration::from_millis(self.rng.gen_range(50..=300)));
            }
        }
        let exited_early = child.try_wait().ok().flatten();
        let _ = child.kill(); // SIGKILL on Unix
        let status = child
            .wait()
            .map_err(|e| format!("cannot wait for the child: {e}"))?;
        rec.ran_ms = t0.elapsed().as_millis() as u64;
        let _ = reader.join();
        if rx.try_iter().any(|l| l == "ready") {
            rec.ready = true;
        }
        if let Some(st) = exited_early {
            rec.violation(
                Kind::Child,
                format!("child exited on its own before the kill ({st})"),
            );
        } else if !killed_by_sigkill(&status) {
            rec.violation(
                Kind::Child,
                format!("child ended with {status}, not SIGKILL"),
            );
        }

        let _ = fs::remove_dir_all(&self.image);
        copy_dir_all(&self.data, &self.image)
            .map_err(|e| format!("cannot copy the crash image: {e}"))?;

        self.check(run, &acks_path, &mut rec);
        Ok(rec)
    }

    /// Reopens the instance and checks it against the acknowledgements.
    pub(super) fn check(&mut self, run: u32, acks_path: &Path, rec: &mut KillRecord) {
        let t0 = Instant::now();
        let inst = match Instance::open(instance_config(&self.data)) {
            Ok(i) => i,
            Err(e) => {
                rec.violation(Kind::Sanity, format!("recovery failed: {e}"));
                return;
            }
        };
        rec.recovery_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let db = match inst.database("walden") {
            Ok(db) => db,
            Err(e) => {
                // Tolerated only while nothing was ever committed: the kill
                // interrupted the instance's creation.
                let acked = read_acks(acks_path).map(|a| a.len()).unwrap_or(1);
                if self.recovered.is_empty() && acked == 0 {
                    rec.default_database_missing = true;
                } else {
                    rec.violation(Kind::Sanity, format!("database after recovery: {e}"));
                }
                if let Err(e) = inst.close() {
                    rec.violation(Kind::Sanity, format!("clean close failed: {e}"));
                }
                return;
            }
        };
        self.check_db(run, acks_path, &inst, &db, rec);
        if !rec.violations.is_empty() {
            let r = db.recovery_report();
            eprintln!(
                "crash-test: kill {run}: recovery report: {:?}; checkpoint LSN {}",
                r,
                db.checkpoint_lsn()
            );
        }
        if let Err(e) = inst.close() {
            rec.violation(Kind::Sanity, format!("clean close failed: {e}"));
        }
        self.close_checkpoint_lsn = db.checkpoint_lsn();
    }

    pub(super) fn check_db(
        &mut self,
        run: u32,
        acks_path: &Path,
        inst: &Instance,
        db: &Arc<Database>,
        rec: &mut KillRecord,
    ) {
        // (e) The state right after recovery.
        let end = db.log().end_lsn();
        let report = db.recovery_report();
        rec.recovered_end_lsn = end;
        rec.scan_end_lsn = report.scan.end_lsn;
        rec.records_replayed = report.scan.records;
        rec.tail_cut = report.scan.cut.as_ref().map(|c| {
            format!(
                "{} offset {} (LSN {}): {}",
                c.file.display(),
                c.offset,
                c.lsn,
                c.reason
            )
        });
        rec.checkpoint_lsn = db.checkpoint_lsn();
        rec.from_child_checkpoint = rec.checkpoint_lsn > self.close_checkpoint_lsn;
        let exp = db.exposure();
        if exp.unhardened_commits != 0
            || exp.unhardened_bytes != 0
            || exp.hardened_lsn != exp.end_lsn
            || exp.end_lsn != end
        {
            rec.violation(
                Kind::Sanity,
                format!("exposure after recovery is not empty: {exp:?} (end of log {end})"),
            );
        }
        if end != report.scan.end_lsn {
            rec.violation(
                Kind::Sanity,
                format!(
                    "end of log {end} differs from the recovery scan's end {}",
                    report.scan.end_lsn
                ),
            );
        }
        // A kill during set-up can leave a log with nothing in it yet; only a
        // log with records must have been read.
        let reads = db.log_file_stats().snapshot().num_of_reads;
        if reads == 0 && report.scan.end_lsn > 0 {
            rec.violation(
                Kind::Sanity,
                "recovery read no log (num_of_reads = 0)".into(),
            );
        }

        let acks = match read_acks(acks_path) {
            Ok(a) => a,
            Err(e) => {
                rec.violation(Kind::Sanity, e);
                return;
            }
        };
        let (txns, counters) = match read_tables(db, rec) {
            Ok(v) => v,
            Err(e) => {
                rec.violation(Kind::Sanity, format!("cannot read the tables: {e}"));
                return;
            }
        };
        rec.transactions_present = txns.len() as u64;
        let run_i = run as i64;

        // (c) Whole transactions; (b) no gap in a session's sequence; (c)
        // counters equal the highest present sequence.
        let mut max_seq: BTreeMap<i64, i64> = BTreeMap::new();
        for (&(session, seq), p) in &txns {
            let want: Vec<i64> = (0..p.parts).collect();
            if p.seen != want {
                rec.violation(
                    Kind::Partial,
                    format!(
                        "session {session} seq {seq} (run {}): parts {:?} present of {}",
                        p.run, p.seen, p.parts
                    ),
                );
            }
            if p.run > run_i || p.run < 1 {
                rec.violation(
                    Kind::Sanity,
                    format!("session {session} seq {seq} carries run {}", p.run),
                );
            }
            let expected = max_seq.get(&session).copied().unwrap_or(0) + 1;
            if seq != expected {
                rec.violation(
                    Kind::Prefix,
                    format!(
                        "session {session}: seq {seq} present but seq {expected}..{} missing",
                        seq - 1
                    ),
                );
            }
            max_seq.insert(session, seq);
        }
        for (&session, &n) in &counters {
            let m = max_seq.get(&session).copied().unwrap_or(0);
            if n != m {
                rec.violation(
                    Kind::Counter,
                    format!("counters.n of session {session} is {n}, highest present seq is {m}"),
                );
            }
        }
        for (&session, &m) in &max_seq {
            if !counters.contains_key(&session) {
                rec.violation(
                    Kind::Counter,
                    format!("session {session} has rows up to seq {m} but no counters row"),
                );
            }
        }

        // Deletes and transactions of several log records (churn), and the
        // run's DDL statements.
        for v in crash_workload::check_churn(db, &counters) {
            rec.violation(Kind::Churn, v);
        }
        let (ddl, bad) = crash_workload::check_ddl(
            db,
            run_i,
            &crash_workload::ddl_acks(acks_path),
            !self.args.mode.expect_durable(false),
        );
        rec.ddl_acked = ddl;
        for v in bad {
            rec.violation(Kind::Ddl, v);
        }

        // Commits present after an earlier recovery must still be there.
        let mut lost_recovered = 0u64;
        for (&(session, seq), &r) in &self.recovered {
            if txns.get(&(session, seq)).map(|p| p.run) != Some(r) {
                lost_recovered += 1;
                if lost_recovered <= 20 {
                    rec.violation(
                        Kind::LostRecovered,
                        format!(
                            "session {session} seq {seq} (run {r}) was present after an earlier \
                             recovery and is missing now"
                        ),
                    );
                }
            }
        }
        if lost_recovered > 20 {
            rec.violation(
                Kind::LostRecovered,
                format!(
                    "... and {} more recovered commits missing",
                    lost_recovered - 20
                ),
            );
        }

        // The acknowledgements of this run.
        let mut seen = HashMap::new();
        let mut max_present_lsn = 0u64;
        let mut status = Vec::with_capacity(acks.len());
        for a in &acks {
            rec.acks += 1;
            if a.durable {
                rec.durable_acks += 1;
            } else {
                rec.delayed_acks += 1;
            }
            if seen.insert((a.session, a.seq), a.lsn).is_some() {
                rec.violation(
                    Kind::Sanity,
                    format!("session {} seq {} acknowledged twice", a.session, a.seq),
                );
            }
            if a.durable != self.args.mode.expect_durable(a.requested_delayed) {
                rec.violation(
                    Kind::Mode,
                    format!(
                        "session {} seq {} asked for a {} commit in mode {} and got a {} one",
                        a.session,
                        a.seq,
                        if a.requested_delayed {
                            "delayed"
                        } else {
                            "durable"
                        },
                        self.args.mode.as_str(),
                        if a.durable { "durable" } else { "delayed" }
                    ),
                );
            }
            let p = txns.get(&(a.session, a.seq));
            let present = p.is_some_and(|p| p.run == run_i);
            if let Some(p) = p {
                if p.run != run_i {
                    rec.violation(
                        Kind::Sanity,
                        format!(
                            "session {} seq {} acknowledged in run {run} but its rows are from run {}",
                            a.session, a.seq, p.run
                        ),
                    );
                } else if p.parts != a.parts {
                    rec.violation(
                        Kind::Partial,
                        format!(
                            "session {} seq {}: {} rows acknowledged, {} recorded",
                            a.session, a.seq, a.parts, p.parts
                        ),
                    );
                }
            }
            if present {
                max_present_lsn = max_present_lsn.max(a.lsn);
            }
            status.push(present);
        }
        for (a, &present) in acks.iter().zip(&status) {
            let what = format!(
                "{} commit session {} seq {} (LSN {}, recovered end {end})",
                if a.durable { "durable" } else { "delayed" },
                a.session,
                a.seq,
                a.lsn
            );
            if !present {
                if a.durable {
                    rec.violation(Kind::LostDurable, format!("acknowledged {what} is missing"));
                } else {
                    rec.lost_delayed += 1;
                    let exposure = a.lsn.saturating_sub(end);
                    rec.max_lost_exposure_bytes = rec.max_lost_exposure_bytes.max(exposure);
                    if let Some(b) = self.args.max_exposure_bytes {
                        if exposure > b {
                            rec.violation(
                                Kind::Bound,
                                format!("lost {what} lies {exposure} B past the end, bound {b} B"),
                            );
                        }
                    }
                }
            }
            // (b) Prefix: absent ones must all come after every present one,
            // and the recovered end of log splits present from absent.
            if !present && (a.lsn < max_present_lsn || a.lsn <= end) {
                rec.violation(
                    Kind::Prefix,
                    format!(
                        "acknowledged {what} is missing although the commit at LSN \
                         {max_present_lsn} survived or it lies within the recovered log"
                    ),
                );
            } else if present && a.lsn > end {
                rec.violation(
                    Kind::Prefix,
                    format!("acknowledged {what} is present beyond the recovered end of log"),
                );
            }
        }

        // (e) A new commit succeeds (durable unless FORCED makes it delayed)
        // and, after a log flush, is hardened.
        let s = inst.new_session();
        match probe_commit(db, &s, run_i) {
            Ok((lsn, durable)) => {
                if durable != self.args.mode.expect_durable(false) || lsn <= end {
                    rec.violation(
                        Kind::Sanity,
                        format!(
                            "probe commit after recovery: LSN {lsn} (end was {end}), durable {durable}"
                        ),
                    );
                }
                if let Err(e) = db.flush_log(&s) {
                    rec.violation(Kind::Sanity, format!("flush after the probe commit: {e}"));
                }
                let exp = db.exposure();
                if exp.hardened_lsn < lsn || exp.unhardened_commits != 0 {
                    rec.violation(
                        Kind::Sanity,
                        format!("after the probe commit at LSN {lsn} and a flush: {exp:?}"),
                    );
                }
            }
            Err(e) => rec.violation(
                Kind::Sanity,
                format!("a new commit after recovery failed: {e}"),
            ),
        }

        for (k, p) in txns {
            self.recovered.insert(k, p.run);
        }
    }
}

/// A commit asking to be durable to the `probe` table (created if the child never got to it).
pub(super) fn probe_commit(
    db: &Arc<Database>,
    s: &Arc<Session>,
    run: i64,
) -> Result<(u64, bool), String> {
    if db.table(PROBE).is_err() {
        db.create_table(s, probe_def()).map_err(|e| e.to_string())?;
    }
    let mut tx = db.begin(s);
    let key = [Value::Int(0)];
    let row = vec![Value::Int(0), Value::Int(run)];
    let exists = tx
        .get_for_update(PROBE, &key)
        .map_err(|e| e.to_string())?
        .is_some();
    if exists {
        tx.update(PROBE, &key, row).map_err(|e| e.to_string())?;
    } else {
        tx.insert(PROBE, row.into_iter().map(Some).collect())
            .map_err(|e| e.to_string())?;
    }
    let out = tx
        .commit(CommitRequest::Durable)
        .map_err(|e| e.to_string())?;
    Ok((out.lsn.unwrap_or(0), out.durable))
}

pub(super) type Txns = BTreeMap<(i64, i64), Present>;

/// Reads `crash` (grouped by transaction) and `counters`. A missing table
/// (the child was killed before creating it) reads as empty.
pub(super) fn read_tables(
    db: &Arc<Database>,
    rec: &mut KillRecord,
) -> Result<(Txns, BTreeMap<i64, i64>), String> {
    let mut txns: Txns = BTreeMap::new();
    if let Ok(t) = db.table(CRASH) {
        // In key order, so parts come in order within a transaction.
        for (key, row) in t.latest_rows().map_err(|e| e.to_string())? {
            if row.len() != 6 {
                return Err(format!("crash row with {} columns", row.len()));
            }
            let id = int(&key[0])?;
            let (session, seq, part, parts, run) = (
                int(&row[1])?,
                int(&row[2])?,
                int(&row[3])?,
                int(&row[4])?,
                int(&row[5])?,
            );
            if id != row_id(session, seq, part) {
                rec.violation(
                    Kind::Sanity,
                    format!(
                        "crash row id {id} does not match session {session} seq {seq} part {part}"
                    ),
                );
            }
            let p = txns.entry((session, seq)).or_insert(Present {
                run,
                parts,
                seen: Vec::new(),
            });
            if p.run != run || p.parts != parts {
                rec.violation(
                    Kind::Partial,
                    format!(
                        "session {session} seq {seq} mixes rows of run {} ({} parts) and run {run} ({parts} parts)",
                        p.run, p.parts
                    ),
                );
            }
            p.seen.push(part);
        }
    } else if db.table(COUNTERS).is_ok() {
        return Err("table counters exists but crash does not".into());
    }
    let mut counters = BTreeMap::new();
    if let Ok(t) = db.table(COUNTERS) {
        for (_, row) in t.latest_rows().map_err(|e| e.to_string())? {
            counters.insert(int(&row[0])?, int(&row[1])?);
        }
    }
    Ok((txns, counters))
}
