// Module promoperator pins the Prometheus Operator whose CustomResourceDefinitions
// (ServiceMonitor) the chart's end-to-end test installs, so that kube-apiserver
// validates the chart's ServiceMonitors against their real schema. Nothing of it
// is built: the test reads the CRD files from the module's source
// (example/prometheus-operator-crd), downloaded and checked against go.sum.
module github.com/ebbflow/ebbflow/hack/tools/promoperator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
