package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmv1beta1 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta1"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// historyCall is one ObjectHistory call.
type historyCall struct {
	name types.NamespacedName
	info cmprovider.CustomMetricInfo
	sel  string
}

type fakeHistories struct {
	calls []historyCall
	err   error
}

// PodsHistory records nothing: lists are not ObjectHistory's.
func (f *fakeHistories) PodsHistory(context.Context, string, cmprovider.CustomMetricInfo, labels.Selector) (*custom_metrics.MetricValueList, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "*")
}

func (f *fakeHistories) ObjectHistory(_ context.Context, name types.NamespacedName, info cmprovider.CustomMetricInfo, sel labels.Selector) (*custom_metrics.MetricValueList, error) {
	f.calls = append(f.calls, historyCall{name, info, sel.String()})
	if f.err != nil {
		return nil, f.err
	}
	item := func(sec int64, v string) custom_metrics.MetricValue {
		return custom_metrics.MetricValue{
			DescribedObject: custom_metrics.ObjectReference{Kind: "Service", Namespace: name.Namespace, Name: name.Name, APIVersion: "/v1"},
			Metric:          custom_metrics.MetricIdentifier{Name: info.Metric},
			Timestamp:       metav1.NewTime(time.Unix(sec, 0)), Value: resource.MustParse(v),
		}
	}
	return &custom_metrics.MetricValueList{Items: []custom_metrics.MetricValue{item(600, "1"), item(660, "2500m")}}, nil
}

// objectHistoryHandler is a generic API server with ebbflow's filters and
// the history handler, serving no metrics API of its own: requests the
// history handler leaves alone end in a 404.
func objectHistoryHandler(t *testing.T, h Histories) http.Handler {
	t.Helper()
	generic := genericapiserver.NewConfig(apiserver.Codecs)
	generic.LoopbackClientConfig = &rest.Config{}
	generic.ExternalAddress = "127.0.0.1:6443"
	srv, err := NewMetricsServer(generic, nil, "ebbflow-history-test", nil, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	return srv.GenericAPIServer.Handler
}

const histSel = "metricLabelSelector=code%3D200,history.ebbflow.dev%2Frange%3D1h,history.ebbflow.dev%2Fstep%3D1m"

func TestObjectHistoryRoute(t *testing.T) {
	f := &fakeHistories{}
	h := objectHistoryHandler(t, f)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	for _, version := range []string{"v1beta2", "v1beta1"} {
		code, body := get("/apis/custom.metrics.k8s.io/" + version + "/namespaces/ns/services/api/hits?" + histSel)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", version, code, body)
		}
		var got []string
		if version == "v1beta2" {
			var list cmv1beta2.MetricValueList
			if err := json.Unmarshal([]byte(body), &list); err != nil || list.APIVersion != "custom.metrics.k8s.io/v1beta2" {
				t.Fatalf("%v: %s", err, body)
			}
			for _, it := range list.Items {
				got = append(got, fmt.Sprintf("%s/%s %d=%s", it.DescribedObject.Name, it.Metric.Name, it.Timestamp.Unix(), it.Value.String()))
			}
		} else {
			var list cmv1beta1.MetricValueList
			if err := json.Unmarshal([]byte(body), &list); err != nil || list.APIVersion != "custom.metrics.k8s.io/v1beta1" {
				t.Fatalf("%v: %s", err, body)
			}
			for _, it := range list.Items {
				got = append(got, fmt.Sprintf("%s/%s %d=%s", it.DescribedObject.Name, it.MetricName, it.Timestamp.Unix(), it.Value.String()))
			}
		}
		if want := "api/hits 600=1 api/hits 660=2500m"; strings.Join(got, " ") != want {
			t.Errorf("%s: items %q, want %q", version, got, want)
		}
	}
	want := historyCall{types.NamespacedName{Namespace: "ns", Name: "api"}, cmprovider.CustomMetricInfo{Metric: "hits", Namespaced: true}, "code=200,history.ebbflow.dev/range=1h,history.ebbflow.dev/step=1m"}
	want.info.GroupResource.Resource = "services"
	if len(f.calls) != 2 || f.calls[0] != want {
		t.Fatalf("calls %+v, want %+v", f.calls, want)
	}

	// A namespace's own metric and a group's resource.
	f.calls = nil
	if code, body := get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/metrics/hits?" + histSel); code != http.StatusOK {
		t.Fatalf("namespace metric: %d %s", code, body)
	}
	if code, body := get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/deployments.apps/web/hits?" + histSel); code != http.StatusOK {
		t.Fatalf("deployment metric: %d %s", code, body)
	}
	if len(f.calls) != 2 || f.calls[0].name != (types.NamespacedName{Name: "ns"}) || f.calls[0].info.GroupResource.Resource != "namespaces" || f.calls[0].info.Namespaced ||
		f.calls[1].info.GroupResource.Group != "apps" || f.calls[1].info.GroupResource.Resource != "deployments" {
		t.Fatalf("calls %+v", f.calls)
	}

	// Left to the metrics handlers: lists, requests without the reserved
	// keys, other groups.
	f.calls = nil
	for _, path := range []string{
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/services/*/hits?" + histSel,
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/services/api/hits?metricLabelSelector=code%3D200",
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/hits?labelSelector=history.ebbflow.dev%2Frange%3D1h,history.ebbflow.dev%2Fstep%3D1m",
	} {
		if code, body := get(path); code != http.StatusNotFound {
			t.Errorf("%s: %d %s, want the delegate's 404", path, code, body)
		}
	}
	if len(f.calls) != 0 {
		t.Fatalf("history handler answered %+v", f.calls)
	}

	// Errors keep their status and message.
	f.err = apierrors.NewBadRequest("history.ebbflow.dev/step: 5s is shorter than 30s")
	code, body := get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/services/api/hits?" + histSel)
	if code != http.StatusBadRequest || !strings.Contains(body, "5s is shorter than 30s") || !strings.Contains(body, `"kind":"Status"`) {
		t.Fatalf("error: %d %s", code, body)
	}
}
