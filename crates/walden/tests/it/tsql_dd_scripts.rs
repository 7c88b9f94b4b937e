//! The delayed-durability experiments as their authors ran them: T-SQL
//! scripts (written here in their style) split on `GO` / `GO n` lines and
//! sent batch by batch over one connection, as sqlcmd sends them. The
//! procedures loop `BEGIN TRAN; INSERT; COMMIT TRAN [WITH (DELAYED_DURABILITY
//! = ON)]`; `sys.dm_io_virtual_file_stats` and `sys.dm_os_wait_stats` are
//! copied `INTO #tables` before a run and diffed after it. The checks are
//! the experiments' findings: a durable commit is a log flush and a
//! WRITELOG wait, delayed commits share a few flushes and wait for none,
//! DISABLED makes a delayed request durable, FORCED delays every commit.

use crate::pg_diff;
use crate::tsql_support;

use pg_diff::connect;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

/// One batch's outcome: its result sets (rows of text values) or its error.
#[derive(Debug)]
struct Batch {
    sets: Vec<Vec<Vec<String>>>,
    error: Option<String>,
}

/// Splits a script as sqlcmd does: a line holding only `GO` or `GO n` ends
/// a batch, which runs n times (once without a count).
fn split_go(script: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in script.lines() {
        let t = line.trim();
        let mut w = t.split_whitespace();
        if w.next().is_some_and(|g| g.eq_ignore_ascii_case("go")) {
            let n = match w.next() {
                None => Some(1),
                Some(n) => n.parse::<usize>().ok().filter(|_| w.next().is_none()),
            };
            if let Some(n) = n {
                if !cur.trim().is_empty() {
                    out.push((std::mem::take(&mut cur), n));
                }
                cur.clear();
                continue;
            }
        }
        cur.push_str(line);
        cur.push('\n');
    }
    if !cur.trim().is_empty() {
        out.push((cur, 1));
    }
    out
}

async fn batch(c: &Client, sql: &str) -> Batch {
    match c.simple_query(sql).await {
        Err(e) => Batch {
            sets: Vec::new(),
            error: Some(format!(
                "{}: {}",
                e.code().map(|c| c.code().to_string()).unwrap_or_default(),
                e.as_db_error()
                    .map(|d| d.message().to_string())
                    .unwrap_or_else(|| e.to_string())
            )),
        },
        Ok(msgs) => {
            let mut sets = Vec::new();
            let mut rows = Vec::new();
            let mut described = false;
            for m in msgs {
                match m {
                    SimpleQueryMessage::RowDescription(_) => described = true,
                    SimpleQueryMessage::Row(r) => rows.push(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect(),
                    ),
                    SimpleQueryMessage::CommandComplete(_) => {
                        if described {
                            sets.push(std::mem::take(&mut rows));
                        }
                        described = false;
                    }
                    _ => {}
                }
            }
            Batch { sets, error: None }
        }
    }
}

/// Runs a script batch by batch (each `GO n` batch n times); every batch
/// must succeed. The result sets of the last run of each batch, in order.
async fn script(c: &Client, text: &str) -> Vec<Vec<Vec<String>>> {
    let mut sets = Vec::new();
    for (sql, n) in split_go(text) {
        for k in 0..n {
            let b = batch(c, &sql).await;
            if let Some(e) = &b.error {
                panic!("batch failed ({e}) on run {}:\n{sql}", k + 1);
            }
            if k + 1 == n {
                sets.extend(b.sets);
            }
        }
    }
    sets
}

fn num(s: &str) -> i64 {
    s.parse()
        .unwrap_or_else(|_| panic!("not an integer: {s:?}"))
}

/// The table, and the two procedures the experiments compare.
const SETUP: &str = "\
SET NOCOUNT ON;
GO
CREATE TABLE dbo.SensorLog
(
  LogID    int IDENTITY(1,1) NOT NULL PRIMARY KEY,
  LoggedAt datetime2 NOT NULL DEFAULT SYSDATETIME(),
  Token    uniqueidentifier NOT NULL DEFAULT NEWID(),
  Note     varchar(100) NULL
);
GO
CREATE PROCEDURE dbo.LogRows_Durable
  @Iterations int
AS
BEGIN
  SET NOCOUNT ON;

  DECLARE @i int = 1;
  WHILE @i <= @Iterations
  BEGIN
    BEGIN TRAN;
      INSERT dbo.SensorLog (Note) VALUES ('durable');
    COMMIT TRAN;
    SET @i += 1;
  END
END
GO
CREATE PROCEDURE dbo.LogRows_Delayed
  @Iterations int
AS
BEGIN
  SET NOCOUNT ON;

  DECLARE @i int = 1;
  WHILE @i <= @Iterations
  BEGIN
    BEGIN TRAN;
      INSERT dbo.SensorLog (Note) VALUES ('delayed');
    COMMIT TRAN WITH (DELAYED_DURABILITY = ON);
    SET @i += 1;
  END
END
GO
";

/// One measured run: the database setting, the counters copied into #temp
/// tables, the procedure timed with DATEDIFF, then the differences.
fn measured(setting: &str, proc_name: &str, iterations: usize) -> String {
    format!(
        "\
SET NOCOUNT ON;
GO
ALTER DATABASE CURRENT SET DELAYED_DURABILITY = {setting};
GO
SELECT database_id, file_id, num_of_writes, num_of_bytes_written, io_stall_write_ms
  INTO #FileStats
  FROM sys.dm_io_virtual_file_stats(DB_ID(), NULL);

SELECT wait_type, waiting_tasks_count, wait_time_ms
  INTO #WaitStats
  FROM sys.dm_os_wait_stats
  WHERE wait_type IN (N'WRITELOG', N'LOGBUFFER');
GO
DECLARE @start datetime2 = SYSDATETIME();

EXEC dbo.{proc_name} @Iterations = {iterations};

SELECT DATEDIFF(ms, @start, SYSDATETIME()) AS duration_ms;
GO
SELECT s.file_id,
       s.num_of_writes - f.num_of_writes AS log_writes,
       s.num_of_bytes_written - f.num_of_bytes_written AS bytes_written,
       s.io_stall_write_ms - f.io_stall_write_ms AS stall_ms
  FROM #FileStats AS f
  INNER JOIN sys.dm_io_virtual_file_stats(DB_ID(), NULL) AS s
    ON s.database_id = f.database_id AND s.file_id = f.file_id
  WHERE s.file_id = 2;

SELECT w.wait_type, s.waiting_tasks_count - w.waiting_tasks_count AS waits
  FROM #WaitStats AS w
  INNER JOIN sys.dm_os_wait_stats AS s ON s.wait_type = w.wait_type
  WHERE w.wait_type = N'WRITELOG';
GO
DROP TABLE #FileStats;
DROP TABLE #WaitStats;
GO
"
    )
}

/// What a measured run reported.
#[derive(Debug)]
struct Run {
    duration_ms: i64,
    log_writes: i64,
    bytes: i64,
    writelog_waits: i64,
}

async fn measure(c: &Client, setting: &str, proc_name: &str, iterations: usize) -> Run {
    let sets = script(c, &measured(setting, proc_name, iterations)).await;
    let [duration, files, waits] = sets.as_slice() else {
        panic!("expected 3 result sets, got {sets:?}");
    };
    let run = Run {
        duration_ms: num(&duration[0][0]),
        log_writes: num(&files[0][1]),
        bytes: num(&files[0][2]),
        writelog_waits: num(&waits[0][1]),
    };
    eprintln!("{setting} / {proc_name} x {iterations}: {run:?}");
    run
}

fn with_server(f: impl FnOnce(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) {
    tsql_support::with_server(Duration::from_secs(300), f)
}

#[test]
fn sqlcmd_splits_on_go_lines() {
    assert_eq!(
        split_go("SELECT 1\nGO\nSELECT 2\ngo 3\nSELECT 'GO'\n  GO  \nSELECT 4"),
        vec![
            ("SELECT 1\n".to_string(), 1),
            ("SELECT 2\n".to_string(), 3),
            ("SELECT 'GO'\n".to_string(), 1),
            ("SELECT 4\n".to_string(), 1),
        ]
    );
}

#[test]
fn durable_and_delayed_procedures_measured_with_the_dmvs() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            script(&c, SETUP).await;
            const N: usize = 300;
            let durable = measure(&c, "ALLOWED", "LogRows_Durable", N).await;
            let delayed = measure(&c, "ALLOWED", "LogRows_Delayed", N).await;
            // Every durable commit is a log write the commit waits for.
            assert!(durable.log_writes >= N as i64, "{durable:?}");
            assert!(durable.writelog_waits >= N as i64, "{durable:?}");
            // Delayed commits share the flusher's writes and wait for none.
            assert!(
                delayed.log_writes * 4 <= durable.log_writes,
                "{delayed:?} vs {durable:?}"
            );
            assert!(delayed.writelog_waits * 10 <= N as i64, "{delayed:?}");
            // Fewer, larger writes: fewer bytes too (no block per commit).
            assert!(delayed.bytes < durable.bytes, "{delayed:?} vs {durable:?}");
            assert!(durable.duration_ms >= 0 && delayed.duration_ms >= 0);
            // DISABLED: the request for a delayed commit is ignored, every
            // commit is durable.
            let disabled = measure(&c, "DISABLED", "LogRows_Delayed", N).await;
            assert!(disabled.log_writes >= N as i64, "{disabled:?}");
            assert!(disabled.writelog_waits >= N as i64, "{disabled:?}");
            // FORCED: even the durable procedure's commits are delayed.
            let forced = measure(&c, "FORCED", "LogRows_Durable", N).await;
            assert!(
                forced.log_writes * 4 <= durable.log_writes,
                "{forced:?} vs {durable:?}"
            );
            assert!(forced.writelog_waits * 10 <= N as i64, "{forced:?}");
            let rows = script(
                &c,
                "SELECT Note, COUNT(*), MIN(LogID) FROM dbo.SensorLog GROUP BY Note ORDER BY Note",
            )
            .await;
            assert_eq!(
                rows,
                vec![vec![
                    vec![
                        "delayed".to_string(),
                        (2 * N).to_string(),
                        "301".to_string()
                    ],
                    vec!["durable".to_string(), (2 * N).to_string(), "1".to_string()],
                ]]
            );
        })
    });
}

/// The ad-hoc form: one auto-commit INSERT per batch, `GO 500`, with the
/// log writes between two points read from a #Metrics copy of the DMV.
fn go_500(setting: &str) -> String {
    format!(
        "\
SET NOCOUNT ON;
GO
ALTER DATABASE CURRENT SET DELAYED_DURABILITY = {setting};
GO
SELECT file_id, num_of_writes, num_of_bytes_written
  INTO #Metrics
  FROM sys.dm_io_virtual_file_stats(DB_ID(), NULL);
GO
INSERT dbo.SensorLog (Note) VALUES ('{setting}');
GO 500
SELECT m.file_id,
       v.num_of_writes - m.num_of_writes AS writes,
       v.num_of_bytes_written - m.num_of_bytes_written AS bytes
  FROM sys.dm_io_virtual_file_stats(DB_ID(), NULL) AS v
  JOIN #Metrics AS m ON m.file_id = v.file_id
  ORDER BY m.file_id;
SELECT COUNT(*) FROM dbo.SensorLog WHERE Note = '{setting}';
GO
DROP TABLE #Metrics;
GO
"
    )
}

#[test]
fn go_500_auto_commit_inserts_durable_and_forced() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            script(&c, SETUP).await;
            let mut writes = Vec::new();
            for setting in ["DISABLED", "FORCED"] {
                let sets = script(&c, &go_500(setting)).await;
                let [files, count] = sets.as_slice() else {
                    panic!("expected 2 result sets, got {sets:?}");
                };
                assert_eq!(count, &vec![vec!["500".to_string()]]);
                // file 2 is the log, as in SQL Server.
                assert_eq!(files[1][0], "2");
                let w = num(&files[1][1]);
                eprintln!(
                    "GO 500 under {setting}: {w} log writes, {} bytes",
                    files[1][2]
                );
                writes.push(w);
            }
            let (durable, forced) = (writes[0], writes[1]);
            assert!(durable >= 500, "durable: {durable} log writes");
            assert!(
                forced * 4 <= durable,
                "forced {forced} vs durable {durable}"
            );
        })
    });
}

/// The ad-hoc WHILE loop with timing, a variable loop count and `SELECT
/// ... INTO` a #table, diffed with `sys.dm_os_wait_stats`.
#[test]
fn ad_hoc_loop_with_timing_and_wait_stats() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            script(&c, SETUP).await;
            let sets = script(
                &c,
                "\
ALTER DATABASE CURRENT SET DELAYED_DURABILITY = FORCED;
GO
SET NOCOUNT ON;
SELECT wait_type, waiting_tasks_count INTO #w FROM sys.dm_os_wait_stats WHERE wait_type = 'WRITELOG';
DECLARE @n int = 2000, @i int = 1, @t0 datetime2 = SYSDATETIME();
WHILE @i <= @n
BEGIN
  INSERT INTO dbo.SensorLog (Note) VALUES (CONCAT('loop ', @i));
  SET @i = @i + 1;
END
SELECT @i - 1 AS iterations, CASE WHEN DATEDIFF(millisecond, @t0, SYSDATETIME()) >= 0 THEN 'timed' END;
SELECT s.waiting_tasks_count - w.waiting_tasks_count FROM sys.dm_os_wait_stats s JOIN #w w ON w.wait_type = s.wait_type;
WAITFOR DELAY '00:00:00.05';
SELECT COUNT_BIG(*), MAX(Note) FROM dbo.SensorLog WITH (NOLOCK);
DROP TABLE #w;
GO
",
            )
            .await;
            assert_eq!(sets[0], vec![vec!["2000".to_string(), "timed".to_string()]]);
            assert!(num(&sets[1][0][0]) < 200, "WRITELOG waits: {:?}", sets[1]);
            assert_eq!(
                sets[2],
                vec![vec!["2000".to_string(), "loop 999".to_string()]]
            );
        })
    });
}
