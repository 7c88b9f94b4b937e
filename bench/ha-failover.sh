#!/usr/bin/env bash
# The automatic-failover fault matrix (issue 37): three etcd members and three
# Walden nodes, each in a network namespace of its own, clients writing through
# a multi-host connection string; each fault repeated HA_RUNS times. Prints, per
# fault, the time from the fault to the first commit acknowledged by the new
# primary (min / median / p90 / max), acknowledged commits missing (must be 0)
# and acknowledgements of the old primary received after the new one's first.
# Needs root, iproute2 and etcd (apt-get install etcd-server etcd-client).
#
#   bench/ha-failover.sh                         # 20 SIGKILLs of the primary, TTL 5 s
#   HA_FAULTS=kill,stop,cut-etcd,cut-peers,cut-all,etcd-kill HA_RUNS=5 bench/ha-failover.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export HA_RUNS="${HA_RUNS:-20}" HA_TTL="${HA_TTL:-5}" HA_FAULTS="${HA_FAULTS:-kill}"
nice -n 10 cargo test --release -p walden --test it ha_etcd_failover:: -- \
  --ignored fault_matrix_in_network_namespaces --nocapture --test-threads 1
