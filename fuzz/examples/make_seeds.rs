//! Writes the seed corpus, `corpus/<target>/seed-*`, from real inputs: the
//! files of an instance that ran a small workload, records read back from
//! its log, and hand-made protocol messages and statements.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example make_seeds` (from the
//! repository root, or pass the corpus directory).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use walden_engine::{Instance, InstanceConfig, LogConfig, OsVfs};
use walden_log::block::{self, PAGE};
use walden_log::scan::{self, ScanOptions, MAX_BLOCK};
use walden_replication::proto::{HelloReply, Msg};
use walden_sql::SqlEngine;

struct Corpus(PathBuf);

impl Corpus {
    fn put(&self, target: &str, name: &str, bytes: &[u8]) {
        let dir = self.0.join(target);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// A segment without the zeroed, preallocated space after its last block.
fn trimmed(seg: &[u8]) -> &[u8] {
    let used = seg.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &seg[..block::pad_to_page(used).min(seg.len())]
}

fn main() {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("fuzz/corpus"));
    let c = Corpus(root);
    let dir = std::env::temp_dir().join(format!("walden-seeds-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);

    let statements = [
        "create table t (id int primary key, name varchar(20), price decimal(10,2), at timestamp)",
        "insert into t values (1, 'a', 1.50, '2024-01-01 00:00:00'), (2, null, 0, null)",
        "create table u (k bigint identity, b bytea, d date, g uuid, f double precision, ok boolean)",
        "insert into u (b, d, g, f, ok) values ('\\x00ff', '2020-02-29', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1.5e10, true)",
        "create sequence s start with 5",
        "checkpoint",
        "update t set price = price * 2 where id = 1",
        "delete from t where id = 2",
        "begin transaction; insert into t values (3, 'c', 3, null); commit",
        "select id, upper(name), price + 1 from t where id between 1 and 3 order by id desc",
        "select count(*), sum(f) from u group by ok having count(*) > 0",
        "select * from t a join t b on a.id = b.id union all select 1, 'x', 2.5, null, 1, 'y', 1, null",
        "with r as (select 1 as x) select case when x > 0 then 'p' else 'n' end from r",
        "select cast('12' as int) || 'a', coalesce(null, 2), nullif(1, 1), '2024-02-29'::date",
        "select next value for s",
        "select 'a' like 'a%', abs(-2), length('abc'), 7 % 3, 2 ^ 3",
    ];
    {
        let inst = Instance::open(InstanceConfig {
            vfs: Arc::new(OsVfs),
            log: LogConfig {
                segment_size: 4 << 20,
                preallocate_spare: false,
                ..LogConfig::default()
            },
            background_checkpoints: false,
            ..InstanceConfig::new(&dir)
        })
        .unwrap();
        let e = SqlEngine::new(inst.clone());
        let mut s = e.connect("walden", "sa", "seeds").unwrap();
        for (i, sql) in statements.iter().enumerate() {
            for r in s.execute_batch(sql) {
                if let Err(e) = r {
                    eprintln!("seed statement {sql}: {e}");
                }
            }
            c.put("sql_statement", &format!("{i:02}"), sql.as_bytes());
        }
        drop(s);
        inst.close().unwrap();
    }

    let mut all = Vec::new();
    files(&dir, &mut all);
    let (mut nseg, mut nimg, mut nrec) = (0, 0, 0);
    for p in &all {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let bytes = fs::read(p).unwrap();
        if name.starts_with("checkpoint") && name.ends_with(".wdb") && bytes.len() >= 16 {
            // The target adds magic, version and checksum around the body.
            c.put(
                "checkpoint_image",
                &format!("{nimg}"),
                &bytes[12..bytes.len() - 4],
            );
            let mut raw = vec![0xff];
            raw.extend_from_slice(&bytes);
            c.put("checkpoint_image", &format!("{nimg}-raw"), &raw);
            nimg += 1;
        } else if block::parse_segment_name(&name).is_some() {
            let seg = trimmed(&bytes);
            let mut input = vec![0u8];
            input.extend_from_slice(seg);
            c.put("log_scan", &format!("{nseg}"), &input);
            c.put(
                "log_block",
                &format!("{nseg}-header"),
                &seg[..PAGE.min(seg.len())],
            );
            if seg.len() > PAGE {
                c.put(
                    "log_block",
                    &format!("{nseg}-block"),
                    &seg[PAGE..(2 * PAGE).min(seg.len())],
                );
            }
            nseg += 1;
            // Records read back are the redo decoder's inputs.
            let Some(h) = block::decode_segment_header(seg) else {
                continue;
            };
            let mut recs: Vec<Vec<u8>> = Vec::new();
            let mut sink = |_: u64, _: u64, r: &[u8]| {
                recs.push(r.to_vec());
                Ok(())
            };
            let log = p.parent().unwrap();
            scan::scan(
                &OsVfs,
                log,
                ScanOptions {
                    from: h.first_lsn,
                    max_block: MAX_BLOCK,
                    on_record: &mut sink,
                    on_block: None,
                },
            )
            .unwrap();
            for r in recs.iter().take(24) {
                c.put("redo_record", &format!("{nrec:02}"), r);
                nrec += 1;
            }
            if let Some(r) = recs.last() {
                let frame = Msg::Log {
                    lsn: h.first_lsn,
                    frames: r.clone(),
                }
                .encode();
                c.put("repl_frame", "log", &frame);
            }
        }
    }
    let _ = fs::remove_dir_all(&dir);
    println!("{nseg} segments, {nimg} images, {nrec} redo records");

    let msgs = [
        (
            "ack",
            Msg::Ack {
                hardened: 4096,
                applied: 4000,
            },
        ),
        (
            "heartbeat",
            Msg::Heartbeat {
                end: 8192,
                hardened: 8192,
                synchronized: true,
            },
        ),
        (
            "seed-begin",
            Msg::SeedBegin {
                format: 1,
                lsn: 4096,
                seed_id: 7,
            },
        ),
        ("seed-chunk", Msg::SeedChunk(b"WALDNIMG".to_vec())),
        (
            "seed-end",
            Msg::SeedEnd {
                len: 8,
                crc32c: 0x1234_5678,
            },
        ),
        (
            "reply-state",
            Msg::HelloReply(HelloReply::State {
                replica: Some((7, 2, 4096)),
            }),
        ),
        (
            "reply-stale",
            Msg::HelloReply(HelloReply::Stale {
                epoch: 3,
                primary: "a".into(),
            }),
        ),
        (
            "reply-refused",
            Msg::HelloReply(HelloReply::Refused("no".into())),
        ),
    ];
    let mut two = Vec::new();
    for (name, m) in &msgs {
        let b = m.encode();
        two.extend_from_slice(&b);
        c.put("repl_frame", name, &b);
    }
    c.put("repl_frame", "several", &two);

    // repl_auth: offers, an endpoint's answers, and frames sealed with the
    // target's key (so mutations start from frames that check).
    use walden_replication::auth::{FrameMac, Offer, MAGIC};
    for (name, mode) in [("offer-secret", 1), ("offer-none", 0)] {
        let o = Offer {
            mode,
            nonce: [0x5a; 32],
        }
        .encode();
        c.put("repl_auth", name, &o);
        let mut with_proof = o.clone();
        with_proof.extend_from_slice(&[0x11; 32]);
        c.put("repl_auth", &format!("{name}-proof"), &with_proof);
    }
    let mut answer = MAGIC.to_vec();
    answer.extend_from_slice(&[0, 1]);
    answer.extend_from_slice(&[0x33; 32]);
    answer.push(0);
    answer.extend_from_slice(&[0x44; 32]);
    c.put("repl_auth", "answer-secret", &answer);
    let mut refusal = MAGIC.to_vec();
    refusal.push(1);
    refusal.extend_from_slice(&(7u16).to_le_bytes());
    refusal.extend_from_slice(b"refused");
    c.put("repl_auth", "answer-refused", &refusal);
    let mut mac = FrameMac::new(b"walden fuzz frame key");
    let mut sealed = Vec::new();
    for (_, m) in &msgs {
        sealed.extend(walden_replication::transport::seal(m, Some(&mut mac)));
    }
    c.put("repl_auth", "sealed-frames", &sealed);

    let texts: &[(u8, &str)] = &[
        (0, "42"),
        (1, "-32768"),
        (2, "9223372036854775807"),
        (3, "true"),
        (4, "1.5e3"),
        (5, "NaN"),
        (6, "-123.4500"),
        (2, "99999.999"),
        (7, "2024-02-29 12:34:56.789"),
        (8, "2024-02-29"),
        (9, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (10, "\\x00ff"),
        (11, "infinity"),
        (12, " 1e-7 "),
    ];
    for (i, (sel, t)) in texts.iter().enumerate() {
        let mut b = vec![*sel];
        b.extend_from_slice(t.as_bytes());
        c.put("coerce", &format!("{i:02}"), &b);
    }

    // Frontend messages: `mode` 0 decodes as during startup, 1 after it.
    let msg = |tag: u8, body: &[u8]| {
        let mut b = vec![tag];
        b.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        b.extend_from_slice(body);
        b
    };
    let mut startup = vec![0u8];
    let params = b"\0\x03\0\0user\0sa\0database\0walden\0application_name\0psql\0\0";
    startup.extend_from_slice(&((params.len() + 4) as u32).to_be_bytes());
    startup.extend_from_slice(params);
    c.put("pg_frontend", "startup", &startup);
    c.put("pg_frontend", "ssl", &[0, 0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f]);
    let mut ready = vec![1u8];
    ready.extend(msg(b'Q', b"select 1\0"));
    c.put("pg_frontend", "query", &ready);
    let mut ext = vec![1u8];
    ext.extend(msg(b'P', b"s1\0select $1::int\0\x00\x01\x00\x00\x00\x17"));
    ext.extend(msg(
        b'B',
        b"p1\0s1\0\x00\x01\x00\x00\x00\x01\x00\x00\x00\x0242\x00\x01\x00\x00",
    ));
    ext.extend(msg(b'D', b"Pp1\0"));
    ext.extend(msg(b'E', b"p1\0\0\0\0\0"));
    ext.extend(msg(b'C', b"Ss1\0"));
    ext.extend(msg(b'H', b""));
    ext.extend(msg(b'S', b""));
    c.put("pg_frontend", "extended", &ext);
    let mut copy = vec![1u8];
    copy.extend(msg(b'd', b"1\ta\n"));
    copy.extend(msg(b'c', b""));
    copy.extend(msg(b'f', b"oops\0"));
    copy.extend(msg(b'p', b"secret\0"));
    copy.extend(msg(b'X', b""));
    c.put("pg_frontend", "copy", &copy);
}
