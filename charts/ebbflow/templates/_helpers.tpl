{{/* Name prefix of every object: <prefix>-adapter, <prefix>-autoscaler. */}}
{{- define "ebbflow.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ebbflow.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "ebbflow.adapter.name" -}}{{ include "ebbflow.fullname" . }}-adapter{{- end -}}
{{- define "ebbflow.autoscaler.name" -}}{{ include "ebbflow.fullname" . }}-autoscaler{{- end -}}

{{/* Labels of every object; the component's name and instance come from its selector labels. */}}
{{- define "ebbflow.labels" -}}
app.kubernetes.io/part-of: ebbflow
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.customLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "ebbflow.adapter.selectorLabels" -}}
app.kubernetes.io/name: ebbflow-adapter
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ebbflow.autoscaler.selectorLabels" -}}
app.kubernetes.io/name: ebbflow-autoscaler
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ebbflow.adapter.labels" -}}
{{ include "ebbflow.labels" . }}
{{ include "ebbflow.adapter.selectorLabels" . }}
{{- end -}}

{{- define "ebbflow.autoscaler.labels" -}}
{{ include "ebbflow.labels" . }}
{{ include "ebbflow.autoscaler.selectorLabels" . }}
{{- end -}}

{{/* metadata.annotations from customAnnotations (and an optional extra dict). */}}
{{- define "ebbflow.annotations" -}}
{{- with .Values.customAnnotations -}}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "ebbflow.image" -}}
{{- $img := index . 0 -}}{{- $root := index . 1 -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* The Prometheus URL as prometheus-adapter's chart builds it. */}}
{{- define "ebbflow.prometheusURL" -}}
{{- tpl .Values.prometheus.url . -}}
{{- with .Values.prometheus.port }}:{{ . }}{{ end -}}
{{- .Values.prometheus.path -}}
{{- end -}}

{{/* Which serving certificate the adapter uses: certManager, provided, generated or none. */}}
{{- define "ebbflow.adapter.tlsMode" -}}
{{- if .Values.certManager.enabled -}}certManager
{{- else if .Values.tls.enable -}}provided
{{- else if .Values.tls.generate -}}generated
{{- else -}}none
{{- end -}}
{{- end -}}

{{- define "ebbflow.adapter.tlsSecret" -}}{{ include "ebbflow.adapter.name" . }}-serving-cert{{- end -}}

{{/*
The generated CA and certificate, made once per render and shared by the Secret
and the APIServices; on upgrade the existing Secret is reused so that neither the
caBundle nor the pods change.
*/}}
{{- define "ebbflow.adapter.generatedCert" -}}
{{- $name := include "ebbflow.adapter.name" . -}}
{{- $ns := include "ebbflow.namespace" . -}}
{{- $existing := lookup "v1" "Secret" $ns (include "ebbflow.adapter.tlsSecret" .) -}}
{{- if and $existing $existing.data (index $existing.data "ca.crt") -}}
ca.crt: {{ index $existing.data "ca.crt" }}
tls.crt: {{ index $existing.data "tls.crt" }}
tls.key: {{ index $existing.data "tls.key" }}
{{- else -}}
{{- $ca := genCA (printf "%s-ca" $name) (int .Values.tls.generateDays) -}}
{{- $dns := list $name (printf "%s.%s" $name $ns) (printf "%s.%s.svc" $name $ns) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $name $ns) nil $dns (int .Values.tls.generateDays) $ca -}}
ca.crt: {{ $ca.Cert | b64enc }}
tls.crt: {{ $cert.Cert | b64enc }}
tls.key: {{ $cert.Key | b64enc }}
{{- end -}}
{{- end -}}

{{/* Default topology spread: one replica per node (hard), zones (soft). */}}
{{- define "ebbflow.spread" -}}
{{- $sel := index . 0 -}}
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: DoNotSchedule
  nodeTaintsPolicy: Honor
  matchLabelKeys: ["pod-template-hash"]
  labelSelector:
    matchLabels:
      {{- $sel | nindent 6 }}
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  matchLabelKeys: ["pod-template-hash"]
  labelSelector:
    matchLabels:
      {{- $sel | nindent 6 }}
{{- end -}}

{{/* PodDisruptionBudget spec fields from a podDisruptionBudget value:
maxUnavailable when set, else minAvailable. */}}
{{- define "ebbflow.pdbSpec" -}}
{{- $max := ternary "" (toString .maxUnavailable) (kindIs "invalid" .maxUnavailable) -}}
{{- $min := ternary "" (toString .minAvailable) (kindIs "invalid" .minAvailable) -}}
{{- if ne $max "" -}}
maxUnavailable: {{ .maxUnavailable }}
{{- else if ne $min "" -}}
minAvailable: {{ .minAvailable }}
{{- end }}
{{- with .unhealthyPodEvictionPolicy }}
unhealthyPodEvictionPolicy: {{ . }}
{{- end }}
{{- end -}}

{{/* A (Cluster)RoleBinding of role NAME to the autoscaler: (list root kind NAME). */}}
{{- define "ebbflow.autoscaler.binding" -}}
{{- $root := index . 0 }}{{- $kind := index . 1 }}{{- $role := index . 2 }}
{{- $name := include "ebbflow.autoscaler.name" $root }}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ $kind }}Binding
metadata:
  name: {{ $role }}
  {{- if eq $kind "Role" }}
  namespace: {{ include "ebbflow.namespace" $root }}
  {{- end }}
  labels:
    {{- include "ebbflow.autoscaler.labels" $root | nindent 4 }}
  {{- with (include "ebbflow.annotations" $root) }}{{ . | nindent 2 }}{{ end }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ $kind }}
  name: {{ $role }}
subjects:
- kind: ServiceAccount
  name: {{ $name }}
  namespace: {{ include "ebbflow.namespace" $root }}
{{- end }}
