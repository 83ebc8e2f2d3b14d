package cli

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/controller"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// dropInHPA is a drop-in HPA with the annotations ebbflow-autoscaler reads:
// paused, dry-run and sync period (%s, %s, %s).
const dropInHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations:
    autoscaling.ebbflow.dev/paused: %q
    autoscaling.ebbflow.dev/dry-run: %q
    autoscaling.ebbflow.dev/sync-period-seconds: %q
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: External
    external:
      metric: {name: queue}
      target: {type: AverageValue, averageValue: "10"}
`

// `ebbflow simulate` replays a drop-in HPA as ebbflow-autoscaler runs it:
// the spec it replays is the one the controller's HPA kind evaluates
// (annotations and their warnings included), and the replay honors it —
// paused and dry-run never write, the sync period spaces the evaluations.
func TestSimulateDropInHPAAsTheController(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                   string
		paused, dryRun, period string
		// period is the wait between evaluations; rescales whether the
		// replay writes; warnings how many annotations are invalid.
		wantPeriod time.Duration
		rescales   bool
		warnings   int
	}{
		{"live every 30s", "false", "false", "30", 30 * time.Second, true, 0},
		{"paused", "true", "false", "30", 30 * time.Second, false, 0},
		{"dry run", "false", "true", "45", 45 * time.Second, false, 0},
		{"invalid values read as unset", "yes", "false", "7200", 15 * time.Second, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf(dropInHPA, tc.paused, tc.dryRun, tc.period)
			specs, err := loadSpecs([]string{writeTemp(t, "web.yaml", doc)})
			if err != nil {
				t.Fatal(err)
			}
			got := specs[0]
			obj := controllerView(t, doc)
			if !reflect.DeepEqual(got.spec, obj.Spec) || !slices.Equal(got.warnings, obj.Warnings) {
				t.Fatalf("simulate reads\n%+v (warnings %q)\nthe controller evaluates\n%+v (warnings %q)", got.spec, got.warnings, obj.Spec, obj.Warnings)
			}
			if len(got.warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", got.warnings, tc.warnings)
			}
			const step = 15 * time.Second
			if p := got.spec.NextEvaluation(&evaluation.Floor{}, t0, step); p != tc.wantPeriod {
				t.Errorf("evaluated every %s, want %s", p, tc.wantPeriod)
			}
			// 60 per 10 a replica from 2: a live replay scales up, on the
			// steps its period makes due only.
			cfg := simulate.Config{Start: t0, Step: step, Steps: 24, InitialReplicas: 2, Settings: evaluation.DefaultSettings()}
			series := simulate.Series{Values: slices.Repeat([]int64{60_000}, cfg.Steps)}
			res, err := simulate.Run(cfg, got.spec, []simulate.Series{series})
			if err != nil {
				t.Fatal(err)
			}
			every := int(tc.wantPeriod / step)
			rescaled := false
			for i, st := range res.Steps {
				if st.Rescaled {
					rescaled = true
					if i%every != 0 {
						t.Errorf("rescaled at step %d, not due (every %d steps)", i, every)
					}
				}
			}
			if rescaled != tc.rescales {
				t.Errorf("rescaled %v, want %v (replicas at the end %d)", rescaled, tc.rescales, res.Steps[len(res.Steps)-1].Replicas)
			}
		})
	}
}

// controllerView is the Object ebbflow-autoscaler's HPA kind evaluates
// for the HPA of doc.
func controllerView(t *testing.T, doc string) *controller.Object {
	t.Helper()
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := yaml.UnmarshalStrict([]byte(doc), &hpa); err != nil {
		t.Fatal(err)
	}
	client := kubefake.NewClientset(&hpa)
	hpas := informers.NewSharedInformerFactory(client, 0).Autoscaling().V2().HorizontalPodAutoscalers()
	if err := hpas.Informer().GetIndexer().Add(&hpa); err != nil {
		t.Fatal(err)
	}
	obj, err := controller.NewHPAKind(hpas, client.AutoscalingV2()).Get(hpa.Namespace, hpa.Name)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
