package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podLabelIndex indexes pods by "<namespace>/<key>=<value>" for each label,
// so that the pods of one scale target are found without scanning every pod
// of the namespace (a namespace may hold thousands of autoscaled workloads).
const podLabelIndex = "ebbflow.dev/pod-label"

func podLabelKeys(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(p.Labels))
	for k, v := range p.Labels {
		keys = append(keys, labelKey(p.Namespace, k, v))
	}
	return keys, nil
}

func labelKey(namespace, k, v string) string { return namespace + "/" + k + "=" + v }

// podSource lists the pods a selector matches in a namespace.
type podSource struct {
	informer cache.SharedIndexInformer
	lister   corelisters.PodLister
}

// newPodSource adds the label index to a pod informer that has not started.
func newPodSource(informer cache.SharedIndexInformer) (*podSource, error) {
	if err := informer.AddIndexers(cache.Indexers{podLabelIndex: podLabelKeys}); err != nil {
		return nil, fmt.Errorf("add pod label index: %w", err)
	}
	return &podSource{informer: informer, lister: corelisters.NewPodLister(informer.GetIndexer())}, nil
}

// list returns the pods of namespace matching sel. Pods are shared with the
// cache and must not be modified. With an equality requirement in sel only
// the pods carrying that label are examined; otherwise the namespace is
// scanned.
func (s *podSource) list(namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		op := r.Operator()
		if (op != selection.Equals && op != selection.DoubleEquals && op != selection.In) || r.Values().Len() != 1 {
			continue
		}
		objs, err := s.informer.GetIndexer().ByIndex(podLabelIndex, labelKey(namespace, r.Key(), r.Values().UnsortedList()[0]))
		if err != nil {
			return nil, err
		}
		out := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return s.lister.Pods(namespace).List(sel)
}
