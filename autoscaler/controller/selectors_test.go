package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
