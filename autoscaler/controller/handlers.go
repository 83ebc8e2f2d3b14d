package controller

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// queueKey is "<kind>/<namespace>/<name>".
func queueKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// splitKey reverses queueKey.
func splitKey(key string) (kind, namespace, name string, err error) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("invalid queue key %q", key)
	}
	return parts[0], parts[1], parts[2], nil
}

func (c *Controller) keyOf(kind string, obj any) (string, bool) {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("get key of %T: %w", obj, err))
		return "", false
	}
	namespace, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		utilruntime.HandleError(err)
		return "", false
	}
	return queueKey(kind, namespace, name), true
}

// handlers evaluates a new object at once, an object whose spec changed
// (generation bumped) or whose pause or dry-run annotation changed at once, and leaves other updates — such as the
// controller's own status writes — to the periodic evaluation. A deleted
// object is evaluated once more so that its state is dropped.
func (c *Controller) handlers(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if key, ok := c.keyOf(kind, obj); ok {
				c.tracker.register(key)
				c.enqueueAfter(key, 0)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			key, ok := c.keyOf(kind, newObj)
			if !ok {
				return
			}
			if generation(oldObj) != generation(newObj) || controlsChanged(oldObj, newObj) {
				c.enqueueAfter(key, 0)
			}
		},
		DeleteFunc: func(obj any) {
			if key, ok := c.keyOf(kind, obj); ok {
				c.tracker.remove(key)
				c.enqueueAfter(key, 0)
			}
		},
	}
}

// controlsChanged reports whether an annotation that switches an extension
// (pause, dry-run) changed.
func controlsChanged(oldObj, newObj any) bool {
	o, err1 := apimeta.Accessor(oldObj)
	n, err2 := apimeta.Accessor(newObj)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, k := range controlAnnotations {
		if o.GetAnnotations()[k] != n.GetAnnotations()[k] {
			return true
		}
	}
	return false
}

func generation(obj any) int64 {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return -1
	}
	return m.GetGeneration()
}
