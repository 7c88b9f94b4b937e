//! Opening the log: replaying it from a checkpoint LSN, cutting off a torn
//! tail, and starting the flusher; and creating an empty log at an LSN.

use super::*;

impl LogManager {
    /// [`LogManager::open`] with what a control file knows about the log.
    pub fn open_with(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        cfg: LogConfig,
        stats: Arc<FileStats>,
        from: Lsn,
        bounds: OpenBounds,
        on_record: &mut RecordSink<'_>,
    ) -> Result<(LogManager, RecoveryReport)> {
        cfg.validate().map_err(LogError::Config)?;
        let t0 = Instant::now();
        crate::vfs::create_dir_durable(&*vfs, dir).map_err(io_err(dir))?;
        let mut spares = Vec::new();
        let mut next_spare = 0;
        for name in vfs.list(dir).map_err(io_err(dir))? {
            if name.ends_with(".new") {
                // An interrupted preallocation.
                let _ = vfs.remove_file(&dir.join(&name));
            } else if let Some(n) = block::parse_spare_name(&name) {
                spares.push(dir.join(&name));
                next_spare = next_spare.max(n);
            }
        }
        let counting = CountingVfs {
            inner: vfs.clone(),
            stats: stats.clone(),
        };
        let outcome = scan::scan(
            &counting,
            dir,
            ScanOptions {
                from,
                max_block: cfg.block_size.max(scan::MAX_BLOCK),
                on_record,
                on_block: None,
            },
        )?;
        // Checked before any repair, so nothing is zeroed on a log that
        // lost hardened records.
        let required = bounds.min_end.max(from);
        if outcome.end_lsn < required {
            return Err(LogError::EndsEarly {
                dir: dir.to_path_buf(),
                end: outcome.end_lsn,
                required,
            });
        }
        let files = Arc::new(SegmentFiles {
            vfs: vfs.clone(),
            dir: dir.to_path_buf(),
            size: cfg.segment_size,
            dsync: cfg.sync_mode == SyncMode::Dsync,
            stats: stats.clone(),
            list: Mutex::new(Segments {
                active: outcome.segments.clone(),
                spares,
                next_spare,
                preallocating: false,
            }),
        });
        let mut on_disk = 0;
        for name in vfs.list(dir).map_err(io_err(dir))? {
            if block::parse_segment_name(&name).is_some()
                || block::parse_spare_name(&name).is_some()
            {
                if let Ok(f) = vfs.open(&dir.join(&name), OpenOptionsVfs::default()) {
                    on_disk += f.len().unwrap_or(0);
                }
            }
        }
        stats.size_on_disk_bytes.store(on_disk, Relaxed);

        // Remove what lies past the valid end so it can never be mistaken for
        // a continuation of the log written from now on.
        // A torn batch of the previous writer reaches at most its max_write
        // past the end (unknown: clear the whole rest of the segment).
        let zero_span = match bounds.prior_max_write {
            Some(m) => m.max(cfg.max_write) + PAGE,
            None => cfg.segment_size as usize,
        };
        for p in &outcome.discard {
            let f = vfs.open(p, OpenOptionsVfs::default()).map_err(io_err(p))?;
            let n = zero_span.min(f.len().map_err(io_err(p))? as usize);
            f.write_at(&vec![0u8; n], 0).map_err(io_err(p))?;
            f.sync_data().map_err(io_err(p))?;
            files.recycle(p)?;
        }
        let writer = if let Some(last) = outcome.segments.last() {
            let f = files.open_for_write(&last.path)?;
            let mut off = outcome.append_offset;
            // Always clear what a torn batch may have left past the end: a valid
            // but unsynced block there could otherwise pass for a continuation
            // of the log written from now on.
            if off < cfg.segment_size {
                let n = (zero_span as u64).min(cfg.segment_size - off) as usize;
                f.write_at(&vec![0u8; n], off).map_err(io_err(&last.path))?;
                f.sync_data().map_err(io_err(&last.path))?;
            }
            if off < SEGMENT_HEADER as u64 {
                off = SEGMENT_HEADER as u64;
            }
            Writer::new(f, last.seq, off, Vec::new())
        } else {
            let (f, header) = files.activate(1, outcome.end_lsn)?;
            // Make the empty log durable now so a crash before the first commit
            // still finds a valid segment.
            f.write_at(&header, 0).map_err(io_err(dir))?;
            f.sync_data().map_err(io_err(dir))?;
            Writer::new(f, 1, SEGMENT_HEADER as u64, Vec::new())
        };
        let mut writer = writer;
        let spare_due = writer.take_spare_due(&cfg);
        if !outcome.discard.is_empty() || outcome.segments.is_empty() {
            vfs.sync_dir(dir).map_err(io_err(dir))?;
        }
        let end = outcome.end_lsn;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                buf: Vec::with_capacity(cfg.block_size * 2),
                buf_lsn: end,
                end_lsn: end,
                hardened: end,
                buf_since: None,
                flush_target: end,
                waiters: BTreeMap::new(),
                next_waiter: 0,
                exposure: VecDeque::new(),
                max_exposure_bytes: cfg.max_exposure_bytes,
                max_exposure: cfg.max_exposure,
                flush_ewma: Duration::from_micros(500),
                poisoned: None,
                shutdown: false,
                closed: false,
                writer: Some(writer),
                flusher_wants_writer: false,
                flusher_idle: false,
            }),
            cfg,
            flusher_cv: Condvar::new(),
            space_cv: Condvar::new(),
            files,
            counters: LogCounters::default(),
            subscribers: Mutex::new(Vec::new()),
            has_subscribers: AtomicBool::new(false),
            waker: spawn_waker(),
        });
        if spare_due {
            shared.files.ensure_spare();
        }
        let s2 = shared.clone();
        let handle = std::thread::Builder::new()
            .name("walden-log-flusher".into())
            .spawn(move || flusher(s2))
            .map_err(io_err(dir))?;
        let report = RecoveryReport {
            scan: outcome,
            elapsed: t0.elapsed(),
        };
        Ok((
            LogManager {
                shared,
                flusher: Mutex::new(Some(handle)),
            },
            report,
        ))
    }

    /// Creates an empty log whose first record will have LSN `lsn` (for a
    /// database restored from backups, whose history starts there).
    pub fn init_at(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        cfg: &LogConfig,
        stats: Arc<FileStats>,
        lsn: Lsn,
    ) -> Result<()> {
        crate::vfs::create_dir_durable(&*vfs, dir).map_err(io_err(dir))?;
        if vfs
            .list(dir)
            .map_err(io_err(dir))?
            .iter()
            .any(|n| block::parse_segment_name(n).is_some())
        {
            return Err(LogError::Config(format!(
                "{} already holds a log",
                dir.display()
            )));
        }
        let files = SegmentFiles {
            vfs: vfs.clone(),
            dir: dir.to_path_buf(),
            size: cfg.segment_size,
            dsync: false,
            stats,
            list: Mutex::new(Segments {
                active: Vec::new(),
                spares: Vec::new(),
                next_spare: 0,
                preallocating: false,
            }),
        };
        let (f, header) = files.activate(1, lsn)?;
        f.write_at(&header, 0).map_err(io_err(dir))?;
        f.sync_data().map_err(io_err(dir))?;
        Ok(())
    }
}
