package cli

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// workload is a Deployment, StatefulSet or ReplicaSet of the -f files: what
// its pods request, for the Utilization targets of the specs scaling it.
type workload struct {
	kind, namespace, name string
	pod                   replicas.Pod
}

// loadWorkloads reads the apps/v1 Deployments, StatefulSets and ReplicaSets
// of the files; other documents are skipped.
func loadWorkloads(paths []string) ([]workload, error) {
	var out []workload
	for _, path := range paths {
		err := eachDocument(path, func(doc int, raw []byte) error {
			w, ok, err := parseWorkload(raw)
			if err != nil {
				return fmt.Errorf("%s (document %d): %w", path, doc, err)
			}
			if ok {
				out = append(out, w)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseWorkload decodes one workload; ok is false for other kinds.
func parseWorkload(raw []byte) (w workload, ok bool, err error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &head); err != nil {
		return workload{}, false, err
	}
	if head.APIVersion != appsv1.SchemeGroupVersion.String() {
		return workload{}, false, nil
	}
	var meta struct {
		Metadata struct{ Name, Namespace string } `json:"metadata"`
		Spec     struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	switch head.Kind {
	case "Deployment", "StatefulSet", "ReplicaSet":
	default:
		return workload{}, false, nil
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return workload{}, false, fmt.Errorf("%s: %w", head.Kind, err)
	}
	pod := replicas.PodFromCore(&corev1.Pod{Spec: meta.Spec.Template.Spec})
	return workload{kind: head.Kind, namespace: meta.Metadata.Namespace, name: meta.Metadata.Name, pod: pod}, true, nil
}

// parsePodRequests parses --pod-requests: comma-separated resource=quantity
// pairs, the requests of one container standing for the whole pod.
func parsePodRequests(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, pair := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--pod-requests: %q is not resource=quantity (e.g. cpu=250m,memory=256Mi)", pair)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("--pod-requests: %s: %w", name, err)
		}
		if _, dup := out[corev1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("--pod-requests: %s given twice", name)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// podTemplate is what the pods of spec's scale target request: --pod-requests
// when given, else the template of the -f workload the spec scales (same
// kind and name, in namespace ns or without one); nil when neither is known.
func podTemplate(flag corev1.ResourceList, workloads []workload, ref namedSpec, ns string) *replicas.Pod {
	if flag != nil {
		return &replicas.Pod{Containers: []replicas.Container{{Name: "pod", Requests: flag}}}
	}
	target := ref.spec.HPA.ScaleTargetRef
	for _, w := range workloads {
		if w.kind == target.Kind && w.name == target.Name && (w.namespace == "" || w.namespace == ns) {
			pod := w.pod
			return &pod
		}
	}
	return nil
}
