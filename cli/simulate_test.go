package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimulateFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"-f is required", "--rules is required", "--prometheus-url is required"}},
		{[]string{"-f", "x", "--rules", "r", "--prometheus-url", "ftp://p", "-o", "yaml", "--step", "0s", "--pod-startup", "-1s", "--history-refresh", "-5m",
			"--nan-values", "maybe", "--initial-replicas", "-2", "--pod-name-regex", "(", "--horizontal-pod-autoscaler-tolerance", "-1"},
			[]string{"--prometheus-url \"ftp://p\" must be an http or https URL", "-o must be table or json", "--step must be positive",
				"--pod-startup must not be negative", "--history-refresh must not be negative", "--nan-values must be", "--initial-replicas must be", "--pod-name-regex",
				"--horizontal-pod-autoscaler-tolerance must not be negative"}},
	} {
		_, err := run(t, append([]string{"simulate"}, tc.args...)...)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("args %v: error %v, want %q", tc.args, err, w)
			}
		}
	}
}

func TestSimulateTimeRange(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	o := &simulateOptions{since: 24 * time.Hour, step: 15 * time.Second, now: func() time.Time { return now }}
	rng, err := o.timeRange()
	if err != nil || !rng.Start.Equal(now.Add(-24*time.Hour)) || !rng.End.Equal(now) || rng.Steps() != 5761 {
		t.Errorf("--since 24h: %+v (%d steps), %v", rng, rng.Steps(), err)
	}
	for _, tc := range []struct {
		start, end, want string
	}{
		{"2026-11-22T10:00:00Z", "2026-11-22T09:00:00Z", "empty range"},
		{"yesterday", "", "--start"},
		{"", "noon", "--end"},
	} {
		o := &simulateOptions{since: time.Hour, step: time.Second, start: tc.start, end: tc.end, now: func() time.Time { return now }}
		if _, err := o.timeRange(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q..%q: error %v, want %q", tc.start, tc.end, err, tc.want)
		}
	}
	o = &simulateOptions{step: time.Millisecond, start: "2020-01-01T00:00:00Z", end: "2026-01-01T00:00:00Z", now: time.Now}
	if _, err := o.timeRange(); err == nil || !strings.Contains(err.Error(), "longer --step") {
		t.Errorf("a range of billions of steps: %v", err)
	}
}

func TestLoadSpecs(t *testing.T) {
	good := writeTemp(t, "specs.yaml", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: External
    external:
      metric: {name: q}
      target: {type: AverageValue, averageValue: "3"}
---
apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: web-tuned}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 8
  dryRun: true
  metrics:
  - type: External
    external:
      metric: {name: q}
      target: {type: AverageValue, averageValue: "2"}
    treatMissingAs: Zero
`)
	specs, err := loadSpecs([]string{good})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].name != "HorizontalPodAutoscaler/web" || specs[0].namespace != "shop" ||
		specs[1].name != "Autoscaler/web-tuned" || !specs[1].spec.Extensions.DryRun || !specs[1].spec.MetricOptions[0].MissingAsZero ||
		specs[1].spec.HPA.MaxReplicas != 8 {
		t.Errorf("specs %+v", specs)
	}
	for _, tc := range []struct{ content, want string }{
		{"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nspec: {maxReplica: 3}\n", `unknown field "maxReplica"`},
		{"apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\n", "neither an"},
		{"apiVersion: v1\nkind: ConfigMap\n", "no Autoscaler or HorizontalPodAutoscaler"},
		{"kind: [", "document 1"},
	} {
		if _, err := loadSpecs([]string{writeTemp(t, "bad.yaml", tc.content)}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.content, err, tc.want)
		}
	}
	twice, err := loadSpecs([]string{good, writeTemp(t, "tuned.yaml", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec: {maxReplicas: 3}\n")})
	if err != nil || len(twice) != 3 || twice[0].name != "HorizontalPodAutoscaler/web (specs.yaml#2)" || twice[2].name != "HorizontalPodAutoscaler/web (tuned.yaml#1)" || twice[1].name != "Autoscaler/web-tuned" {
		t.Errorf("names of specs sharing a name: %v %v", twice, err)
	}
	if _, err := loadSpecs([]string{filepath.Join(t.TempDir(), "absent.yaml")}); err == nil {
		t.Error("a missing file loaded")
	}
}

func TestPodNamePattern(t *testing.T) {
	for _, tc := range []struct {
		flag, kind, name string
		match, miss      []string
	}{
		{"", "Deployment", "web", []string{"web-7d9f8c-x2x4z"}, []string{"webhook-7d9f8c-x2x4z", "web-0", "other-web-1-2"}},
		{"", "StatefulSet", "db.x", []string{"db.x-0", "db.x-12"}, []string{"dbax-0", "db.x-a"}},
		{"", "Rollout", "api", []string{"api-abc-12"}, []string{"apix-1"}},
		{"^custom-", "Deployment", "web", []string{"custom-1"}, []string{"web-7d9f8c-x2x4z"}},
	} {
		re := podNamePattern(tc.flag, tc.kind, tc.name)
		for _, m := range tc.match {
			if !re.MatchString(m) {
				t.Errorf("%s %s: %q does not match %s", tc.kind, tc.name, m, re)
			}
		}
		for _, m := range tc.miss {
			if re.MatchString(m) {
				t.Errorf("%s %s: %q matches %s", tc.kind, tc.name, m, re)
			}
		}
	}
}
