package app

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/record"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
	"k8s.io/utils/clock"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/controller"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// mapperResetInterval is how often the RESTMapper forgets discovery, so new
// kinds (a CRD installed later) become scalable, as kube-controller-manager.
const mapperResetInterval = 30 * time.Second

// stripManagedFields drops managedFields from cached objects: the controller
// never reads them and on pods they are most of the memory.
func stripManagedFields(obj any) (any, error) {
	if m, err := apimeta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func metaFor(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// metricsClient builds the deduplicating client over the three metrics APIs.
// Requests to the metrics APIs time out after one sync period: the custom and
// external clients take no context, and a hung adapter must not hold a
// worker for ever.
func (c CompletedConfig) metricsClient(ctx context.Context, mapper *restmapper.DeferredDiscoveryRESTMapper) (metrics.Client, error) {
	cfg := rest.CopyConfig(c.Rest)
	cfg.Timeout = c.Options.SyncPeriod
	cfg.QPS, cfg.Burst = c.Options.MetricsAPIQPS, c.Options.MetricsAPIBurst
	resources, err := resourceclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("resource metrics client: %w", err)
	}
	apis := customclient.NewAvailableAPIsGetter(c.Kube.Discovery())
	go customclient.PeriodicallyInvalidate(apis, c.Options.SyncPeriod, ctx.Done())
	external, err := externalclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("external metrics client: %w", err)
	}
	objectHistories, err := metrics.NewObjectHistoryClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("custom metrics history client: %w", err)
	}
	client := metrics.NewREST(resources.MetricsV1beta1(), customclient.NewForConfig(cfg, mapper, apis), external).WithObjectHistories(objectHistories, mapper)
	return metrics.NewDeduplicated(client, c.Options.EffectiveDedupWindow(), clock.RealClock{}), nil
}

// runController wires informers, clients and the controller and runs it
// until ctx ends. fence is nil without leader election.
func (c CompletedConfig) runController(ctx context.Context, fence controller.LeaseFence) error {
	if err := c.checkCRD(); err != nil {
		return err
	}
	cached := memory.NewMemCacheClient(c.Kube.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	go wait.UntilWithContext(ctx, func(context.Context) { mapper.Reset() }, mapperResetInterval)
	scales, err := scale.NewForConfig(c.Rest, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	if err != nil {
		return fmt.Errorf("scale client: %w", err)
	}
	mc, err := c.metricsClient(ctx, mapper)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.Kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	kubeInformers := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithTransform(stripManagedFields))
	ebbflowInformers := ebbflowinformers.NewSharedInformerFactory(c.Ebbflow, 0)
	var kinds []controller.Kind
	if c.Options.HPAMode == HPAModeAll {
		kinds = append(kinds, controller.NewHPAKind(kubeInformers.Autoscaling().V2().HorizontalPodAutoscalers(), c.Kube.AutoscalingV2()))
	}
	if c.Options.Autoscalers {
		kinds = append(kinds, controller.NewAutoscalerKind(ebbflowInformers.Autoscaling().V1alpha1().Autoscalers(), c.Ebbflow.AutoscalingV1alpha1()))
	}
	self, err := controller.NewSelfMetrics(c.Registry)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	pods := kubeInformers.Core().V1().Pods()
	var cluster func() (controller.ClusterInformers, error)
	if c.Options.ClusterProportional && c.Options.Autoscalers {
		cluster = func() (controller.ClusterInformers, error) {
			return clusterInformers(ctx, kubeInformers)
		}
	}
	ctrl, err := controller.New(c.controllerConfig(), controller.Deps{
		Cluster:     cluster,
		Scales:      scales,
		Mapper:      mapper,
		Metrics:     mc,
		Pods:        pods.Informer(),
		Recorder:    broadcaster.NewRecorder(c.Scheme, corev1.EventSource{Component: "ebbflow-autoscaler", Host: c.Identity}),
		SelfMetrics: self,
		Lease:       fence,
	}, kinds...)
	if err != nil {
		return err
	}
	kubeInformers.Start(ctx.Done())
	ebbflowInformers.Start(ctx.Done())
	defer kubeInformers.Shutdown()
	defer ebbflowInformers.Shutdown()
	return ctrl.Run(ctx)
}

// clusterInformers creates the node and ConfigMap informers of
// ClusterProportional metrics in factory; their Start starts them until ctx
// ends. The controller asks for them when it first evaluates an Autoscaler
// with such a metric, after the factory's other informers started
// (SharedInformerFactory.Start starts only the informers not yet started,
// and nothing once the factory is shut down).
func clusterInformers(ctx context.Context, factory informers.SharedInformerFactory) (controller.ClusterInformers, error) {
	configMaps := factory.Core().V1().ConfigMaps().Informer()
	if err := configMaps.SetTransform(controller.ProportionalTransform); err != nil {
		return controller.ClusterInformers{}, fmt.Errorf("ConfigMap informer: %w", err)
	}
	return controller.ClusterInformers{
		Nodes:      factory.Core().V1().Nodes().Informer(),
		ConfigMaps: configMaps,
		Start:      func() { factory.Start(ctx.Done()) },
	}, nil
}

// checkCRD fails fast when Autoscalers are to be reconciled but their API is
// not served: the informer would otherwise wait for ever.
func (c CompletedConfig) checkCRD() error {
	if !c.Options.Autoscalers {
		return nil
	}
	gv := v1alpha1.SchemeGroupVersion.String()
	if _, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv); err != nil {
		return fmt.Errorf("%s is not served (is the Autoscaler CRD installed? --autoscalers=false skips it): %w", gv, err)
	}
	return nil
}

func (c CompletedConfig) controllerConfig() controller.Config {
	o := c.Options
	return controller.Config{
		SyncPeriod:               o.SyncPeriod,
		Tolerance:                o.Tolerance,
		DownscaleStabilization:   o.DownscaleStabilization,
		CPUInitializationPeriod:  o.CPUInitializationPeriod,
		InitialReadinessDelay:    o.InitialReadinessDelay,
		Workers:                  o.Workers,
		MetricReadsPerEvaluation: o.MetricReadsPerEvaluation,
		MaxConcurrentMetricReads: o.MaxConcurrentMetricReads,
		Identity:                 c.Identity,
	}
}
