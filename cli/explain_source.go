package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
)

// Kinds explain reads.
const (
	kindAutoscaler = "Autoscaler"
	kindHPA        = "HorizontalPodAutoscaler"
)

// kindAliases maps what a user may type (--kind or a KIND/ prefix) to a kind.
var kindAliases = map[string]string{
	"autoscaler": kindAutoscaler, "autoscalers": kindAutoscaler, "eas": kindAutoscaler,
	"autoscaler.autoscaling.ebbflow.dev": kindAutoscaler, "autoscalers.autoscaling.ebbflow.dev": kindAutoscaler,
	"hpa": kindHPA, "horizontalpodautoscaler": kindHPA, "horizontalpodautoscalers": kindHPA,
	"horizontalpodautoscaler.autoscaling": kindHPA, "horizontalpodautoscalers.autoscaling": kindHPA,
}

// errNoDecision is returned (wrapped) when the object has no decision record
// yet.
var errNoDecision = errors.New("no decision yet")

// parseTarget resolves NAME, KIND/NAME and --kind to a kind and a name.
func parseTarget(arg, kindFlag string) (kind, name string, err error) {
	if kindFlag != "" {
		if kind = kindAliases[strings.ToLower(kindFlag)]; kind == "" {
			return "", "", fmt.Errorf("--kind: unknown kind %q (want autoscaler or hpa)", kindFlag)
		}
	}
	name = arg
	if prefix, rest, ok := strings.Cut(arg, "/"); ok {
		k := kindAliases[strings.ToLower(prefix)]
		switch {
		case k == "":
			return "", "", fmt.Errorf("unknown kind %q in %q (want autoscaler/NAME or hpa/NAME)", prefix, arg)
		case kind != "" && kind != k:
			return "", "", fmt.Errorf("%q: the prefix says %s but --kind says %s", arg, k, kind)
		}
		kind, name = k, rest
	}
	if kind == "" {
		kind = kindAutoscaler
	}
	if name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("invalid name %q", arg)
	}
	return kind, name, nil
}

// source reads one autoscaling object as a decisionView, once or as a watch.
type source interface {
	get(ctx context.Context) (decisionView, error)
	watch(ctx context.Context, resourceVersion string) (watch.Interface, error)
	// view converts an object delivered by the watch.
	view(obj runtime.Object) (decisionView, error)
	describe() string
	objectName() string
}

func newSource(kind, ns, name string, kube kubernetes.Interface, ebb ebbclient.Interface) source {
	if kind == kindHPA {
		return &hpaSource{ns: ns, name: name, client: kube}
	}
	return &autoscalerSource{ns: ns, name: name, client: ebb}
}

func watchOptions(name, rv string) metav1.ListOptions {
	return metav1.ListOptions{
		FieldSelector:       fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion:     rv,
		AllowWatchBookmarks: true,
	}
}

type autoscalerSource struct {
	ns, name string
	client   ebbclient.Interface
}

func (s *autoscalerSource) objectName() string { return s.name }
func (s *autoscalerSource) describe() string   { return "autoscaler " + s.ns + "/" + s.name }

func (s *autoscalerSource) get(ctx context.Context) (decisionView, error) {
	a, err := s.client.AutoscalingV1alpha1().Autoscalers(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return decisionView{}, readError(err, "autoscaler", "autoscalers.autoscaling.ebbflow.dev", s.ns, s.name)
	}
	return s.view(a)
}

func (s *autoscalerSource) watch(ctx context.Context, rv string) (watch.Interface, error) {
	w, err := s.client.AutoscalingV1alpha1().Autoscalers(s.ns).Watch(ctx, watchOptions(s.name, rv))
	if err != nil {
		return nil, readError(err, "autoscaler", "autoscalers.autoscaling.ebbflow.dev", s.ns, s.name)
	}
	return w, nil
}

func (s *autoscalerSource) view(obj runtime.Object) (decisionView, error) {
	a, ok := obj.(*v1alpha1.Autoscaler)
	if !ok {
		return decisionView{}, fmt.Errorf("%s: unexpected object %T", s.describe(), obj)
	}
	ref := a.Spec.ScaleTargetRef
	return decisionView{
		Kind: kindAutoscaler, Namespace: a.Namespace, Name: a.Name,
		Target: ref.Kind + "/" + ref.Name, Record: a.Status.LastDecision,
		Conditions: a.Status.Conditions, ResourceVersion: a.ResourceVersion,
	}, nil
}

type hpaSource struct {
	ns, name string
	client   kubernetes.Interface
}

func (s *hpaSource) objectName() string { return s.name }
func (s *hpaSource) describe() string   { return "horizontalpodautoscaler " + s.ns + "/" + s.name }

func (s *hpaSource) get(ctx context.Context) (decisionView, error) {
	h, err := s.client.AutoscalingV2().HorizontalPodAutoscalers(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return decisionView{}, readError(err, "horizontalpodautoscaler", "horizontalpodautoscalers.autoscaling", s.ns, s.name)
	}
	return s.view(h)
}

func (s *hpaSource) watch(ctx context.Context, rv string) (watch.Interface, error) {
	w, err := s.client.AutoscalingV2().HorizontalPodAutoscalers(s.ns).Watch(ctx, watchOptions(s.name, rv))
	if err != nil {
		return nil, readError(err, "horizontalpodautoscaler", "horizontalpodautoscalers.autoscaling", s.ns, s.name)
	}
	return w, nil
}

// view decodes the HPA's decision annotation. An HPA without it is not (yet)
// evaluated by ebbflow-autoscaler in drop-in mode.
func (s *hpaSource) view(obj runtime.Object) (decisionView, error) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return decisionView{}, fmt.Errorf("%s: unexpected object %T", s.describe(), obj)
	}
	raw, ok := h.Annotations[v1alpha1.LastDecisionAnnotation]
	if !ok {
		return decisionView{}, fmt.Errorf("%s is not managed by ebbflow: it has no %s annotation "+
			"(ebbflow-autoscaler writes it in drop-in mode, --hpa-mode=all)", s.describe(), v1alpha1.LastDecisionAnnotation)
	}
	rec, err := evaluation.DecodeRecord(raw)
	if err != nil {
		return decisionView{}, fmt.Errorf("%s: annotation %s: %w", s.describe(), v1alpha1.LastDecisionAnnotation, err)
	}
	ref := h.Spec.ScaleTargetRef
	return decisionView{
		Kind: kindHPA, Namespace: h.Namespace, Name: h.Name,
		Target: ref.Kind + "/" + ref.Name, Record: rec,
		Conditions: h.Status.Conditions, ResourceVersion: h.ResourceVersion,
	}, nil
}

// readError turns an API error into one line an operator can act on; the
// API error stays reachable with errors.As (apierrors.IsForbidden etc.).
func readError(err error, kind, resource, ns, name string) error {
	var msg string
	switch {
	case apierrors.IsNotFound(err) && !objectNotFound(err):
		msg = fmt.Sprintf("the server does not serve %s (is the ebbflow Autoscaler CRD installed?)", resource)
	case apierrors.IsNotFound(err):
		msg = fmt.Sprintf("%s %q not found in namespace %q", kind, name, ns)
	case apierrors.IsForbidden(err):
		msg = fmt.Sprintf("not allowed to read %s %s/%s (get and watch on %s are needed): %v", kind, ns, name, resource, err)
	default:
		msg = fmt.Sprintf("read %s %s/%s: %v", kind, ns, name, err)
	}
	return &apiReadError{msg: msg, err: err}
}

// objectNotFound tells a NotFound about the object (a Status naming it) from
// one about its resource, which the server does not serve: a Status without a
// name, or a bare 404 that client-go reports as an unexpected response.
func objectNotFound(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	if d == nil || d.Name == "" {
		return false
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return false
		}
	}
	return true
}

// apiReadError is an API error with explain's message.
type apiReadError struct {
	msg string
	err error
}

func (e *apiReadError) Error() string { return e.msg }
func (e *apiReadError) Unwrap() error { return e.err }
