package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A spec file with schedules and a sync period loads with them; a bad
// schedule is refused naming its field.
func TestLoadSpecSchedules(t *testing.T) {
	spec := `apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: shop}
  maxReplicas: 8
  syncPeriodSeconds: 5
  schedules:
  - {name: sale, cron: "0 9 * * 1-5", timeZone: Europe/Paris, duration: 2h, minReplicas: 6, ramp: 2m}
  - {cron: "%s", duration: 1h, minReplicas: 2}
`
	specs, err := loadSpecs([]string{writeTemp(t, "shop.yaml", strings.Replace(spec, "%s", "@daily", 1))})
	if err != nil {
		t.Fatal(err)
	}
	s := specs[0].spec
	if s.SyncPeriod != 5*time.Second || len(s.Schedules) != 2 || s.Schedules[0].Name != "sale" || s.Schedules[0].Ramp != 2*time.Minute {
		t.Errorf("spec %+v", s)
	}
	_, err = loadSpecs([]string{writeTemp(t, "bad.yaml", strings.Replace(spec, "%s", "61 * * * *", 1))})
	if err == nil || !strings.Contains(err.Error(), "spec.schedules[1].cron") {
		t.Errorf("bad cron: %v, want spec.schedules[1].cron named", err)
	}
}

// The replay's step is --step when given, else the shortest
// syncPeriodSeconds below the default.
func TestStepFor(t *testing.T) {
	specs, err := loadSpecs([]string{writeTemp(t, "specs.yaml", `apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: fast}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: a}, maxReplicas: 3, syncPeriodSeconds: 5}
---
apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: batch}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: b}, maxReplicas: 3, syncPeriodSeconds: 60}
`)})
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	if got := stepFor(specs, 15*time.Second, false, &w); got != 5*time.Second || w.Len() != 0 {
		t.Errorf("default step: %s (%q), want 5s", got, w.String())
	}
	if got := stepFor(specs, 15*time.Second, true, &w); got != 15*time.Second || !strings.Contains(w.String(), "Autoscaler/fast: syncPeriodSeconds 5s is shorter than --step 15s") {
		t.Errorf("--step 15s: %s (%q), want 15s and a warning", got, w.String())
	}
	if got := stepFor(specs[1:], 15*time.Second, false, &w); got != 15*time.Second {
		t.Errorf("only a longer period: %s, want the default 15s (the replay evaluates it every 60s)", got)
	}
}
