#!/bin/bash
# Seed time and peak memory of a new secondary (docs/benchmarks.md,
# "Streamed seeding"). Usage: bench/seed-time.sh WALDEN_BINARY SCALE TAG
# Loads pgbench -i -s SCALE into a primary, restarts it (so its peak RSS is
# the loaded database's), starts an empty secondary, creates the group and
# times CREATE AVAILABILITY GROUP to SYNCHRONIZED; prints VmHWM/VmRSS of both.
BIN=$1; SCALE=$2; TAG=$3
W=${TMPDIR:-/tmp}/walden-seed-$TAG; rm -rf $W; mkdir -p $W
PA=56110; PB=56111; EA=56112; EB=56113
start() { # name port endpoint
  RUST_LOG=warn nice -n 5 $BIN serve --data-dir $W/$1 --listen 127.0.0.1:$2 --replica-name $1 --endpoint-listen 127.0.0.1:$3 > $W/$1.log 2>&1 &
  echo $!
}
q() { psql "host=127.0.0.1 port=$1 user=walden dbname=walden" -Atc "$2"; }
waitup() { for i in $(seq 100); do q $1 "select 1" >/dev/null 2>&1 && return; sleep 0.2; done; echo "no server on $1"; exit 1; }
A=$(start a $PA $EA); waitup $PA
t0=$(date +%s.%N)
pgbench -i -s $SCALE -q -h 127.0.0.1 -p $PA -U walden walden > $W/init.log 2>&1 || { cat $W/init.log; exit 1; }
echo "init $(echo "$(date +%s.%N) - $t0" | bc) s"
q $PA "checkpoint" >/dev/null
kill -INT $A; while kill -0 $A 2>/dev/null; do sleep 0.2; done
A=$(start a $PA $EA); waitup $PA
B=$(start b $PB $EB); waitup $PB
echo "primary before seed: $(grep -E 'VmRSS|VmHWM' /proc/$A/status | tr -s ' ' | tr '\n' ' ')"
t0=$(date +%s.%N)
q $PA "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON 'a' WITH (ENDPOINT_URL = 'tcp://127.0.0.1:$EA', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 30), 'b' WITH (ENDPOINT_URL = 'tcp://127.0.0.1:$EB', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 30)" || exit 1
for i in $(seq 3000); do
  s=$(q $PA "select synchronization_state_desc from sys.dm_hadr_database_replica_states where not is_local" 2>/dev/null)
  [ "$s" = SYNCHRONIZED ] && break; sleep 0.1
done
echo "seed to SYNCHRONIZED: $(echo "$(date +%s.%N) - $t0" | bc) s (state $s)"
echo "primary: $(grep -E 'VmRSS|VmHWM' /proc/$A/status | tr -s ' ' | tr '\n' ' ')"
echo "secondary: $(grep -E 'VmRSS|VmHWM' /proc/$B/status | tr -s ' ' | tr '\n' ' ')"
echo "rows on secondary: $(q $PB 'select count(*) from pgbench_accounts')"
kill -INT $A $B; while kill -0 $A 2>/dev/null || kill -0 $B 2>/dev/null; do sleep 0.2; done
du -sh $W/a $W/b
