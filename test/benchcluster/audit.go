package benchcluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Identities the controllers call kube-apiserver as, on test/cluster's
// cluster: kube-controller-manager runs with
// --use-service-account-credentials, so its HPA controller (its reads of
// /scale, its status writes and events, and its metrics clients) acts as the
// horizontal-pod-autoscaler ServiceAccount; its shared informers act as the
// process' own user and are not counted (they serve every controller).
// ebbflow-autoscaler runs as the certificate user of test/cluster, for
// everything it does.
const (
	KCMHPAUser  = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
	EbbflowUser = "ebbflow-autoscaler"
)

// AuditKey classifies one request.
type AuditKey struct {
	User, Verb, Group, Resource, Subresource string
}

// AuditCounts counts requests by AuditKey.
type AuditCounts map[AuditKey]int

// auditEvent holds the fields of an audit.k8s.io/v1 Event that CountAudit
// reads.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// maxAuditLine bounds one line of the log (Metadata-level events are a few
// kB).
const maxAuditLine = 4 << 20

// CountAudit counts the ResponseComplete events of an audit log in JSON
// lines whose stageTimestamp (when the response completed) is in
// [from, to) and whose user is one of users (every user if users is
// empty), into counts. Lines that are not JSON objects are an error.
func CountAudit(r io.Reader, users []string, from, to time.Time, counts AuditCounts) error {
	var needles [][]byte
	for _, u := range users {
		q, err := json.Marshal(u)
		if err != nil {
			return err
		}
		needles = append(needles, q)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxAuditLine)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 || !containsAny(b, needles) {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("audit line %d: %w", line, err)
		}
		if e.Stage != "ResponseComplete" || e.StageTimestamp.Before(from) || !e.StageTimestamp.Before(to) {
			continue
		}
		if len(users) > 0 && !contains(users, e.User.Username) {
			continue
		}
		k := AuditKey{User: e.User.Username, Verb: e.Verb}
		if o := e.ObjectRef; o != nil {
			k.Group, k.Resource, k.Subresource = o.APIGroup, o.Resource, o.Subresource
		}
		counts[k]++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	return nil
}

// CountAuditDir counts, as CountAudit, the events of every *.log file of
// dir (kube-apiserver's audit.log and its rotated files) last written at or
// after from.
func CountAuditDir(dir string, users []string, from, to time.Time) (AuditCounts, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	counts := AuditCounts{}
	var errs []error
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.ModTime().Before(from) {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := CountAudit(fh, users, from, to, counts); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(f), err))
		}
		fh.Close()
	}
	return counts, errors.Join(errs...)
}

func containsAny(b []byte, needles [][]byte) bool {
	if len(needles) == 0 {
		return true
	}
	for _, n := range needles {
		if bytes.Contains(b, n) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Categories of requests in the report, in its column order.
const (
	CatScaleGet   = "scale get"
	CatScaleWrite = "scale update"
	CatHPAStatus  = "HPA status write"
	CatHPAWrite   = "HPA write"
	CatEvents     = "events"
	CatMetrics    = "metrics API"
	CatListWatch  = "list/watch"
	CatOther      = "other"
)

// Categories lists the categories in report order.
var Categories = []string{CatScaleGet, CatScaleWrite, CatHPAStatus, CatHPAWrite, CatEvents, CatMetrics, CatListWatch, CatOther}

// Category names what a request is for a controller: a read or a write of
// a /scale subresource, a write of an HPA's status or of the HPA itself
// (ebbflow keeps its scale events in an annotation), an Event, a question
// to one of the metrics APIs (through the aggregator), an informer's list
// or watch, or anything else.
func Category(k AuditKey) string {
	write := k.Verb == "update" || k.Verb == "patch"
	switch {
	case strings.HasSuffix(k.Group, "metrics.k8s.io"):
		return CatMetrics
	case k.Subresource == "scale" && k.Verb == "get":
		return CatScaleGet
	case k.Subresource == "scale" && write:
		return CatScaleWrite
	case k.Resource == "events":
		return CatEvents
	case k.Verb == "list" || k.Verb == "watch":
		return CatListWatch
	case k.Resource == "horizontalpodautoscalers" && k.Subresource == "status" && write:
		return CatHPAStatus
	case k.Resource == "horizontalpodautoscalers" && k.Subresource == "" && write:
		return CatHPAWrite
	}
	return CatOther
}

// ByCategory sums the counts of user by Category.
func (c AuditCounts) ByCategory(user string) map[string]int {
	out := map[string]int{}
	for k, n := range c {
		if k.User == user {
			out[Category(k)] += n
		}
	}
	return out
}
