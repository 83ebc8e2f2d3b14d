package objects

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func pod(name string, l map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: l},
	}
}

// TestCacheListerRunsOnlyAfterStart: building the lister and registering a cache
// (GenericLister, as the adapter's Complete does) runs nothing; Start runs them.
func TestCacheListerRunsOnlyAfterStart(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, pod("a", map[string]string{"app": "web"}), pod("b", nil))
	l := NewCacheLister(client, rulefile.DefaultRESTMapper(), 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	if _, err := l.Names(ctx, podsGR, "ns", nil); err == nil {
		t.Fatal("Names before Start: no error")
	}
	generic, synced, err := l.GenericLister(podsGR)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if synced() || len(client.Actions()) != 0 {
		t.Fatalf("before Start: synced %v, %d calls to the API; want nothing running", synced(), len(client.Actions()))
	}

	if err := l.Start(ctx, podsGR); err != nil {
		t.Fatal(err)
	}
	waitCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if !cache.WaitForCacheSync(waitCtx.Done(), synced) {
		t.Fatal("the registered cache did not start with Start")
	}
	if objs, err := generic.List(labels.Everything()); err != nil || len(objs) != 2 {
		t.Errorf("GenericLister: %d objects, %v; want 2", len(objs), err)
	}
	names, err := l.Names(waitCtx, podsGR, "ns", labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil || !slices.Equal(names, []string{"a"}) {
		t.Errorf("Names = %v, %v; want [a]", names, err)
	}
}
