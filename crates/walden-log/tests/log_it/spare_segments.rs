//! The preallocated spare segment: made once the active segment is a quarter
//! full, so a log that writes little keeps one segment of disk, and made at
//! once when a measurement asks for it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use walden_log::*;

const SEG: u64 = 1 << 20;

fn cfg() -> LogConfig {
    LogConfig {
        block_size: 8192,
        segment_size: SEG,
        buffer_size: 64 * 1024,
        max_write: 32 * 1024,
        max_flush_delay: Duration::from_millis(2),
        ..LogConfig::default()
    }
}

fn open(vfs: &Arc<dyn Vfs>, dir: &Path) -> LogManager {
    LogManager::open(
        vfs.clone(),
        dir,
        cfg(),
        Arc::new(FileStats::default()),
        0,
        &mut |_, _, _| Ok(()),
    )
    .expect("open")
    .0
}

fn spares(vfs: &Arc<dyn Vfs>, dir: &Path) -> usize {
    vfs.list(dir)
        .unwrap()
        .iter()
        .filter(|n| n.starts_with("spare-"))
        .count()
}

fn dir() -> PathBuf {
    PathBuf::from("/db/log")
}

#[test]
fn a_spare_is_made_once_a_quarter_of_the_segment_is_written() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let log = open(&vfs, &dir());
    log.commit_durable(b"small", &[]).unwrap();
    // Give a (wrongly) started preallocation time to show itself.
    std::thread::sleep(Duration::from_millis(100));
    assert!(log.wait_preallocation(Duration::from_secs(10)));
    assert_eq!(spares(&vfs, &dir()), 0, "an idle log keeps one segment");

    let rec = vec![7u8; 4000];
    for _ in 0..(SEG / 4 / 4000 + 2) {
        log.commit_durable(&rec, &[]).unwrap();
    }
    assert!(log.wait_preallocation(Duration::from_secs(10)));
    assert_eq!(
        spares(&vfs, &dir()),
        1,
        "a quarter written: the spare is made"
    );

    // Across the switch the spare becomes the next segment, and the next
    // spare waits for that one's quarter.
    for _ in 0..(SEG * 3 / 4 / 4000 + 2) {
        log.commit_durable(&rec, &[]).unwrap();
    }
    assert!(log.segments().len() >= 2);
    assert!(log.wait_preallocation(Duration::from_secs(10)));
    assert_eq!(
        spares(&vfs, &dir()),
        0,
        "used by the switch, not yet remade"
    );
    log.close().unwrap();
}

#[test]
fn a_reopened_log_past_its_quarter_makes_its_spare() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let log = open(&vfs, &dir());
    let rec = vec![9u8; 4000];
    for _ in 0..(SEG / 3 / 4000) {
        log.commit_durable(&rec, &[]).unwrap();
    }
    assert!(log.wait_preallocation(Duration::from_secs(10)));
    // Remove the spare as a crash before its rename would have left things.
    for n in vfs.list(&dir()).unwrap() {
        if n.starts_with("spare-") {
            vfs.remove_file(&dir().join(n)).unwrap();
        }
    }
    log.close().unwrap();
    let log = open(&vfs, &dir());
    assert!(log.wait_preallocation(Duration::from_secs(10)));
    assert_eq!(spares(&vfs, &dir()), 1);
    log.close().unwrap();
}

#[test]
fn prepare_spare_makes_one_at_once() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let log = open(&vfs, &dir());
    assert_eq!(spares(&vfs, &dir()), 0);
    assert!(log.prepare_spare(Duration::from_secs(10)));
    assert_eq!(spares(&vfs, &dir()), 1);
    // Asked again, it keeps the one it has.
    assert!(log.prepare_spare(Duration::from_secs(10)));
    assert_eq!(spares(&vfs, &dir()), 1);
    log.close().unwrap();
}
