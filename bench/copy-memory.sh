#!/usr/bin/env bash
# Peak memory and time of one large COPY FROM STDIN: N rows (`i<TAB>row i`
# and a 60-byte filler) loaded by psql's `\copy` into a fresh `walden
# serve` per binary. Prints, per binary, the server's VmHWM (peak resident
# memory) before and after the COPY and the COPY's wall time. Give two
# binaries to compare a build before and after a change.
#
#   bash bench/copy-memory.sh [--rows N] BINARY [BINARY ...]
#
# Needs psql and python3.
set -euo pipefail
rows=1000000 bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || bins=(target/release/walden)
for t in psql python3 "${bins[@]}"; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/copy-memory.XXXXXX")
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  wait 2>/dev/null; rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
python3 - "$scratch/in.copy" "$rows" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(1, int(sys.argv[2]) + 1):
        f.write(f"{i}\trow {i} {'y' * 60}\n")
EOF
echo "input: $rows rows, $(($(stat -c %s "$scratch/in.copy") >> 20)) MiB"
hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }
for bin in "${bins[@]}"; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  rm -rf "$scratch/data"
  "$bin" serve --data-dir "$scratch/data" --listen "127.0.0.1:$port" >"$scratch/log" 2>&1 &
  server=$!
  P=(-X -q -h 127.0.0.1 -p "$port" -U walden -d walden)
  for _ in $(seq 100); do psql "${P[@]}" -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
  psql "${P[@]}" -c "CREATE TABLE m (a int PRIMARY KEY, b text)"
  before=$(hwm "$server")
  start=$(date +%s.%N)
  psql "${P[@]}" -c "\\copy m from '$scratch/in.copy'"
  end=$(date +%s.%N)
  after=$(hwm "$server")
  n=$(psql "${P[@]}" -Atc "SELECT count(*) FROM m")
  python3 -c "import sys; b, a, s, e = map(float, sys.argv[1:5]); print(f'{sys.argv[5]}: {int(sys.argv[6]):,} rows, peak RSS {b / 1024:.0f} MiB -> {a / 1024:.0f} MiB, COPY {e - s:.1f} s')" \
    "$before" "$after" "$start" "$end" "$bin" "$n"
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
done
