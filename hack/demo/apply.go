package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	easv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	easclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
)

// decoder decodes the built-in kinds and ebbflow's Autoscaler
// (autoscaling.ebbflow.dev/v1alpha1).
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(easv1alpha1.AddToScheme(s))
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}()

// clients are the typed clients of the demo's cluster.
type clients struct {
	kube kubernetes.Interface
	eas  easclient.Interface // Autoscalers
}

// kustomization is the part of kustomization.yaml the demo understands.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
}

// loadManifests decodes the resources listed in dir/kustomization.yaml, with
// the kustomization's namespace set on every namespaced object.
func loadManifests(dir string) ([]runtime.Object, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("read kustomization: %w", err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("parse kustomization (the demo reads only namespace and resources): %w", err)
	}
	var objs []runtime.Object
	for _, r := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			return nil, fmt.Errorf("read resource: %w", err)
		}
		docs, err := decodeAll(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		objs = append(objs, docs...)
	}
	for _, o := range objs {
		if _, isNS := o.(*corev1.Namespace); !isNS && k.Namespace != "" {
			o.(metav1.Object).SetNamespace(k.Namespace)
		}
	}
	return objs, nil
}

// decodeAll decodes every YAML document of data into typed objects.
func decodeAll(data []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split documents: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			if runtime.IsMissingKind(err) { // a comment-only document
				continue
			}
			return nil, fmt.Errorf("decode: %w", err)
		}
		objs = append(objs, obj)
	}
}

// pinNodes sets nodeName (there is no scheduler) on every Deployment,
// spreading Deployments over nodes.
func pinNodes(objs []runtime.Object, nodes []string) {
	i := 0
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			d.Spec.Template.Spec.NodeName = nodes[i%len(nodes)]
			i++
		}
	}
}

// create creates the objects in order.
func create(ctx context.Context, cs clients, objs []runtime.Object) error {
	opts := metav1.CreateOptions{}
	c := cs.kube
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Namespace:
			_, err = c.CoreV1().Namespaces().Create(ctx, o, opts)
		case *corev1.Service:
			_, err = c.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
		case *appsv1.Deployment:
			_, err = c.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
		case *autoscalingv2.HorizontalPodAutoscaler:
			_, err = c.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Create(ctx, o, opts)
		case *easv1alpha1.Autoscaler:
			_, err = cs.eas.AutoscalingV1alpha1().Autoscalers(o.Namespace).Create(ctx, o, opts)
		default:
			err = fmt.Errorf("unsupported kind %T", o)
		}
		if err != nil {
			m := o.(metav1.Object)
			return fmt.Errorf("create %T %s/%s: %w", o, m.GetNamespace(), m.GetName(), err)
		}
	}
	return nil
}
