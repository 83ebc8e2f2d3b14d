package main

import (
	"context"
	"fmt"
	"io"

	easv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// showcase prints, once each and as they happen, what only Ebbflow does:
// `kubectl ebbflow explain` of web-ebbflow's first scale-up, of the dry-run
// Autoscaler's first "would scale", and the worker's wake from zero on a
// message.
type showcase struct {
	explained, dryRunShown, enqueued bool
	shown                            shown // what it showed, judged at the end
}

// step looks at the newest sample and shows what has just happened.
func (sc *showcase) step(ctx context.Context, d *realDemo, s sample, out io.Writer, wakeDone chan<- wakeResult) {
	if due := showDue(*sc, s); due.explain {
		sc.explained = true
		sc.printExplain(ctx, d, out, webEAS, fmt.Sprintf("ebbflow's Autoscaler scaled %s to %d: why, in its own words", webEAS, s.W[webEAS].Spec))
	} else if due.dryRun {
		sc.dryRunShown = true
		sc.printExplain(ctx, d, out, dryRun, fmt.Sprintf("the dry-run Autoscaler on %s would scale it to %d; it writes nothing (kube-controller-manager's HPA has it at %d)", webHPA, s.W[dryRun].Desired, s.W[webHPA].Spec))
	}
	if showDue(*sc, s).wake {
		sc.enqueued = true
		fmt.Fprintf(out, "demo: ▶ worker is at zero replicas; enqueuing %d messages on the queue…\n", wakeMessages)
		go func() { wakeDone <- d.wakeWorker(ctx) }()
	}
}

// due is what the showcase should show at a sample.
type due struct{ explain, dryRun, wake bool }

// showDue is pure: explain once web-ebbflow's Deployment was scaled above
// one replica, the dry-run once its last decision is one it would have
// written (WouldScale), the wake once the worker's Deployment is at zero.
func showDue(sc showcase, s sample) due {
	eas, dry, wk := s.W[webEAS], s.W[dryRun], s.W[worker]
	return due{
		explain: !sc.explained && eas.Seen && eas.Spec > 1,
		dryRun:  !sc.dryRunShown && dry.Seen && dry.Outcome == string(easv1alpha1.OutcomeWouldScale),
		wake:    !sc.enqueued && wk.Seen && wk.Spec == 0,
	}
}

// printExplain prints the explain output framed with a title and keeps it
// for the verdict.
func (sc *showcase) printExplain(ctx context.Context, d *realDemo, out io.Writer, name, title string) {
	fmt.Fprintf(out, "demo: ▶ %s — kubectl ebbflow explain -n %s %s\n", title, realNS, name)
	text, err := d.explain(ctx, name)
	if sc.shown.explains == nil {
		sc.shown.explains, sc.shown.explainErrs = map[string]string{}, map[string]error{}
	}
	if err != nil {
		sc.shown.explainErrs[name] = err
		fmt.Fprintf(out, "demo:   explain failed: %v\n", err)
		return
	}
	sc.shown.explains[name] = text
	fmt.Fprint(out, indent(text))
}
