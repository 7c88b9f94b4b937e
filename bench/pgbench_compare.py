#!/usr/bin/env python3
"""Helper for bench/pgbench-compare.sh: free ports, CPU snapshots, parsing, table and JSON.

Subcommands:
  ports N                      print N free loopback TCP ports (distinct)
  cpu WALDEN_PID POSTMASTER_PID
                               print cumulative CPU ticks: walden, postgres (postmaster,
                               its reaped children and its live children), machine busy
                               ticks from /proc/stat, and the clock tick rate
  parse PGBENCH_OUTPUT         print "tps lat_ms processed failed" from pgbench's output
  summarize DIR [--json OUT]  print the tables from DIR/results.tsv, DIR/probes.tsv
                               and DIR/meta.txt (key=value lines); write the JSON report
"""
import json
import os
import socket
import statistics
import sys


def cmd_ports(n):
    socks = []
    for _ in range(int(n)):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))
    for s in socks:
        s.close()


def _stat(pid):
    """(utime+stime, cutime+cstime, ppid) of a process, in clock ticks, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); utime is field 14, stime 15, cutime 16, cstime 17.
    ppid = int(rest[1])
    own = int(rest[11]) + int(rest[12])
    children = int(rest[13]) + int(rest[14])
    return own, children, ppid


def cmd_cpu(walden_pid, postmaster_pid):
    w = _stat(walden_pid)
    walden = w[0] if w else 0
    pm = int(postmaster_pid)
    p = _stat(pm)
    postgres = (p[0] + p[1]) if p else 0
    # Live children of the postmaster (backends, checkpointer, walwriter, ...): their
    # own time now; once reaped it shows up in the postmaster's cutime instead.
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        s = _stat(name)
        if s and s[2] == pm:
            postgres += s[0] + s[1]
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal
    print(walden, postgres, busy, os.sysconf("SC_CLK_TCK"))


def parse_pgbench(text):
    tps = lat = None
    processed = failed = 0
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("tps =") and tps is None:
            tps = float(line.split()[2])
        elif line.startswith("latency average ="):
            lat = float(line.split()[3])
        elif line.startswith("number of transactions actually processed:"):
            processed = int(line.split(":")[1].split("/")[0].strip())
        elif line.startswith("number of failed transactions:"):
            failed = int(line.split(":")[1].split()[0])
    return tps, lat, processed, failed


def cmd_parse(path):
    with open(path, errors="replace") as f:
        tps, lat, processed, failed = parse_pgbench(f.read())
    print(tps if tps is not None else "nan", lat if lat is not None else "nan", processed, failed)


NCPU = os.cpu_count() or 1


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fnum(x, nd=0):
    if x is None:
        return "-"
    return f"{x:,.{nd}f}"


def classify(wps):
    if wps is None:
        return "?"
    if wps >= 2500:
        return "fast"
    if wps <= 800:
        return "slow"
    return "mixed"


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" in line:
                k, v = line.split("=", 1)
                meta[k] = v
    for k in ("seconds", "rounds", "scale"):
        if k in meta:
            meta[k] = int(meta[k])
    meta["target_ratio"] = float(meta.get("target_ratio", "1.5"))
    meta["protocols"] = {"insert": meta.pop("protocol_insert", None),
                         "tpcb": meta.pop("protocol_tpcb", None)}
    return meta


def read_probes(path):
    probes = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                label, n, secs = line.rstrip("\n").split("\t")
                try:
                    wps = int(n) / float(secs)
                except (ValueError, ZeroDivisionError):
                    wps = None
                probes.append({"label": label, "writes": int(n), "seconds": secs, "writes_per_s": wps})
    return probes


def cmd_summarize(d, out_json=None):
    meta = read_meta(os.path.join(d, "meta.txt"))
    meta["disk_probes"] = read_probes(os.path.join(d, "probes.tsv"))
    rows = []
    with open(os.path.join(d, "results.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            vals = line.rstrip("\n").split("\t")
            r = dict(zip(header, vals))
            for k in ("round", "clients", "processed", "failed", "rc"):
                r[k] = int(r[k])
            for k in ("tps", "lat_ms", "cpu_server_s", "cpu_pgbench_s", "cpu_busy_s", "wall_s", "disk_wps"):
                v = r.get(k, "nan")
                r[k] = None if v in ("", "nan", "None") else float(v)
            if r["rc"] != 0 and r["tps"] is not None and r["processed"] == 0:
                r["tps"] = None
            rows.append(r)

    # Cells in the order they were first run.
    keys = []
    for r in rows:
        k = (r["workload"], r["clients"], r["mode"])
        if k not in keys:
            keys.append(k)
    rounds = sorted({r["round"] for r in rows})
    target = meta.get("target_ratio", 1.5)
    proto = meta.get("protocols", {})

    cells = []
    for k in keys:
        cell = {"workload": k[0], "protocol": proto.get(k[0]), "clients": k[1], "mode": k[2]}
        for server in ("pg", "walden"):
            rs = sorted((r for r in rows if (r["workload"], r["clients"], r["mode"]) == k
                         and r["server"] == server), key=lambda r: r["round"])
            cell[server] = {
                "tps_median": med(r["tps"] for r in rs),
                "latency_ms_median": med(r["lat_ms"] for r in rs),
                "tps_rounds": [r["tps"] for r in rs],
                "latency_ms_rounds": [r["lat_ms"] for r in rs],
                "failed_rounds": [r["failed"] for r in rs],
                "rc_rounds": [r["rc"] for r in rs],
                # CPU used during the cell, in cores (CPU seconds / wall seconds).
                "cpu_server_cores": med(r["cpu_server_s"] / r["wall_s"] for r in rs
                                        if r["cpu_server_s"] is not None and r["wall_s"]),
                "cpu_pgbench_cores": med(r["cpu_pgbench_s"] / r["wall_s"] for r in rs
                                         if r["cpu_pgbench_s"] is not None and r["wall_s"]),
                # /proc/stat ticks are sampled; cap the machine at its CPU count.
                "cpu_other_cores": med(
                    max(0.0, min(r["cpu_busy_s"], NCPU * r["wall_s"]) - r["cpu_server_s"]
                        - r["cpu_pgbench_s"]) / r["wall_s"]
                    for r in rs if None not in (r["cpu_busy_s"], r["cpu_server_s"], r["cpu_pgbench_s"])
                    and r["wall_s"]),
                "disk_wps_rounds": [r["disk_wps"] for r in rs],
                "errors": sorted({r["error"] for r in rs if r.get("error")}),
            }
        pg, wa = cell["pg"]["tps_median"], cell["walden"]["tps_median"]
        cell["ratio"] = (wa / pg) if (pg and wa is not None) else None
        per_round = []
        for a, b in zip(cell["pg"]["tps_rounds"], cell["walden"]["tps_rounds"]):
            per_round.append((b / a) if (a and b is not None) else None)
        cell["ratio_rounds"] = per_round
        cell["meets_target"] = cell["ratio"] is not None and cell["ratio"] >= target
        cells.append(cell)

    probes = meta.get("disk_probes", [])
    for p in probes:
        p["state"] = classify(p.get("writes_per_s"))

    out = []
    out.append(f"pgbench: {meta.get('pg_version', '?')} vs Walden (HEAD {meta.get('walden_commit', '?')}); "
               f"{meta.get('seconds')} s per cell, {len(rounds)} round(s), medians over rounds; "
               f"target Walden/PG >= {target}")
    out.append(f"Walden binary: {meta.get('walden_binary', '?')}; load average at start {meta.get('loadavg_start', '?')}, "
               f"at end {meta.get('loadavg_end', '?')}")
    rp = [p for p in probes if not p["label"].startswith("pair")]
    pp = [p["writes_per_s"] for p in probes if p["label"].startswith("pair") and p["writes_per_s"]]
    out.append("disk (dd bs=4k oflag=dsync, appending), writes/s: " + ", ".join(
        f"{p['label']} {fnum(p.get('writes_per_s'))} ({p['state']})" for p in rp))
    if pp:
        states = [classify(x) for x in pp]
        out.append(f"  before each pair (200 writes): min {fnum(min(pp))}, median {fnum(med(pp))}, "
                   f"max {fnum(max(pp))}; fast {states.count('fast')}, mixed {states.count('mixed')}, "
                   f"slow {states.count('slow')} of {len(pp)}")
    out.append("")
    hdr = (f"{'workload':<19} {'cl':>3} {'mode':<8} {'PG tps':>9} {'Walden tps':>11} "
           f"{'W/PG':>6} {'PG lat ms':>10} {'W lat ms':>9}  target")
    out.append(hdr)
    out.append("-" * len(hdr))
    for c in cells:
        wl = f"{c['workload']} ({c['protocol']})" if c["protocol"] else c["workload"]
        ratio = f"{c['ratio']:.2f}" if c["ratio"] is not None else "-"
        out.append(f"{wl:<19} {c['clients']:>3} {c['mode']:<8} {fnum(c['pg']['tps_median']):>9} "
                   f"{fnum(c['walden']['tps_median']):>11} {ratio:>6} "
                   f"{fnum(c['pg']['latency_ms_median'], 3):>10} "
                   f"{fnum(c['walden']['latency_ms_median'], 3):>9}  "
                   f"{'met' if c['meets_target'] else 'MISSED'}")
    met = sum(1 for c in cells if c["meets_target"])
    out.append(f"target met in {met} of {len(cells)} cells")
    out.append("")
    out.append("Per round (tps PG / Walden = ratio; dd writes/s probed just before the pair):")
    for c in cells:
        wl = f"{c['workload']} x{c['clients']} {c['mode']}"
        parts = []
        for i, (a, b) in enumerate(zip(c["pg"]["tps_rounds"], c["walden"]["tps_rounds"])):
            rr = c["ratio_rounds"][i]
            dw = c["walden"]["disk_wps_rounds"][i]
            parts.append(f"{fnum(a)} / {fnum(b)} = {rr:.2f}" if rr is not None
                         else f"{fnum(a)} / {fnum(b)}")
            parts[-1] += f" [{fnum(dw)}]"
        out.append(f"  {wl:<24} " + " | ".join(parts))
    out.append("")
    out.append(f"CPU during the cell (median, in cores of {NCPU}; other = every other process on the machine):")
    out.append(f"  {'cell':<24} {'PG: postgres pgbench other':>28}   {'Walden: walden pgbench other':>30}")
    for c in cells:
        wl = f"{c['workload']} x{c['clients']} {c['mode']}"
        p, w = c["pg"], c["walden"]
        out.append(f"  {wl:<24} {fnum(p['cpu_server_cores'], 2):>12} {fnum(p['cpu_pgbench_cores'], 2):>7} "
                   f"{fnum(p['cpu_other_cores'], 2):>6}   {fnum(w['cpu_server_cores'], 2):>14} "
                   f"{fnum(w['cpu_pgbench_cores'], 2):>7} {fnum(w['cpu_other_cores'], 2):>6}")
    errs = []
    for c in cells:
        for server in ("pg", "walden"):
            s = c[server]
            bad = [i + 1 for i, (rc, fl) in enumerate(zip(s["rc_rounds"], s["failed_rounds"]))
                   if rc != 0 or fl]
            if bad or s["errors"]:
                errs.append(f"  {server} {c['workload']} x{c['clients']} {c['mode']}: rounds {bad} "
                            f"rc={s['rc_rounds']} failed={s['failed_rounds']} "
                            + "; ".join(s["errors"][:3]))
    out.append("")
    out.append("Errors: none" if not errs else "Errors:")
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
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "ports":
        cmd_ports(args[0])
    elif cmd == "cpu":
        cmd_cpu(args[0], args[1])
    elif cmd == "parse":
        cmd_parse(args[0])
    elif cmd == "summarize":
        out_json = None
        if "--json" in args:
            i = args.index("--json")
            out_json = args[i + 1]
            args = args[:i] + args[i + 2:]
        cmd_summarize(args[0], out_json)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
