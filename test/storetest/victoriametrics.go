package storetest

import (
	"net"
	"path/filepath"
	"strconv"
)

// victoriaMetricsArgs is VictoriaMetrics single-node's command line: data in
// the store's directory, HTTP (reads, remote write, /health) on loopback.
// One flag differs from its defaults: -search.latencyOffset (default 30s,
// the newest 30 s of samples are hidden from queries so that late samples
// do not make answers jump) is 2s, so that a test sees a sample 2 s after it
// was written rather than 30 s.
func (s *Store) victoriaMetricsArgs(ports [3]int) ([]string, error) {
	return []string{
		"-storageDataPath=" + filepath.Join(s.opts.Dir, "data"),
		"-httpListenAddr=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		"-retentionPeriod=30d",
		"-search.latencyOffset=2s",
		"-loggerLevel=WARN",
	}, nil
}
