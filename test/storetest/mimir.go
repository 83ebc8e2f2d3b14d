package storetest

import (
	"fmt"
	"os"
	"path/filepath"
)

// mimirConfig is Mimir's configuration for one process running every
// component (-target=all) on loopback: in-memory rings (no memberlist, no
// Consul), blocks on the local filesystem, no usage reports. Compared with
// Mimir's defaults it differs where a test on one machine needs it:
//   - memberlist on 127.0.0.1 and a free port: Mimir starts its gossip
//     even with in-memory rings, by default on every interface at 7946;
//   - out_of_order_time_window: history older than the newest sample of the
//     tenant (Push of past days while Prometheus writes now) is accepted;
//     by default Mimir refuses it as out of bounds;
//   - frontend address 127.0.0.1: the query-frontend tells the querier
//     where to send answers; by default it advertises the address of a
//     private interface (eth0), on which nothing here listens;
//   - query_ingesters_within: 0 and ship_interval: 0: every query is answered
//     by the ingester, which keeps all blocks (nothing is shipped to the
//     store-gateway, so days of pushed history are read at once rather than
//     after the store-gateway's next sync).
const mimirConfig = `multitenancy_enabled: true
target: all
usage_stats:
  enabled: false
server:
  http_listen_address: 127.0.0.1
  http_listen_port: %[2]d
  grpc_listen_address: 127.0.0.1
  grpc_listen_port: %[3]d
  log_level: warn
common:
  storage:
    backend: filesystem
    filesystem:
      dir: %[1]s/bucket
blocks_storage:
  storage_prefix: blocks
  tsdb:
    dir: %[1]s/tsdb
    ship_interval: 0s
    retention_period: 240h
  bucket_store:
    sync_dir: %[1]s/tsdb-sync
compactor:
  data_dir: %[1]s/compactor
  sharding_ring:
    instance_addr: 127.0.0.1
    kvstore: {store: inmemory}
memberlist:
  bind_addr: [127.0.0.1]
  bind_port: %[4]d
  advertise_addr: 127.0.0.1
frontend:
  address: 127.0.0.1
distributor:
  ring:
    instance_addr: 127.0.0.1
    kvstore: {store: inmemory}
ingester:
  ring:
    instance_addr: 127.0.0.1
    kvstore: {store: inmemory}
    replication_factor: 1
    min_ready_duration: 0s
    final_sleep: 0s
store_gateway:
  sharding_ring:
    instance_addr: 127.0.0.1
    kvstore: {store: inmemory}
    replication_factor: 1
ruler:
  ring:
    instance_addr: 127.0.0.1
    kvstore: {store: inmemory}
ruler_storage:
  backend: filesystem
  filesystem:
    dir: %[1]s/rules
limits:
  query_ingesters_within: 0s
  out_of_order_time_window: 120h
  max_global_series_per_user: 0
  ingestion_rate: 1000000
  ingestion_burst_size: 10000000
`

// mimirArgs writes Mimir's configuration for the given ports and returns its
// command line.
func (s *Store) mimirArgs(ports [3]int) ([]string, error) {
	path := filepath.Join(s.opts.Dir, "mimir.yaml")
	cfg := fmt.Sprintf(mimirConfig, s.opts.Dir, ports[0], ports[1], ports[2])
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("mimir config: %w", err)
	}
	return []string{"-config.file=" + path}, nil
}
