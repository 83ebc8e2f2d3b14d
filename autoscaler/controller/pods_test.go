package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

func TestPodSourceList(t *testing.T) {
	informer := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Pods().Informer()
	src, err := newPodSource(informer)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ ns, name, app, tier string }{
		{"ns", "web-1", "web", "a"}, {"ns", "web-2", "web", "b"}, {"ns", "api-1", "api", "a"}, {"other", "web-3", "web", "a"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: map[string]string{"app": p.app, "tier": p.tier}}}
		if err := informer.GetIndexer().Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		selector string
		want     []string
	}{
		{"app=web", []string{"web-1", "web-2"}},
		{"app=web,tier=a", []string{"web-1"}},
		{"tier in (a),app!=api", []string{"web-1"}},
		{"app in (web,api)", []string{"api-1", "web-1", "web-2"}}, // no single-valued requirement: scan
		{"!missing", []string{"api-1", "web-1", "web-2"}},
		{"app=none", nil},
	}
	for _, tc := range cases {
		sel, err := labels.Parse(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := src.list("ns", sel)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range pods {
			got = append(got, p.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.selector, got, tc.want)
		}
	}
}

func TestSelectorTrackerFollowsChanges(t *testing.T) {
	web := []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "a"}}}}
	a, b := "HorizontalPodAutoscaler/ns/a", "Autoscaler/ns/b"
	tr := newSelectorTracker()
	tr.register(a)
	tr.register(b)
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"registered only", func() {}, nil},
		{"a selects web", func() { tr.update(a, labels.SelectorFromSet(labels.Set{"app": "web"})) }, []string{a}},
		{"b selects web too", func() { tr.update(b, labels.SelectorFromSet(labels.Set{"tier": "a"})) }, []string{b, a}},
		{"a removed", func() { tr.remove(a) }, []string{b}},
		{"b selects other", func() { tr.update(b, labels.SelectorFromSet(labels.Set{"app": "other"})) }, nil},
		{"b selects everything", func() { tr.update(b, labels.Everything()) }, []string{b}},
		{"other namespace", func() { tr.register("Autoscaler/x/c"); tr.update("Autoscaler/x/c", labels.Everything()) }, []string{b}},
	}
	for _, s := range steps {
		s.do()
		if got := tr.matching("ns", web, 5); !slices.Equal(got, s.want) {
			t.Errorf("%s: matching = %v, want %v", s.name, got, s.want)
		}
	}
	if tr.update(a, labels.Everything()) {
		t.Error("update of a removed key succeeded")
	}
	if got := tr.matching("ns", web, 0); len(got) != 0 {
		t.Errorf("limit 0 returned %v", got)
	}
}

// TestSelectorIndexEqualsScan checks the index against a plain scan of every
// selector, over random selectors of every operator and random label sets.
func TestSelectorIndexEqualsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys, values := []string{"app", "tier", "team"}, []string{"a", "b", "c"}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	randomSelector := func() labels.Selector {
		switch rng.IntN(8) {
		case 0:
			return labels.Nothing()
		case 1:
			return labels.Everything()
		}
		sel := labels.NewSelector()
		for range 1 + rng.IntN(2) {
			ops := []selection.Operator{selection.Equals, selection.NotEquals, selection.In, selection.NotIn, selection.Exists, selection.DoesNotExist}
			op := ops[rng.IntN(len(ops))]
			var vals []string
			switch op {
			case selection.Equals, selection.NotEquals:
				vals = []string{pick(values)}
			case selection.In, selection.NotIn:
				vals = []string{pick(values), pick(values)}
			}
			r, err := labels.NewRequirement(pick(keys), op, vals)
			if err != nil {
				t.Fatal(err)
			}
			sel = sel.Add(*r)
		}
		return sel
	}
	tr := newSelectorTracker()
	all := map[string]labels.Selector{}
	for i := range 60 {
		key := fmt.Sprintf("Autoscaler/ns/k%d", i)
		tr.register(key)
		sel := randomSelector()
		tr.update(key, sel)
		all[key] = sel
	}
	for i := range 20 { // changes and removals after the index was built
		key := fmt.Sprintf("Autoscaler/ns/k%d", i)
		if i%2 == 0 {
			tr.remove(key)
			delete(all, key)
			continue
		}
		sel := randomSelector()
		tr.update(key, sel)
		all[key] = sel
	}
	for range 300 {
		set := map[string]string{}
		for _, k := range keys {
			if rng.IntN(3) > 0 {
				set[k] = pick(values)
			}
		}
		var want []string
		for key, sel := range all {
			if sel.Matches(labels.Set(set)) {
				want = append(want, key)
			}
		}
		slices.Sort(want)
		got := tr.matching("ns", []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Labels: set}}}, len(all)+1)
		if !slices.Equal(got, want) {
			t.Fatalf("labels %v: index gives %v, scan gives %v", set, got, want)
		}
	}
}
