package app

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	ebbflowclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	ebbflowscheme "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/scheme"
)

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Config is the validated options turned into clients. Complete it before use.
type Config struct {
	Options  Options
	Rest     *rest.Config
	Kube     kubernetes.Interface
	Ebbflow  ebbflowclient.Interface
	Scheme   *runtime.Scheme
	Registry *prometheus.Registry
	// Identity names this replica in the leader election lease.
	Identity string
}

// Config builds the clients from validated options.
func (o *Options) Config() (*Config, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	restConfig.QPS, restConfig.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	restConfig = rest.AddUserAgent(restConfig, "ebbflow-autoscaler")
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	ebbflow, err := ebbflowclient.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("ebbflow client: %w", err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(ebbflowscheme.AddToScheme(scheme))
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Config{Options: *o, Rest: restConfig, Kube: kube, Ebbflow: ebbflow, Scheme: scheme, Registry: registry, Identity: o.Identity}, nil
}

type completedConfig struct {
	*Config
}

// CompletedConfig is a Config with every default filled in; only Complete
// makes one.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills the leader election namespace (the pod's own, else
// "default") and the identity (host name and a unique suffix).
func (c *Config) Complete() CompletedConfig {
	le := &c.Options.LeaderElection
	if le.ResourceNamespace == "" {
		le.ResourceNamespace = "default"
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil && strings.TrimSpace(string(b)) != "" {
			le.ResourceNamespace = strings.TrimSpace(string(b))
		}
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	return CompletedConfig{&completedConfig{c}}
}
