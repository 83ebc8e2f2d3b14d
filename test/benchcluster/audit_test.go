package benchcluster

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// auditLog has, in order: an ebbflow /scale get inside the window, a kcm
// external metrics question inside, an ebbflow status update exactly at
// the window's start (counted), an ebbflow event at its end (not counted),
// a stage other than ResponseComplete, another user, a blank line, an HPA
// update and a scale update of ebbflow, and a watch without objectRef
// details beyond the resource.
const auditLog = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/b/deployments/w00001/scale","verb":"get","user":{"username":"ebbflow-autoscaler","groups":["system:authenticated"]},"objectRef":{"resource":"deployments","namespace":"b","name":"w00001","apiGroup":"apps","apiVersion":"v1","subresource":"scale"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T12:00:04.900000Z","stageTimestamp":"2026-11-23T12:00:05.000100Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"2","stage":"ResponseComplete","requestURI":"/apis/external.metrics.k8s.io/v1beta1/namespaces/b/bench_q0?labelSelector=hpa%3Dw00001","verb":"get","user":{"username":"system:serviceaccount:kube-system:horizontal-pod-autoscaler","uid":"u","groups":["system:serviceaccounts"]},"objectRef":{"resource":"bench_q0","namespace":"b","apiGroup":"external.metrics.k8s.io","apiVersion":"v1beta1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T12:00:06.000000Z","stageTimestamp":"2026-11-23T12:00:06.100000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"3","stage":"ResponseComplete","verb":"update","user":{"username":"ebbflow-autoscaler"},"objectRef":{"resource":"horizontalpodautoscalers","namespace":"b","name":"w00001","apiGroup":"autoscaling","apiVersion":"v2","subresource":"status"},"stageTimestamp":"2026-11-23T12:00:00Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"4","stage":"ResponseComplete","verb":"create","user":{"username":"ebbflow-autoscaler"},"objectRef":{"resource":"events","namespace":"b","apiVersion":"v1"},"stageTimestamp":"2026-11-23T12:00:30Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"5","stage":"Panic","verb":"get","user":{"username":"ebbflow-autoscaler"},"objectRef":{"resource":"deployments","apiGroup":"apps","subresource":"scale"},"stageTimestamp":"2026-11-23T12:00:10Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"6","stage":"ResponseComplete","verb":"get","user":{"username":"admin"},"objectRef":{"resource":"deployments","apiGroup":"apps","subresource":"scale"},"stageTimestamp":"2026-11-23T12:00:10Z"}

{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"7","stage":"ResponseComplete","verb":"update","user":{"username":"ebbflow-autoscaler"},"objectRef":{"resource":"horizontalpodautoscalers","namespace":"b","name":"w00001","apiGroup":"autoscaling"},"stageTimestamp":"2026-11-23T12:00:11Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"8","stage":"ResponseComplete","verb":"update","user":{"username":"ebbflow-autoscaler"},"objectRef":{"resource":"deployments","namespace":"b","name":"w00001","apiGroup":"apps","subresource":"scale"},"stageTimestamp":"2026-11-23T12:00:12Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"9","stage":"ResponseComplete","verb":"watch","user":{"username":"ebbflow-autoscaler"},"objectRef":{"resource":"horizontalpodautoscalers","apiGroup":"autoscaling"},"stageTimestamp":"2026-11-23T12:00:13Z"}
`

var (
	windowFrom = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	windowTo   = windowFrom.Add(30 * time.Second)
)

func TestCountAudit(t *testing.T) {
	ebb := func(verb, group, resource, sub string) AuditKey {
		return AuditKey{User: EbbflowUser, Verb: verb, Group: group, Resource: resource, Subresource: sub}
	}
	kcmMetric := AuditKey{User: KCMHPAUser, Verb: "get", Group: "external.metrics.k8s.io", Resource: "bench_q0"}
	tests := []struct {
		name  string
		users []string
		want  AuditCounts
	}{
		{"both controllers", []string{EbbflowUser, KCMHPAUser}, AuditCounts{
			ebb("get", "apps", "deployments", "scale"):                         1,
			ebb("update", "autoscaling", "horizontalpodautoscalers", "status"): 1,
			ebb("update", "autoscaling", "horizontalpodautoscalers", ""):       1,
			ebb("update", "apps", "deployments", "scale"):                      1,
			ebb("watch", "autoscaling", "horizontalpodautoscalers", ""):        1,
			kcmMetric: 1,
		}},
		{"kcm only", []string{KCMHPAUser}, AuditCounts{kcmMetric: 1}},
		{"every user", nil, AuditCounts{
			ebb("get", "apps", "deployments", "scale"):                         1,
			ebb("update", "autoscaling", "horizontalpodautoscalers", "status"): 1,
			ebb("update", "autoscaling", "horizontalpodautoscalers", ""):       1,
			ebb("update", "apps", "deployments", "scale"):                      1,
			ebb("watch", "autoscaling", "horizontalpodautoscalers", ""):        1,
			kcmMetric: 1,
			{User: "admin", Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale"}: 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuditCounts{}
			if err := CountAudit(strings.NewReader(auditLog), tt.users, windowFrom, windowTo, got); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("counts:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestCountAuditRejectsGarbage(t *testing.T) {
	err := CountAudit(strings.NewReader(`{"user":{"username":"ebbflow-autoscaler"}`+"\n"), nil, windowFrom, windowTo, AuditCounts{})
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err = %v, want an error naming line 1", err)
	}
}

func TestByCategory(t *testing.T) {
	counts := AuditCounts{}
	if err := CountAudit(strings.NewReader(auditLog), nil, windowFrom, windowTo, counts); err != nil {
		t.Fatal(err)
	}
	counts[AuditKey{User: EbbflowUser, Verb: "create", Resource: "events"}] = 4
	counts[AuditKey{User: EbbflowUser, Verb: "patch", Group: "events.k8s.io", Resource: "events"}] = 1
	counts[AuditKey{User: EbbflowUser, Verb: "get", Group: "custom.metrics.k8s.io", Resource: "pods"}] = 2
	counts[AuditKey{User: EbbflowUser, Verb: "list", Group: "apps", Resource: "deployments"}] = 1
	counts[AuditKey{User: EbbflowUser, Verb: "get", Group: "coordination.k8s.io", Resource: "leases"}] = 3
	want := map[string]int{CatScaleGet: 1, CatScaleWrite: 1, CatHPAStatus: 1, CatHPAWrite: 1, CatEvents: 5, CatMetrics: 2, CatListWatch: 2, CatOther: 3}
	if got := counts.ByCategory(EbbflowUser); !maps.Equal(got, want) {
		t.Errorf("ebbflow:\n got %v\nwant %v", got, want)
	}
	if got, want := counts.ByCategory(KCMHPAUser), map[string]int{CatMetrics: 1}; !maps.Equal(got, want) {
		t.Errorf("kcm: got %v, want %v", got, want)
	}
}

func TestCountAuditDir(t *testing.T) {
	dir := t.TempDir()
	lines := strings.SplitAfter(auditLog, "\n")
	// A rotated file with the first two lines, the current one with the rest,
	// and a rotated file last written before the window, whose events are
	// all skipped.
	old := filepath.Join(dir, "audit-2026-11-23T11-00-00.000.log")
	for name, text := range map[string]string{
		"audit-2026-11-23T12-00-07.000.log": strings.Join(lines[:2], ""),
		"audit.log":                         strings.Join(lines[2:], ""),
		filepath.Base(old):                  lines[0],
		"policy.yaml":                       "not a log",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"audit-2026-11-23T12-00-07.000.log", "audit.log"} {
		if err := os.Chtimes(filepath.Join(dir, name), windowTo, windowTo); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, windowFrom.Add(-time.Minute), windowFrom.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := CountAuditDir(dir, []string{EbbflowUser}, windowFrom, windowTo)
	if err != nil {
		t.Fatal(err)
	}
	if n := got.ByCategory(EbbflowUser)[CatScaleGet]; n != 1 {
		t.Errorf("scale gets = %d, want 1 (the file written before the window skipped)", n)
	}
	total := 0
	for _, n := range got {
		total += n
	}
	if total != 5 {
		t.Errorf("total = %d, want 5: %v", total, got)
	}
}
