package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
