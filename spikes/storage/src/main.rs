//! Storage spike for issue 12: redb vs fjall as the base store under Walden's
//! memtable, on pgbench_accounts' shape (10M rows of ~100 bytes) and access
//! pattern (random point reads; checkpoints of random updates).
use redb::ReadableDatabase;
use std::time::Instant;

const CACHE: usize = 256 << 20;

fn key(aid: u64) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(&7u32.to_be_bytes());
    k[4..].copy_from_slice(&(aid ^ (1 << 63)).to_be_bytes());
    k
}
fn row(aid: u64, bal: i64) -> Vec<u8> {
    let mut v = Vec::with_capacity(110);
    v.extend_from_slice(&aid.to_le_bytes());
    v.extend_from_slice(&((aid / 100_000) as u64).to_le_bytes());
    v.extend_from_slice(&bal.to_le_bytes());
    v.extend_from_slice(&[b' '; 84]);
    v
}
fn rss() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let f = |k: &str| {
        s.lines().find(|l| l.starts_with(k)).unwrap().split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
    };
    (f("VmRSS:"), f("VmHWM:"))
}
fn written() -> u64 {
    let s = std::fs::read_to_string("/proc/self/io").unwrap();
    s.lines().find(|l| l.starts_with("write_bytes:")).unwrap()[13..].trim().parse().unwrap()
}
fn du(p: &str) -> u64 {
    let o = std::process::Command::new("du").args(["-sb", p]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().parse().unwrap()
}
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

trait Store {
    fn put_batch(&mut self, kvs: &mut dyn Iterator<Item = ([u8; 12], Vec<u8>)>);
    fn get(&self, k: &[u8]) -> bool;
}

struct Redb(redb::Database);
const T: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("t");
impl Store for Redb {
    fn put_batch(&mut self, kvs: &mut dyn Iterator<Item = ([u8; 12], Vec<u8>)>) {
        let mut w = self.0.begin_write().unwrap();
        w.set_quick_repair(true);
        {
            let mut t = w.open_table(T).unwrap();
            for (k, v) in kvs {
                t.insert(&k[..], &v[..]).unwrap();
            }
        }
        w.commit().unwrap();
    }
    fn get(&self, k: &[u8]) -> bool {
        let r = self.0.begin_read().unwrap();
        let t = r.open_table(T).unwrap();
        let x = t.get(k).unwrap().is_some();
        x
    }
}
struct Fjall(fjall::Database, fjall::Keyspace);
impl Store for Fjall {
    fn put_batch(&mut self, kvs: &mut dyn Iterator<Item = ([u8; 12], Vec<u8>)>) {
        let mut b = self.0.batch();
        for (k, v) in kvs {
            b.insert(&self.1, k.to_vec(), v);
        }
        b.commit().unwrap();
        self.0.persist(fjall::PersistMode::SyncAll).unwrap();
    }
    fn get(&self, k: &[u8]) -> bool {
        self.1.get(k).unwrap().is_some()
    }
}

fn open(which: &str, dir: &str) -> Box<dyn Store> {
    match which {
        "redb" => {
            std::fs::create_dir_all(dir).unwrap();
            Box::new(Redb(redb::Database::builder().set_cache_size(CACHE).create(format!("{dir}/data.redb")).unwrap()))
        }
        _ => {
            let db = fjall::Database::builder(dir).cache_size(CACHE as u64).manual_journal_persist(true).open().unwrap();
            let ks = db.keyspace("t", fjall::KeyspaceCreateOptions::default).unwrap();
            Box::new(Fjall(db, ks))
        }
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let which = a[1].clone();
    let n: u64 = a[2].parse().unwrap();
    let dir = format!("{}/{which}", std::env::var("SPIKE_DIR").unwrap_or_else(|_| "target/spike-data".into()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut s = open(&which, &dir);
    let t0 = Instant::now();
    let batch = 500_000;
    let mut aid = 0;
    while aid < n {
        let hi = (aid + batch).min(n);
        s.put_batch(&mut (aid..hi).map(|i| (key(i), row(i, 0))));
        aid = hi;
    }
    let load = t0.elapsed().as_secs_f64();
    let size = du(&dir);
    let (r1, h1) = rss();
    println!("{which} load {n} rows: {load:.1} s, {:.0} rows/s; on disk {} MB = {:.0} B/row; rss {r1} MB peak {h1} MB", n as f64 / load, size >> 20, size as f64 / n as f64);
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for round in 0..3 {
        let w0 = written();
        let t = Instant::now();
        let mut ups: Vec<u64> = (0..100_000).map(|_| rng.next(n)).collect();
        ups.sort();
        s.put_batch(&mut ups.into_iter().map(|i| (key(i), row(i, round + 1))));
        let dt = t.elapsed().as_secs_f64();
        println!("{which} checkpoint of 100,000 random updates #{round}: {:.0} ms, {} MB written", dt * 1000.0, (written() - w0) >> 20);
    }
    for pass in 0..2 {
        let t = Instant::now();
        let k = 200_000;
        let mut hits = 0;
        for _ in 0..k {
            if s.get(&key(rng.next(n))) {
                hits += 1;
            }
        }
        let dt = t.elapsed().as_secs_f64();
        assert_eq!(hits, k);
        println!("{which} random point reads pass {pass}: {:.1} us/read", dt * 1e6 / k as f64);
    }
    let (r2, h2) = rss();
    println!("{which} after reads: rss {r2} MB peak {h2} MB");
    drop(s);
    let t = Instant::now();
    let s = open(&which, &dir);
    let reopen = t.elapsed().as_secs_f64();
    assert!(s.get(&key(n / 2)));
    println!("{which} clean reopen: {:.0} ms; on disk after: {} MB", reopen * 1000.0, du(&dir) >> 20);
}
