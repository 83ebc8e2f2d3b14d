package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/test/loadgen"
)

const (
	explainUp  = "Autoscaler:         shop/web-ebbflow\nTarget:             Deployment/web-ebbflow\nReplicas:           1 → 3\nOutcome:            ScaledUp (scaled)\n  Pods  http_requests_per_second  11  4  …\n"
	explainDry = "Autoscaler:         shop/web-hpa-dryrun\nReplicas:           2 → 4\nOutcome:            WouldScale (dry run)\n"
	events     = "LAST                   COUNT   MESSAGE\n2026-11-27T15:00:00Z   1       would scale from 2 to 4\n"
)

func goodShown() shown {
	return shown{explains: map[string]string{webEAS: explainUp, dryRun: explainDry}, explainErrs: map[string]error{}, dryRunEvents: events}
}

func TestJudgeShown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*shown)
		wantErr string
	}{
		{"all shown", func(*shown) {}, ""},
		{"no events, only the header", func(s *shown) { s.dryRunEvents = "LAST   COUNT   MESSAGE\n" }, "recorded no DryRunRescale event"},
		{"events failed", func(s *shown) { s.dryRunEvError = errors.New("forbidden") }, "events: forbidden"},
		{"explain never shown", func(s *shown) { delete(s.explains, webEAS) }, "explain web-ebbflow was never shown"},
		{"explain failed", func(s *shown) { s.explainErrs[dryRun] = errors.New("exit 1") }, "explain web-hpa-dryrun failed"},
		{"explain not a scale-up", func(s *shown) { s.explains[webEAS] = strings.Replace(explainUp, "1 → 3", "3 → 3", 1) }, "shows 3 → 3"},
		{"explain without the metric", func(s *shown) {
			s.explains[webEAS] = strings.Replace(explainUp, "http_requests_per_second", "cpu", 1)
		}, "does not name the metric"},
		{"explain without replicas", func(s *shown) { s.explains[dryRun] = "no decision yet\n" }, "no \"Replicas: n → m\" line"},
		{"dry run not WouldScale", func(s *shown) { s.explains[dryRun] = strings.Replace(explainDry, "WouldScale", "ScaledUp", 1) }, "without the WouldScale outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := goodShown()
			tc.change(&s)
			err := judgeShown(s)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestJudgeLoad(t *testing.T) {
	ok := loadResult{Result: loadgen.Result{Sent: 100, OK: 95, Errors: 5}}
	for _, tc := range []struct {
		name    string
		eas     loadResult
		wantErr string
	}{
		{"answered", ok, ""},
		{"errors", loadResult{Result: loadgen.Result{Sent: 100, OK: 80, Errors: 20}}, "only 80 of 100"},
		{"nothing sent", loadResult{}, "no request sent"},
		{"failed", loadResult{err: errors.New("dial: refused")}, "dial: refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := judgeLoad(map[string]loadResult{webHPA: ok, webEAS: tc.eas})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestJudgeParity(t *testing.T) {
	at := func(hpa, eas []int32) []sample {
		var out []sample
		for i := range hpa {
			out = append(out, sample{W: map[string]workloadState{webHPA: {Replicas: hpa[i]}, webEAS: {Replicas: eas[i]}}})
		}
		return out
	}
	if err := judgeParity(at([]int32{1, 4, 5, 1}, []int32{1, 5, 4, 1})); err != nil {
		t.Errorf("same peak: %v", err)
	}
	if err := judgeParity(at([]int32{1, 4, 5, 1}, []int32{1, 6, 6, 1})); err != nil {
		t.Errorf("one apart: %v", err)
	}
	if err := judgeParity(at([]int32{1, 5, 5, 1}, []int32{1, 2, 2, 1})); err == nil {
		t.Error("peaks 5 and 2 passed")
	}
}
