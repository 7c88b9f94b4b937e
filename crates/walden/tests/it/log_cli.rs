//! `walden log check` and `walden log dump` on the committed fixtures (see
//! `tests/fixtures/README.md`), run as the built binary on copies in a
//! temporary directory, and `LogManager::open` on the same fixtures.

#[path = "../support/fixture_spec.rs"]
mod fixture_spec;

use fixture_spec::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use tempfile::TempDir;
use walden_log::{FileStats, LogError, LogManager, OsVfs, RecoveryReport};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Copies a fixture (a log directory) to `into/<name>`.
fn copy_fixture(name: &str, into: &Path) -> PathBuf {
    let dst = into.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(fixture(name)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    dst
}

fn tmp_copy(name: &str) -> (TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let d = copy_fixture(name, t.path());
    (t, d)
}

fn walden(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walden"))
        .args(args)
        .output()
        .expect("run walden")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn all_output(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Parses `log OK: S segments, B blocks, R records, end LSN E`.
fn ok_line(out: &str) -> (u64, u64, u64, u64) {
    let line = out
        .lines()
        .find(|l| l.starts_with("log OK: "))
        .unwrap_or_else(|| panic!("no 'log OK' line in:\n{out}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(nums.len(), 4, "{line}");
    (nums[0], nums[1], nums[2], nums[3])
}

fn dump_json(dir: &Path, records: bool) -> Value {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("dump.json");
    let mut args = vec!["log", "dump", s(dir), "--json", s(&json)];
    if records {
        args.push("--records");
    }
    let o = walden(&args);
    assert!(o.status.success(), "{}", all_output(&o));
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

fn dir_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

type Opened = (LogManager, Vec<(u64, usize)>, RecoveryReport);

fn open_log(dir: &Path) -> Result<Opened, LogError> {
    let mut got = Vec::new();
    let (log, rep) = LogManager::open(
        Arc::new(OsVfs),
        dir,
        config(),
        Arc::new(FileStats::default()),
        0,
        &mut |_, _, r| {
            got.push(parse_record(r));
            Ok(())
        },
    )?;
    Ok((log, got, rep))
}

/// The offset of the block the corrupt fixture damaged: the clean block that
/// holds the first byte where the two fixtures differ.
fn corrupt_block_offset() -> u64 {
    let clean = std::fs::read(fixture(CLEAN).join(SEGMENT_FILE)).unwrap();
    let bad = std::fs::read(fixture(CORRUPT).join(SEGMENT_FILE)).unwrap();
    let diff = clean.iter().zip(&bad).position(|(a, b)| a != b).unwrap() as u64;
    let dump = dump_json(&fixture(CLEAN), false);
    dump["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["offset"].as_u64().unwrap(),
                b["block_len"].as_u64().unwrap(),
            )
        })
        .find(|&(off, len)| off <= diff && diff < off + len)
        .expect("the damage is inside a block")
        .0
}

#[test]
fn version_is_printed() {
    let o = walden(&["--version"]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o).trim(),
        format!("walden {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn check_clean_log_reports_every_record() {
    let (_t, dir) = tmp_copy(CLEAN);
    let o = walden(&["log", "check", s(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    let out = stdout(&o);
    let (segments, _blocks, records, _end) = ok_line(&out);
    assert_eq!(segments, 1);
    assert_eq!(records as usize, all_records().len());
    assert!(!out.contains("torn tail"), "{out}");
}

#[test]
fn check_accepts_a_database_directory() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    std::fs::create_dir(&db).unwrap();
    let log = copy_fixture(CLEAN, &db);
    std::fs::rename(&log, db.join("log")).unwrap();
    let o = walden(&["log", "check", s(&db)]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    assert_eq!(ok_line(&stdout(&o)).2 as usize, all_records().len());
}

#[test]
fn check_torn_tail_succeeds_and_reports_the_cut() {
    let (_t, dir) = tmp_copy(TORN);
    let o = walden(&["log", "check", s(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    let out = stdout(&o);
    let (_, torn_blocks, records, end) = ok_line(&out);
    assert!(out.contains("torn tail"), "{out}");
    assert!(out.contains(SEGMENT_FILE), "{out}");

    // Exactly the last block and its records are missing.
    let clean = dump_json(&fixture(CLEAN), true);
    let blocks = clean["blocks"].as_array().unwrap();
    let last = blocks.last().unwrap();
    let last_lsn = last["lsn"].as_u64().unwrap();
    let in_last = clean["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["start_lsn"].as_u64().unwrap() >= last_lsn)
        .count();
    assert!(in_last > 0);
    assert_eq!(last["cont_len"].as_u64(), Some(0));
    assert_eq!(torn_blocks as usize, blocks.len() - 1);
    assert_eq!(records as usize, all_records().len() - in_last);
    assert_eq!(records as usize, torn_records().len());
    assert_eq!(end, last_lsn);
    assert!(
        out.contains(&format!("offset {}", last["offset"])),
        "the cut names the last block's offset: {out}"
    );
}

#[test]
fn check_does_not_modify_the_torn_log() {
    let (_t, dir) = tmp_copy(TORN);
    let before = dir_bytes(&dir);
    assert_eq!(before, dir_bytes(&fixture(TORN)));
    let o = walden(&["log", "check", s(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    let o = walden(&["log", "dump", s(&dir), "--records"]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    assert_eq!(dir_bytes(&dir), before, "the log files changed");
}

#[test]
fn check_corrupt_middle_exits_2_naming_file_and_offset() {
    let (_t, dir) = tmp_copy(CORRUPT);
    let o = walden(&["log", "check", s(&dir)]);
    let out = all_output(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("corrupt"), "{out}");
    assert!(out.contains(SEGMENT_FILE), "{out}");
    let off = corrupt_block_offset();
    assert!(
        out.contains(&format!("at offset {off} ")),
        "offset {off}: {out}"
    );
}

#[test]
fn check_missing_directory_exits_1() {
    let t = tempfile::tempdir().unwrap();
    let o = walden(&["log", "check", s(&t.path().join("nope"))]);
    assert_eq!(o.status.code(), Some(1), "{}", all_output(&o));
    let o = walden(&["log", "check", s(t.path())]);
    assert_eq!(o.status.code(), Some(1), "an empty directory is not a log");
}

#[test]
fn dump_prints_segments_blocks_records_and_outcome() {
    let (_t, dir) = tmp_copy(CLEAN);
    let o = walden(&["log", "dump", s(&dir), "--records"]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    let out = stdout(&o);
    let count = |prefix: &str| out.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(count("segment seq=1 first_lsn=0 "), 1, "{out}");
    assert_eq!(count("  record start="), all_records().len());
    assert!(
        count("block segment=") > batches().len(),
        "records span blocks"
    );
    assert!(out.contains("tail cut: none"), "{out}");
    assert!(
        out.contains(&format!("{} records", all_records().len())),
        "{out}"
    );
    // The first record: number 1 (8 bytes LE), then its pattern byte.
    assert!(
        out.contains("  record start=0 end=28 len=24 head=0100000000000000010101"),
        "{out}"
    );
    // Without --records, no record lines.
    let o = walden(&["log", "dump", s(&dir)]);
    assert!(!stdout(&o).contains("  record "));
}

#[test]
fn dump_json_is_consistent() {
    let (_t, dir) = tmp_copy(CLEAN);
    let j = dump_json(&dir, true);
    let blocks = j["blocks"].as_array().unwrap();
    let recs = j["records"].as_array().unwrap();
    let outcome = &j["outcome"];
    assert!(j["error"].is_null());
    assert_eq!(j["segments"].as_array().unwrap().len(), 1);
    assert_eq!(recs.len(), all_records().len());
    assert_eq!(outcome["records"].as_u64(), Some(recs.len() as u64));
    assert_eq!(outcome["blocks"].as_u64(), Some(blocks.len() as u64));
    assert!(outcome["cut"].is_null());
    // Blocks are contiguous in LSN and start on 4 KiB boundaries; records
    // are contiguous and their lengths match the fixture.
    let mut lsn = 0;
    for b in blocks {
        assert_eq!(b["lsn"].as_u64(), Some(lsn));
        assert_eq!(b["offset"].as_u64().unwrap() % 4096, 0);
        lsn = b["end_lsn"].as_u64().unwrap();
    }
    assert_eq!(outcome["end_lsn"].as_u64(), Some(lsn));
    let mut at = 0;
    for (r, (_, body)) in recs.iter().zip(all_records()) {
        assert_eq!(r["start_lsn"].as_u64(), Some(at));
        assert_eq!(r["len"].as_u64(), Some(8 + body as u64));
        at = r["end_lsn"].as_u64().unwrap();
        assert_eq!(at, r["start_lsn"].as_u64().unwrap() + 4 + 8 + body as u64);
    }
    assert!(blocks.iter().any(|b| b["cont_len"].as_u64() > Some(0)));
}

#[test]
fn dump_corrupt_middle_shows_blocks_before_the_damage_and_exits_2() {
    let (_t, dir) = tmp_copy(CORRUPT);
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("d.json");
    let o = walden(&["log", "dump", s(&dir), "--json", s(&json)]);
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    let off = corrupt_block_offset();
    let j: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["error"]["kind"], "corrupt");
    assert_eq!(j["error"]["offset"].as_u64(), Some(off));
    assert!(j["outcome"].is_null());
    // The blocks before the damaged one are listed; the scan stops there.
    let offsets: Vec<u64> = j["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["offset"].as_u64().unwrap())
        .collect();
    assert!(offsets.iter().any(|&o| o < off));
    assert!(offsets.iter().all(|&o| o < off));
}

#[test]
fn log_manager_refuses_the_corrupt_middle_fixture() {
    let (_t, dir) = tmp_copy(CORRUPT);
    let before = dir_bytes(&dir);
    match open_log(&dir) {
        Err(LogError::Corrupt { file, offset, .. }) => {
            assert_eq!(file.file_name().unwrap(), SEGMENT_FILE);
            assert_eq!(offset, corrupt_block_offset());
        }
        Err(e) => panic!("expected Corrupt, got {e}"),
        Ok(_) => panic!("a log corrupt before its tail must not open"),
    }
    assert_eq!(dir_bytes(&dir), before, "a refused open changed the files");
}

#[test]
fn log_manager_cuts_the_torn_tail_and_recovers_the_rest() {
    let (_t, dir) = tmp_copy(TORN);
    let (log, got, rep) = open_log(&dir).expect("a torn tail opens");
    assert_eq!(got, torn_records());
    let cut = rep.scan.cut.clone().expect("the cut is reported");
    assert_eq!(cut.file.file_name().unwrap(), SEGMENT_FILE);
    // The log goes on from the cut; a later check sees a clean log.
    let more = (1000u64, 77usize);
    log.commit_durable(&record(more.0, more.1), &[]).unwrap();
    log.close().unwrap();
    drop(log);
    let o = walden(&["log", "check", s(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    let out = stdout(&o);
    assert!(!out.contains("torn tail"), "{out}");
    assert_eq!(ok_line(&out).2 as usize, torn_records().len() + 1);
    let (_log, got, rep) = open_log(&dir).unwrap();
    let mut want = torn_records();
    want.push(more);
    assert_eq!(got, want);
    assert!(rep.scan.cut.is_none());
}

#[test]
fn log_manager_opens_the_clean_fixture_with_every_record() {
    let (_t, dir) = tmp_copy(CLEAN);
    let (_log, got, rep) = open_log(&dir).unwrap();
    assert_eq!(got, all_records());
    assert!(rep.scan.cut.is_none());
}
