package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// cpaConfig is what a cluster-proportional-autoscaler Deployment is run
// with: its flags (only those that matter to a migration) and where they
// came from.
type cpaConfig struct {
	source        string // "deployment kube-system/dns-autoscaler" or "flags"
	target        string
	configMap     string
	namespace     string
	defaultParams *string // nil: not given
	nodeLabels    string
	ignored       []string // CPA flags that have no equivalent

	configMapInInput bool // set by cpaParams
}

// cpaStringFlags are the CPA flags that take a value; a value may follow
// as the next argument when not given with '='.
var cpaStringFlags = map[string]bool{
	"target": true, "configmap": true, "namespace": true, "default-params": true, "nodelabels": true,
	"poll-period-seconds": true, "max-sync-failures": true, "v": true, "vmodule": true, "log_dir": true,
	"log_file": true, "stderrthreshold": true, "log_backtrace_at": true,
}

// parseCPAArgs reads CPA's flags from a container's command and args, the way
// pflag does: --name=value or --name value; single-dash and unknown flags are
// skipped.
func parseCPAArgs(args []string, c *cpaConfig) {
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		if !strings.HasPrefix(args[i], "--") {
			continue
		}
		if !hasValue && cpaStringFlags[name] && i+1 < len(args) {
			i++
			value = args[i]
		}
		switch name {
		case "target":
			c.target = value
		case "configmap":
			c.configMap = value
		case "namespace":
			c.namespace = value
		case "default-params":
			v := value
			c.defaultParams = &v
		case "nodelabels":
			c.nodeLabels = value
		case "poll-period-seconds", "max-sync-failures":
			c.ignored = append(c.ignored, "--"+name)
		}
	}
}

// cpaInput is what a manifest file holds for a migration.
type cpaInput struct {
	deployments []appsv1.Deployment
	configMaps  []corev1.ConfigMap
}

// readManifests reads every Deployment and ConfigMap from a YAML or JSON
// stream of documents, v1 Lists included; other kinds are skipped.
func readManifests(raw []byte) (cpaInput, error) {
	var in cpaInput
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for doc := 1; ; doc++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return in, nil
			}
			return in, fmt.Errorf("document %d: %w", doc, err)
		}
		if err := in.add(obj); err != nil {
			return in, fmt.Errorf("document %d: %w", doc, err)
		}
	}
}

func (in *cpaInput) add(obj map[string]any) error {
	switch obj["kind"] {
	case "List", "DeploymentList", "ConfigMapList":
		items, _ := obj["items"].([]any)
		for i, item := range items {
			m, ok := item.(map[string]any)
			if !ok {
				return fmt.Errorf("items[%d]: not an object", i)
			}
			if err := in.add(m); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
	case "Deployment":
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &d); err != nil {
			return fmt.Errorf("a Deployment: %w", err)
		}
		in.deployments = append(in.deployments, d)
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &cm); err != nil {
			return fmt.Errorf("a ConfigMap: %w", err)
		}
		in.configMaps = append(in.configMaps, cm)
	}
	return nil
}

// cpaConfigs finds the CPA containers of the Deployments (a container whose
// command or args set --target) and reads their flags, expanding $(VAR)
// references to the container's environment as the kubelet does.
func cpaConfigs(deployments []appsv1.Deployment) []cpaConfig {
	var out []cpaConfig
	for _, d := range deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			args := append(slicesClone(c.Command), c.Args...)
			if !hasFlag(args, "target") {
				continue
			}
			env := containerEnv(c, d.Namespace)
			for i := range args {
				args[i] = expandEnv(args[i], env)
			}
			cfg := cpaConfig{source: fmt.Sprintf("Deployment %s", qualified(d.Namespace, d.Name))}
			parseCPAArgs(args, &cfg)
			if cfg.namespace == "" {
				// CPA's fallback: the MY_POD_NAMESPACE environment variable.
				cfg.namespace = env["MY_POD_NAMESPACE"]
			}
			out = append(out, cfg)
			break
		}
	}
	return out
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

// containerEnv holds the variables whose value a manifest tells: literal
// values, and the pod's namespace through the downward API when the
// Deployment's namespace is known.
func containerEnv(c corev1.Container, namespace string) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandEnv(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" && namespace != "":
			env[e.Name] = namespace
		}
	}
	return env
}

// expandEnv replaces $(VAR) with the variable's value when known and $$ with
// $, leaving unknown references as written (Kubernetes' rules).
func expandEnv(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }
