#!/usr/bin/env python3
"""Helper for bench/sysbench-compare.sh: parsing sysbench's report, the table and JSON.

Subcommands:
  parse SYSBENCH_OUTPUT        print "tps qps p95_ms avg_ms max_ms ignored_errors" (tab-separated)
  summarize DIR [--json OUT]   print the table from DIR/results.tsv and DIR/meta.txt;
                               write the JSON report
"""
import json
import os
import re
import statistics
import sys


def parse(text):
    def num(pattern):
        m = re.search(pattern, text, re.M)
        return float(m.group(1)) if m else None

    return {
        "tps": num(r"^\s*transactions:\s+\d+\s+\(([\d.]+) per sec\.\)"),
        "qps": num(r"^\s*queries:\s+\d+\s+\(([\d.]+) per sec\.\)"),
        "p95_ms": num(r"^\s*95th percentile:\s+([\d.]+)"),
        "avg_ms": num(r"^\s*avg:\s+([\d.]+)"),
        "max_ms": num(r"^\s*max:\s+([\d.]+)"),
        "errors": num(r"^\s*ignored errors:\s+(\d+)"),
    }


def cmd_parse(path):
    with open(path, errors="replace") as f:
        p = parse(f.read())
    vals = []
    for k in ("tps", "qps", "p95_ms", "avg_ms", "max_ms", "errors"):
        v = p[k]
        vals.append("nan" if v is None else (str(int(v)) if k == "errors" else str(v)))
    print("\t".join(vals))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fnum(x, nd=0):
    return "-" if x is None else f"{x:,.{nd}f}"


def fl(v):
    return None if v in ("", "nan", "None") else float(v)


def cmd_summarize(d, out_json=None):
    meta = {}
    with open(os.path.join(d, "meta.txt")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    rows = []
    with open(os.path.join(d, "results.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(header, line.rstrip("\n").split("\t")))
            for k in ("round", "threads", "rc"):
                r[k] = int(r[k])
            for k in ("tps", "qps", "p95_ms", "avg_ms", "max_ms", "errors", "disk_wps"):
                r[k] = fl(r.get(k, ""))
            rows.append(r)
    servers = [s for s in ("walden", "before", "pg") if any(r["server"] == s for r in rows)]
    keys = []
    for r in rows:
        k = (r["test"], r["threads"], r["mode"])
        if k not in keys:
            keys.append(k)
    cells = []
    for k in keys:
        cell = {"test": k[0], "threads": k[1], "mode": k[2]}
        for server in servers:
            rs = sorted((r for r in rows if (r["test"], r["threads"], r["mode"]) == k
                         and r["server"] == server), key=lambda r: r["round"])
            cell[server] = {
                "tps_median": med(r["tps"] for r in rs),
                "p95_ms_median": med(r["p95_ms"] for r in rs),
                "max_ms_max": max((r["max_ms"] for r in rs if r["max_ms"] is not None), default=None),
                "tps_rounds": [r["tps"] for r in rs],
                "p95_ms_rounds": [r["p95_ms"] for r in rs],
                "ignored_errors_rounds": [r["errors"] for r in rs],
                "rc_rounds": [r["rc"] for r in rs],
                "disk_wps_rounds": [r["disk_wps"] for r in rs],
                "errors": sorted({r["error"] for r in rs if r.get("error")}),
            }
        w, p = cell["walden"]["tps_median"], cell["pg"]["tps_median"]
        cell["ratio"] = (w / p) if (w is not None and p) else None
        cell["ratio_rounds"] = [(a / b) if (a is not None and b) else None
                                for a, b in zip(cell["walden"]["tps_rounds"], cell["pg"]["tps_rounds"])]
        if "before" in cell:
            b = cell["before"]["tps_median"]
            cell["ratio_before"] = (w / b) if (w is not None and b) else None
        cells.append(cell)

    out = [f"sysbench {meta.get('sysbench', '?')}: Walden ({meta.get('walden', '?')}) vs {meta.get('pg_version', '?')}",
           f"{meta.get('tables')} table(s) x {meta.get('table_size')} rows; {meta.get('seconds')} s per cell, "
           f"{meta.get('rounds')} round(s), medians over rounds; prepare took Walden "
           f"{meta.get('prepare_s_walden')} s, PostgreSQL {meta.get('prepare_s_pg')} s",
           f"Walden: {meta.get('walden_settings')}",
           f"PostgreSQL: {meta.get('pg_settings')}",
           *([f"before: {meta.get('before')}; Walden/before is the new binary's tps over the old one's"]
             if meta.get("before") else []),
           f"uptime at start: {meta.get('uptime_start', '?').strip()}",
           f"uptime at end:   {meta.get('uptime_end', '?').strip()}",
           ""]
    if "before" in servers:
        out.append(f"{'test':<18} {'thr':>3} {'mode':<8} {'before tps':>11} {'Walden tps':>11} {'W/before':>9}")
        for c in cells:
            rb = f"{c['ratio_before']:.2f}" if c.get("ratio_before") is not None else "-"
            out.append(f"{c['test']:<18} {c['threads']:>3} {c['mode']:<8} {fnum(c['before']['tps_median'], 1):>11} "
                       f"{fnum(c['walden']['tps_median'], 1):>11} {rb:>9}")
        out.append("")
    hdr = (f"{'test':<18} {'thr':>3} {'mode':<8} {'Walden tps':>11} {'PG tps':>10} {'W/PG':>6} "
           f"{'W p95 ms':>9} {'PG p95 ms':>10}  per round W/PG [dd writes/s before the pair]")
    out.append(hdr)
    out.append("-" * len(hdr))
    for c in cells:
        ratio = f"{c['ratio']:.2f}" if c["ratio"] is not None else "-"
        rr = ", ".join(f"{x:.2f}" if x is not None else "-" for x in c["ratio_rounds"])
        dw = ", ".join(fnum(x) for x in c["walden"]["disk_wps_rounds"])
        out.append(f"{c['test']:<18} {c['threads']:>3} {c['mode']:<8} {fnum(c['walden']['tps_median'], 1):>11} "
                   f"{fnum(c['pg']['tps_median'], 1):>10} {ratio:>6} {fnum(c['walden']['p95_ms_median'], 2):>9} "
                   f"{fnum(c['pg']['p95_ms_median'], 2):>10}  {rr} [{dw}]")
    errs = []
    for c in cells:
        for server in servers:
            s = c[server]
            ign = [e for e in s["ignored_errors_rounds"] if e]
            if ign or any(s["rc_rounds"]) or s["errors"]:
                errs.append(f"  {server} {c['test']} x{c['threads']} {c['mode']}: rc={s['rc_rounds']} "
                            f"ignored errors={s['ignored_errors_rounds']} " + "; ".join(s["errors"][:2]))
    out.append("")
    out.append("Errors: none" if not errs else "Errors (sysbench ignores deadlocks, 40001 and 23505; others end the run):")
    out.extend(errs)
    print("\n".join(out))
    if out_json:
        doc = dict(meta)
        doc["cells"] = cells
        doc["rows"] = rows
        doc["table"] = "\n".join(out)
        with open(out_json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"\nwrote {out_json}")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "parse":
        cmd_parse(argv[2])
    elif argv[1] == "summarize":
        out_json = argv[argv.index("--json") + 1] if "--json" in argv else None
        cmd_summarize(argv[2], out_json)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
