package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// maxSpecBytes bounds a spec file.
const maxSpecBytes = 1 << 20

// namedSpec is one spec to replay: where it came from and what it says.
type namedSpec struct {
	// name is "KIND/NAME" (with the file when two specs share it).
	name      string
	namespace string
	// source is "FILE#DOCUMENT".
	source string
	spec   evaluation.Spec
	// warnings are the spec's problems that do not stop its replay (an
	// invalid annotation of an HPA), as the controller reports them.
	warnings []string
}

// loadSpecs reads every Autoscaler and HorizontalPodAutoscaler of the files
// (YAML or JSON, several documents per file allowed), strictly: an unknown
// field is an error naming the file and document.
func loadSpecs(paths []string) ([]namedSpec, error) {
	var out []namedSpec
	for _, path := range paths {
		err := eachDocument(path, func(doc int, raw []byte) error {
			s, ok, err := parseSpec(raw)
			if err != nil {
				return fmt.Errorf("%s (document %d): %w", path, doc, err)
			}
			if ok {
				s.source = fmt.Sprintf("%s#%d", filepath.Base(path), doc)
				out = append(out, s)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no Autoscaler or HorizontalPodAutoscaler in the -f files")
	}
	disambiguate(out)
	return out, nil
}

// eachDocument calls fn with every non-empty YAML or JSON document of path,
// numbered from 1.
func eachDocument(path string, fn func(doc int, raw []byte) error) error {
	data, err := readLimited(path)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if err := fn(doc, raw); err != nil {
			return err
		}
	}
}

// disambiguate adds the file and document to the names that several specs
// share (the current and the tuned HPA "web", from two files).
func disambiguate(specs []namedSpec) {
	count := map[string]int{}
	for _, s := range specs {
		count[s.name]++
	}
	for i, s := range specs {
		if count[s.name] > 1 {
			specs[i].name = s.name + " (" + s.source + ")"
		}
	}
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxSpecBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxSpecBytes)
	}
	return data, nil
}

// parseSpec decodes one Autoscaler or autoscaling/v2 HPA; ok is false for
// other kinds (a Deployment next to its HPA in one file).
func parseSpec(raw []byte) (s namedSpec, ok bool, err error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &head); err != nil {
		return namedSpec{}, false, err
	}
	switch {
	case head.Kind == "Autoscaler" && head.APIVersion == v1alpha1.SchemeGroupVersion.String():
		var a v1alpha1.Autoscaler
		if err := yaml.UnmarshalStrict(raw, &a); err != nil {
			return namedSpec{}, false, err
		}
		if errs := v1alpha1.ValidateSchedulingSpec(&a.Spec, field.NewPath("spec")); len(errs) > 0 {
			return namedSpec{}, false, errs.ToAggregate()
		}
		return namedSpec{name: "Autoscaler/" + a.Name, namespace: a.Namespace, spec: evaluation.FromAutoscaler(&a.Spec)}, true, nil
	case head.Kind == "HorizontalPodAutoscaler" && head.APIVersion == autoscalingv2.SchemeGroupVersion.String():
		var h autoscalingv2.HorizontalPodAutoscaler
		if err := yaml.UnmarshalStrict(raw, &h); err != nil {
			return namedSpec{}, false, err
		}
		// The annotations the controller reads in drop-in mode (pause,
		// dry-run, sync period) are read alike.
		spec, warnings := evaluation.FromHPA(&h)
		return namedSpec{name: "HorizontalPodAutoscaler/" + h.Name, namespace: h.Namespace, spec: spec, warnings: warnings}, true, nil
	case head.Kind != "Autoscaler" && head.Kind != "HorizontalPodAutoscaler":
		return namedSpec{}, false, nil
	}
	return namedSpec{}, false, fmt.Errorf("kind %q of apiVersion %q is neither an %s Autoscaler nor an autoscaling/v2 HorizontalPodAutoscaler",
		head.Kind, head.APIVersion, v1alpha1.SchemeGroupVersion)
}
