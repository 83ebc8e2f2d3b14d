package thanostest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/poll"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// thanosBinary builds (or finds cached) the pinned thanos.
func thanosBinary(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "build-tools.sh"), "--print-paths", "thanos")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/build-tools.sh thanos: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "THANOS="); ok {
			return v
		}
	}
	t.Fatal("hack/build-tools.sh printed no THANOS path")
	return ""
}

// TestHADeduplicates starts two replicas scraping one exporter behind Thanos
// Query: a count over the replicas' series is 1 through Query and each
// replica carries its own replica label.
func TestHADeduplicates(t *testing.T) {
	e := exporter.New()
	e.Start(t)
	e.SetGauge("thanostest_gauge", map[string]string{"k": "v"}, 7)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := Start(ctx, Options{
		Thanos:  thanosBinary(t),
		Targets: []promtest.Target{{Addr: e.Addr(), Job: "t", HonorLabels: true}},
		Dir:     t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(h.LogTail(30))
		}
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	for i := range h.Replicas() {
		if _, err := h.Replica(i).WaitForVector(ctx, `thanostest_gauge`, func(v model.Vector) bool { return len(v) == 1 }); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	client, err := api.NewClient(api.Config{Address: h.QueryURL(), Client: loopback})
	if err != nil {
		t.Fatal(err)
	}
	q := v1.NewAPI(client)
	poll.Until(t, time.Minute, "count through thanos query", func() error {
		v, _, err := q.Query(ctx, `count(thanostest_gauge)`, time.Now())
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) == 1 && vec[0].Value == 1 {
			return nil
		}
		return fmt.Errorf("= %v (err %v), want 1", v, err)
	})
	// Without deduplication, each replica's series is there, told apart by
	// its replica label.
	u := h.QueryURL() + "/api/v1/query?dedup=false&query=" + url.QueryEscape(`count(thanostest_gauge) by (replica)`)
	resp, err := loopback.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Data.Result) != h.Replicas() {
		t.Fatalf("count by replica without dedup: %d samples, want one per replica (%d)", len(body.Data.Result), h.Replicas())
	}
}
