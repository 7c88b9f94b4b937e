#!/usr/bin/env bash
# TPC-B (scale 10, 8 clients, 40 s) while a 2 M-row table is loaded in 10 INSERTs and then
# CHECKPOINTed: transactions over 50 ms during the checkpoint, its eviction and resident memory.
#   bash bench/bulk-beside-oltp.sh BINARY
set -u
bin=$1; d=$(mktemp -d /tmp/bk.XXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --listen 127.0.0.1:$port > $d/server.log 2>&1 &
srv=$!
c="-h 127.0.0.1 -p $port -U walden"
for i in $(seq 100); do psql $c -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.1; done
pgbench $c -i -q -s 10 -I dtGvp walden > /dev/null 2>&1
psql $c -qAtc "ALTER DATABASE walden SET DELAYED_DURABILITY = DISABLED" walden
psql $c -qAtc "CHECKPOINT" walden
psql $c -qAtc "CREATE TABLE big (id int primary key, pad text)" walden
start=$(date +%s.%N)
(cd $d && pgbench $c -n -c 8 -j 2 -T 40 -l walden > $d/run.out 2>&1) &
b=$!
sleep 3
for k in 0 1 2 3 4 5 6 7 8 9; do psql $c -qAtc "INSERT INTO big SELECT g, md5(g::text) || md5((g+1)::text) FROM generate_series($k*200000+1, ($k+1)*200000) g" walden; done
t1=$(date +%s.%N)
psql $c -qAtc "CHECKPOINT" walden
t2=$(date +%s.%N)
rss=$(ps -o rss= -p $srv)
wait $b
grep -E "tps|latency" $d/run.out
echo "checkpoint from $(echo "$t1-$start"|bc) to $(echo "$t2-$start"|bc) s; server rss after $((rss/1024)) MB"
cat $d/pgbench_log.* | awk -v s=$start '$3>50000 {printf "%.3f %.1f\n", $5+$6/1e6-s, $3/1000}' | sort -n > $d/slow.txt
echo "over 50 ms: $(wc -l < $d/slow.txt); during the checkpoint: $(awk -v a=$(echo "$t1-$start"|bc) -v b=$(echo "$t2-$start"|bc) '$1>=a && $1<=b+0.5' $d/slow.txt | wc -l); max $(sort -k2 -n $d/slow.txt | tail -1)"
grep -E "checkpoint written" $d/server.log | sed 's/\x1b\[[0-9;]*m//g' | grep -v "rows=0 " | tail -1 | grep -oE "(rows|bytes|commits|total_ms|evict_ms|trim_ms)=[0-9.]+" | tr '\n' ' '; echo
echo "rss at end $(( $(ps -o rss= -p $srv) / 1024 )) MB"
grep -c "slow log flush" $d/server.log
kill $srv; wait $srv; rm -rf $d
