#!/usr/bin/env bash
# A table written whole: 2 M rows of ~100 bytes in one INSERT, then CHECKPOINT; then the same rows
# in 10 INSERTs with a CHECKPOINT after each. Prints the data file size and the checkpoints' log lines.
#   bash bench/whole-table-checkpoint.sh BINARY
set -u
bin=$1; d=$(mktemp -d /tmp/wh.XXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --listen 127.0.0.1:$port > $d/server.log 2>&1 &
srv=$!
c="-h 127.0.0.1 -p $port -U walden"
for i in $(seq 100); do psql $c -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.1; done
f=$(find $d/data -name store.redb)
psql $c -qAtc "create table t(a int primary key, b text)" walden
psql $c -qAtc "insert into t select g, repeat('x',90) from generate_series(1,2000000) g" walden
psql $c -qAtc "CHECKPOINT" walden
echo "one txn, whole: $(du -m --apparent-size $f | cut -f1) MB apparent, $(du -m $f | cut -f1) MB allocated; table $(psql $c -qAtc "select pg_relation_size('t')/1048576" walden) MB"
psql $c -qAtc "create table u(a int primary key, b text)" walden
psql $c -qAtc "CHECKPOINT" walden
for k in 0 1 2 3 4 5 6 7 8 9; do psql $c -qAtc "insert into u select g, repeat('x',90) from generate_series($k*200000+1,($k+1)*200000) g" walden; psql $c -qAtc "CHECKPOINT" walden; done
echo "plus u in 10 batches: $(du -m --apparent-size $f | cut -f1) MB apparent, $(du -m $f | cut -f1) MB allocated; table $(psql $c -qAtc "select pg_relation_size('u')/1048576" walden) MB"
grep "checkpoint written" $d/server.log | sed 's/.*rows=/rows=/' | cut -c1-120 | head -3
kill $srv; wait $srv; rm -rf $d
