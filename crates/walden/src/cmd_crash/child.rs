//! The child of `walden crash-test`: opens the instance, runs the writing
//! sessions and the checkpointer until killed, and records each
//! acknowledgement in a side file (see the parent module).

use super::*;

// ---------------------------------------------------------------------------
// The child
// ---------------------------------------------------------------------------

/// The side file of acknowledgements: one `write` per line (`O_APPEND`) under
/// a mutex, then `fdatasync`. The sync runs outside the mutex so concurrent
/// sessions' syncs overlap; each line is on disk when its own sync returns.
pub(super) struct AckLog {
    file: File,
    lock: Mutex<()>,
}

impl AckLog {
    fn open(path: &Path) -> std::io::Result<AckLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AckLog {
            file,
            lock: Mutex::new(()),
        })
    }

    fn record(&self, line: &str) -> std::io::Result<()> {
        {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let n = (&self.file).write(line.as_bytes())?;
            if n != line.len() {
                return Err(std::io::Error::other(format!(
                    "short write to the ack file ({n} of {} bytes)",
                    line.len()
                )));
            }
        }
        self.file.sync_data()
    }
}

pub(super) fn child_fail(what: impl std::fmt::Display) -> ! {
    eprintln!("crash-test-child: {what}");
    std::process::exit(EXIT_CHILD_ERROR);
}

/// Runs the child: set up, report `ready` on stdout, then write until killed.
pub fn run_child(args: CrashChildArgs) -> ExitCode {
    let inst = Instance::open(instance_config(&args.data))
        .unwrap_or_else(|e| child_fail(format!("open {}: {e}", args.data.display())));
    // A kill during the very first open can leave an instance whose default
    // database was never created (see `KillRecord::default_database_missing`).
    let db = inst
        .database("walden")
        .or_else(|_| inst.create_database("walden"))
        .unwrap_or_else(|e| child_fail(format!("database: {e}")));
    let setup = inst.new_session();
    let starts = child_setup(&db, &setup, &args).unwrap_or_else(|e| child_fail(e));
    let acks = Arc::new(
        AckLog::open(&args.acks)
            .unwrap_or_else(|e| child_fail(format!("cannot open {}: {e}", args.acks.display()))),
    );

    let mut threads = Vec::new();
    for (session, start) in starts.into_iter().enumerate() {
        let (inst, db, acks) = (inst.clone(), db.clone(), acks.clone());
        let acks_path = args.acks.clone();
        let seed = args
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(((args.run as u64) << 16) | session as u64);
        let run = args.run as i64;
        threads.push(std::thread::spawn(move || {
            let s = inst.new_session();
            let worker = Worker {
                db: &db,
                session: &s,
                acks: &acks,
                id: session as i64,
                run,
                ddl_acks: crash_workload::ddl_acks(&acks_path),
            };
            if let Err(e) = worker.run(start, seed) {
                child_fail(format!("session {session}: {e}"));
            }
        }));
    }
    {
        let db = db.clone();
        let mut rng = StdRng::seed_from_u64(args.seed ^ ((args.run as u64) << 32) ^ 0xC0FFEE);
        threads.push(std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(rng.gen_range(20..=80)));
            if let Err(e) = db.checkpoint() {
                child_fail(format!("checkpoint: {e}"));
            }
        }));
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    std::thread::sleep(Duration::from_millis(args.max_ms));
    eprintln!(
        "crash-test-child: not killed after {} ms, exiting",
        args.max_ms
    );
    std::process::exit(EXIT_CHILD_ERROR);
}

/// Creates the tables if they are missing, applies the mode's settings, makes
/// sure each session has a counters row, and returns where each session's
/// sequence continues (the highest seq that survived in `crash`).
pub(super) fn child_setup(
    db: &Arc<Database>,
    s: &Arc<Session>,
    args: &CrashChildArgs,
) -> Result<Vec<i64>, String> {
    for def in [crash_def(), counters_def(), probe_def(), churn_def()] {
        if db.table(&def.name).is_err() {
            db.create_table(s, def.clone())
                .map_err(|e| format!("create table {}: {e}", def.name))?;
        }
    }
    let cur = db.settings();
    if cur.delayed_durability != args.mode.setting()
        || cur.max_exposure_bytes != args.max_exposure_bytes
    {
        db.alter_settings(s, |st| {
            st.delayed_durability = args.mode.setting();
            st.max_exposure_bytes = args.max_exposure_bytes;
        })
        .map_err(|e| format!("alter settings: {e}"))?;
    }
    let crash = db.table(CRASH).map_err(|e| e.to_string())?;
    let counters = db.table(COUNTERS).map_err(|e| e.to_string())?;
    let mut starts = Vec::new();
    for session in 0..args.sessions as i64 {
        if counters
            .rows
            .latest(&[Value::Int(session)][..])
            .map_err(|e| e.to_string())?
            .is_none_or(|(_, r)| r.is_none())
        {
            db.run(s, CommitRequest::Durable, |tx| {
                tx.insert_into(
                    &counters,
                    vec![Some(Value::Int(session)), Some(Value::Int(0))],
                )
            })
            .map_err(|e| format!("insert counters row {session}: {e}"))?;
        }
        let lo: Box<[Value]> = vec![Value::Int(session << 40)].into();
        let hi: Box<[Value]> = vec![Value::Int((session + 1) << 40)].into();
        let last = crash
            .rows
            .scan_at(
                (
                    std::ops::Bound::Included(&lo),
                    std::ops::Bound::Excluded(&hi),
                ),
                u64::MAX,
            )
            .map_err(|e| e.to_string())?
            .last()
            .map(|(_, r)| int(&r[2]))
            .transpose()?;
        starts.push(last.unwrap_or(0));
    }
    Ok(starts)
}

/// One writing session of the child.
pub(super) struct Worker<'a> {
    db: &'a Arc<Database>,
    session: &'a Arc<Session>,
    acks: &'a AckLog,
    id: i64,
    run: i64,
    /// Side file of the DDL track's acknowledged statements.
    ddl_acks: PathBuf,
}

impl Worker<'_> {
    /// Commits transactions `start + 1`, `start + 2`, ... until killed.
    fn run(&self, start: i64, seed: u64) -> Result<(), String> {
        let (db, session) = (self.db, self.id);
        let crash = db.table(CRASH).map_err(|e| e.to_string())?;
        let counters = db.table(COUNTERS).map_err(|e| e.to_string())?;
        let churn = db.table(CHURN).map_err(|e| e.to_string())?;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut seq = start;
        let mut ddl = 0u64;
        loop {
            seq += 1;
            if session == 0 && rng.gen_bool(0.05) {
                crash_workload::ddl_step(db, self.session, self.run, ddl, &self.ddl_acks)?;
                ddl += 1;
            }
            let parts: i64 = rng.gen_range(1..=3);
            let mut tx = db.begin(self.session);
            for part in 0..parts {
                tx.insert_into(
                    &crash,
                    vec![
                        Some(Value::Int(row_id(session, seq, part))),
                        Some(Value::Int(session)),
                        Some(Value::Int(seq)),
                        Some(Value::Int(part)),
                        Some(Value::Int(parts)),
                        Some(Value::Int(self.run)),
                    ],
                )
                .map_err(|e| format!("insert seq {seq}: {e}"))?;
            }
            tx.update_in(
                &counters,
                &[Value::Int(session)],
                vec![Value::Int(session), Value::Int(seq)],
            )
            .map_err(|e| format!("update counter to {seq}: {e}"))?;
            crash_workload::churn_ops(&mut tx, &churn, session, seq)
                .map_err(|e| format!("churn of seq {seq}: {e}"))?;
            // Every mode makes both requests; the database setting decides.
            let requested_delayed = rng.gen_bool(0.5);
            let request = if requested_delayed {
                CommitRequest::Delayed
            } else {
                CommitRequest::Durable
            };
            let out = tx
                .commit(request)
                .map_err(|e| format!("commit seq {seq}: {e}"))?;
            let lsn = out
                .lsn
                .ok_or_else(|| format!("commit seq {seq} of a write transaction has no LSN"))?;
            self.acks
                .record(&format_ack(&Ack {
                    session,
                    seq,
                    requested_delayed,
                    durable: out.durable,
                    lsn,
                    parts,
                }))
                .map_err(|e| format!("ack file: {e}"))?;
        }
    }
}

// ---------------------------------------------------------------------------
// Acknowledgement lines
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Ack {
    pub(super) session: i64,
    pub(super) seq: i64,
    pub(super) requested_delayed: bool,
    pub(super) durable: bool,
    pub(super) lsn: u64,
    pub(super) parts: i64,
}

/// `<session> <seq> <requested D|L> <got D|L> <commit lsn> <parts>\n`
pub(super) fn format_ack(a: &Ack) -> String {
    let dl = |d: bool| if d { 'L' } else { 'D' };
    format!(
        "{} {} {} {} {} {}\n",
        a.session,
        a.seq,
        dl(a.requested_delayed),
        dl(!a.durable),
        a.lsn,
        a.parts
    )
}

pub(super) fn parse_ack(line: &str) -> Option<Ack> {
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() != 6 {
        return None;
    }
    let dl = |s: &str| match s {
        "D" => Some(false),
        "L" => Some(true),
        _ => None,
    };
    Some(Ack {
        session: f[0].parse().ok()?,
        seq: f[1].parse().ok()?,
        requested_delayed: dl(f[2])?,
        durable: !dl(f[3])?,
        lsn: f[4].parse().ok()?,
        parts: f[5].parse().ok()?,
    })
}

/// Reads a run's side file. A last line without its newline was cut by the
/// kill mid-write and is ignored (its `write` never completed).
pub(super) fn read_acks(path: &Path) -> Result<Vec<Ack>, String> {
    let text = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let text = String::from_utf8(text).map_err(|_| format!("{} is not UTF-8", path.display()))?;
    let mut out = Vec::new();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i + 1],
        None => "",
    };
    for (n, line) in complete.lines().enumerate() {
        out.push(
            parse_ack(line)
                .ok_or_else(|| format!("{} line {}: malformed: {line:?}", path.display(), n + 1))?,
        );
    }
    Ok(out)
}
