package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/fakeapp"
)

// Bounds of the waits on the HPA controller (sync period 5s). Scale-down on
// request rates is the slowest: the rules' rate window (1m) must first
// forget the high load.
const (
	scaleUpTimeout   = 2 * time.Minute
	scaleDownTimeout = 4 * time.Minute
	conditionTimeout = time.Minute
	hpaPollInterval  = time.Second
)

// TestHPAScalesOnAdapterMetrics runs kube-controller-manager's own HPA
// controller against metrics served by ebbflow-adapter: each HPA scales its
// Deployment up under load, shows ScalingActive=True (ValidMetricFound), and
// scales back down when the load goes away. The two groups run in parallel;
// within a group both HPAs work at the same time and are checked in turn.
func TestHPAScalesOnAdapterMetrics(t *testing.T) {
	// Request rates from the fake app's per-pod counters: the closed loop.
	t.Run("RequestRate", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "e2e-hpa-rate-")
		web, api := fakeapp.NewSetpoint(80), fakeapp.NewSetpoint(80)
		createDeployment(t, ns, "web")
		createDeployment(t, ns, "api")
		createService(t, ns, "api")
		runSimulator(t,
			fakeapp.Service{Namespace: ns, Selector: "app=web", Service: "web", Rate: web},
			fakeapp.Service{Namespace: ns, Selector: "app=api", Service: "api", Rate: api})
		// Pods metric, AverageValue: 80 req/s at 10 per pod want 8 pods.
		createHPA(t, ns, "web", 8, autoscalingv2.MetricSpec{
			Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: RequestsMetric},
				Target: averageValue("10"),
			},
		})
		// Object metric, Value: the Service's 80 req/s stay 4x the target of
		// 20 whatever the replica count, so the HPA goes to its maximum.
		createHPA(t, ns, "api", 4, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ObjectMetricSourceType,
			Object: &autoscalingv2.ObjectMetricSource{
				DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "api"},
				Metric:          autoscalingv2.MetricIdentifier{Name: RequestsMetric},
				Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: resource.NewQuantity(20, resource.DecimalSI)},
			},
		})
		// The rate window of the rules is still filling, so the first
		// recommendations are lower than the final ones.
		waitReplicas(t, ns, "web", scaleUpTimeout, "at least 4", func(r int32) bool { return r >= 4 })
		waitReplicas(t, ns, "api", scaleUpTimeout, "4 (max)", func(r int32) bool { return r == 4 })
		waitCondition(t, ns, "web", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		waitCondition(t, ns, "api", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		web.Set(0)
		api.Set(0)
		waitReplicas(t, ns, "web", scaleDownTimeout, "back to 1", func(r int32) bool { return r == 1 })
		waitReplicas(t, ns, "api", scaleDownTimeout, "back to 1", func(r int32) bool { return r == 1 })
	})
	// Queue depth from a gauge set directly on the shared exporter.
	t.Run("QueueDepth", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "e2e-hpa-queue-")
		avgQueue, valQueue := setQueue(t, ns+"-avg", 100), setQueue(t, ns+"-val", 120)
		createDeployment(t, ns, "avg")
		createDeployment(t, ns, "val")
		// External metric, AverageValue: 100 messages at 30 per pod want 4.
		createHPA(t, ns, "avg", 6, externalMetric(avgQueue, averageValue("30")))
		// External metric, Value: 120 against 50 is 2.4x: up to the maximum.
		createHPA(t, ns, "val", 4, externalMetric(valQueue, autoscalingv2.MetricTarget{
			Type: autoscalingv2.ValueMetricType, Value: resource.NewQuantity(50, resource.DecimalSI)}))
		waitReplicas(t, ns, "avg", scaleUpTimeout, "4", func(r int32) bool { return r == 4 })
		waitReplicas(t, ns, "val", scaleUpTimeout, "4 (max)", func(r int32) bool { return r == 4 })
		waitCondition(t, ns, "avg", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		waitCondition(t, ns, "val", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		avgQueue.set(0)
		// 5 against 50 at 4 replicas: ceil(4 x 0.1) = 1.
		valQueue.set(5)
		waitReplicas(t, ns, "avg", scaleDownTimeout, "back to 1", func(r int32) bool { return r == 1 })
		waitReplicas(t, ns, "val", scaleDownTimeout, "back to 1", func(r int32) bool { return r == 1 })
	})
}

// testQueue is one queue_messages_ready{queue} series on the shared exporter.
type testQueue struct{ name string }

// setQueue publishes the queue gauge of queue name at depth v and deletes it
// when the test ends. Name it after the test's namespace to keep it unique.
func setQueue(t *testing.T, name string, v float64) testQueue {
	t.Helper()
	q := testQueue{name: name}
	q.set(v)
	t.Cleanup(func() { exp().Delete(QueueGauge, map[string]string{"queue": q.name}) })
	return q
}

func (q testQueue) set(v float64) {
	exp().SetGauge(QueueGauge, map[string]string{"queue": q.name}, v)
}

// externalMetric is an HPA metric on the queue's external queue_messages_ready.
func externalMetric(q testQueue, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: QueueGauge,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": q.name}}},
			Target: target,
		},
	}
}

func averageValue(v string) autoscalingv2.MetricTarget {
	q := resource.MustParse(v)
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}
}

// runSimulator publishes the services' request counters on the shared
// exporter until the test ends.
func runSimulator(t *testing.T, services ...fakeapp.Service) {
	t.Helper()
	sim, err := fakeapp.New(fakeapp.Config{Client: env().Client(), Sink: exp(), Services: services})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fakeapp: %v", err)
		}
	})
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns, err := env().Client().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := env().Client().CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// createDeployment creates a one-replica Deployment of pods labelled
// app=<name>, pinned to a kwok node (there is no scheduler).
func createDeployment(t *testing.T, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName:    cluster.NodeName(0),
					Tolerations: []corev1.Toleration{{Key: cluster.KwokNodeAnnotation, Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
				},
			},
		},
	}
	if _, err := env().Client().AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s/%s: %v", ns, name, err)
	}
}

// createService creates a Service selecting app=<name>.
func createService(t *testing.T, ns, name string) {
	t.Helper()
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	if _, err := env().Client().CoreV1().Services(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
}

// createHPA creates an HPA for the Deployment of the same name with one
// metric, minReplicas 1 and no scale-down stabilization (the upstream default
// of 5 minutes would outlast the test).
func createHPA(t *testing.T, ns, name string, maxReplicas int32, metric autoscalingv2.MetricSpec) {
	t.Helper()
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    maxReplicas,
			Metrics:        []autoscalingv2.MetricSpec{metric},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
			},
		},
	}
	if _, err := env().Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), h, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create hpa %s/%s: %v", ns, name, err)
	}
}

// replicas returns the Deployment's spec.replicas, what the HPA last set.
func deploymentReplicas(ctx context.Context, ns, name string) (int32, error) {
	d, err := env().Client().AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return ptr.Deref(d.Spec.Replicas, 1), nil
}

// waitReplicas polls the Deployment until cond holds for its spec.replicas
// and returns that count; it fails the test with the HPA's status after
// timeout.
func waitReplicas(t *testing.T, ns, name string, timeout time.Duration, want string, cond func(int32) bool) int32 {
	t.Helper()
	start := time.Now()
	r, err := cluster.WaitReplicas(context.Background(), env().Client(), ns, name, timeout, cond)
	if err != nil {
		t.Fatalf("%s/%s: replicas %d, want %s within %v\n%s", ns, name, r, want, timeout, describeHPA(ns, name))
	}
	t.Logf("%s/%s: %d replicas (want %s) after %v", ns, name, r, want, time.Since(start).Round(time.Second))
	return r
}

// waitCondition polls the HPA until condition typ has status and, if reason
// is not empty, a reason starting with it.
func waitCondition(t *testing.T, ns, name string, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	waitUntil(t, hpaPollInterval, conditionTimeout, fmt.Sprintf("%s/%s: no condition %s=%s with reason %s*", ns, name, typ, status, reason),
		func() string { return describeHPA(ns, name) }, func(ctx context.Context) bool {
			c, ok := hpaCondition(ctx, ns, name, typ)
			if ok && c.Status == status && strings.HasPrefix(c.Reason, reason) {
				t.Logf("%s/%s: %s=%s (%s: %s)", ns, name, typ, c.Status, c.Reason, c.Message)
				return true
			}
			return false
		})
}

// hpaCondition returns the HPA's condition of type typ.
func hpaCondition(ctx context.Context, ns, name string, typ autoscalingv2.HorizontalPodAutoscalerConditionType) (autoscalingv2.HorizontalPodAutoscalerCondition, bool) {
	h, err := env().Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return autoscalingv2.HorizontalPodAutoscalerCondition{}, false
	}
	for _, c := range h.Status.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}, false
}

// describeHPA renders the HPA's status and recent events for failure messages.
func describeHPA(ns, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	h, err := env().Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("hpa %s/%s: %v", ns, name, err)
	}
	fmt.Fprintf(&b, "hpa %s/%s: current %d desired %d\n", ns, name, h.Status.CurrentReplicas, h.Status.DesiredReplicas)
	for _, m := range h.Status.CurrentMetrics {
		fmt.Fprintf(&b, "  metric: %+v\n", m)
	}
	for _, c := range h.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if evs, err := env().Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "  event %s %s/%s %s: %s\n", e.LastTimestamp.Format(time.TimeOnly), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}
