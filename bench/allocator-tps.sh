#!/usr/bin/env bash
# Quick throughput of one build: pgbench -i -s 20, CHECKPOINT, 20 s select-only and 20 s TPC-B at
# 8 clients; prints tps and resident memory (used to compare allocators; run builds in turn).
#   bash bench/allocator-tps.sh BINARY
set -u
bin=$1; d=$(mktemp -d /tmp/tp.XXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --listen 127.0.0.1:$port > $d/server.log 2>&1 &
srv=$!
c="-h 127.0.0.1 -p $port -U walden"
for i in $(seq 100); do psql $c -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.1; done
pgbench $c -i -q -s 20 -I dtGvp walden > /dev/null 2>&1
psql $c -qAtc "CHECKPOINT" walden
s=$(pgbench $c -n -S -c 8 -j 2 -T 20 walden 2>&1 | grep -oP "tps = \K[0-9.]+")
t=$(pgbench $c -n -c 8 -j 2 -T 20 walden 2>&1 | grep -oP "tps = \K[0-9.]+")
echo "select-only $s tps, tpc-b $t tps, rss $(( $(ps -o rss= -p $srv) / 1024 )) MB, peak $(grep VmHWM /proc/$srv/status | awk '{print int($2/1024)}') MB"
kill $srv; wait $srv; rm -rf $d
