package cluster

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// TestAdapterOutage stops the adapter until kube-apiserver marks its
// APIServices unavailable, then checks that StartAdapter brings them back.
func TestAdapterOutage(t *testing.T) {
	c := StartT(t, Options{RulesYAML: []byte(testRules), Nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.StopAdapter()
	t0 := time.Now()
	err = waitFor(ctx, "APIService unavailable", 2*time.Minute, nil, func(ctx context.Context) (bool, error) {
		obj, err := dyn.Resource(apiServiceGVR()).Get(ctx, c.APIServiceNames()[0], metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		status, _, _ := availableCondition(obj)
		return status == "False", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("APIService unavailable %v after the adapter stopped", time.Since(t0))
	t0 = time.Now()
	if err := c.StartAdapter(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("APIServices available again %v after StartAdapter", time.Since(t0))
	if _, err := c.Client().Discovery().ServerResourcesForGroupVersion("custom.metrics.k8s.io/v1beta2"); err != nil {
		t.Errorf("discovery after restart: %v", err)
	}
}
