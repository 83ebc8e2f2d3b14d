{{/*
The adapter's settings as the templates use them: adapter.* with the keys of
prometheus-adapter's chart (5.x) layout laid over it. Such a key is a top-level
value of the same name and meaning (replicas, logLevel, serviceAccount, rbac, ...);
given, it wins over adapter.*. Keys whose value is a Kubernetes object or list
(resources, affinity, probes, strategy, ...) replace the adapter's whole value;
the settings groups (podDisruptionBudget, serviceAccount, service, hostNetwork,
rbac) are laid over key by key, maps in them too (service.ipDualStack). A null (prometheus-adapter's "not set") is not
given. Output: YAML, read back with fromYaml.
*/}}
{{- define "ebbflow.adapter.values" -}}
{{- $v := .Values -}}
{{- $a := deepCopy $v.adapter -}}
{{- range $k := include "ebbflow.compat.replaced" . | fromJsonArray -}}
{{- if and (hasKey $v $k) (not (kindIs "invalid" (index $v $k))) -}}
{{- $_ := set $a $k (index $v $k) -}}
{{- end -}}
{{- end -}}
{{- range $k := include "ebbflow.compat.merged" . | fromJsonArray -}}
{{- with index $v $k -}}
{{- $into := index $a $k | default dict -}}
{{- include "ebbflow.overlay" (list $into .) -}}
{{- $_ := set $a $k $into -}}
{{- end -}}
{{- end -}}
{{- with $v.image -}}
{{- if not (kindIs "invalid" .pullPolicy) -}}
{{- $_ := set $a.image "pullPolicy" .pullPolicy -}}
{{- end -}}
{{- end -}}
{{- /* The old switches: create sets custom and external, enabled sets resource. */ -}}
{{- with $a.apiService -}}
{{- if hasKey . "create" -}}
{{- $_ := set $a.apiServices "custom" .create -}}
{{- $_ := set $a.apiServices "external" .create -}}
{{- end -}}
{{- end -}}
{{- with $a.resourceMetrics -}}
{{- if hasKey . "enabled" -}}
{{- $_ := set $a.apiServices "resource" .enabled -}}
{{- end -}}
{{- end -}}
{{- $res := $a.apiServices.resource -}}
{{- if eq (toString $res) "auto" -}}
{{- $res = not (empty $v.rules.resource) -}}
{{- end -}}
{{- $_ := set $a "resourceMetricsOn" $res -}}
{{- toYaml $a -}}
{{- end -}}

{{/* Lays the map src over the map dst in place: (list dst src). A map laid over a
map is laid over key by key; any other value replaces; null leaves dst's. */}}
{{- define "ebbflow.overlay" -}}
{{- $dst := index . 0 }}{{ $src := index . 1 -}}
{{- range $k, $v := $src -}}
{{- if kindIs "map" $v -}}
{{- if kindIs "map" (index $dst $k) -}}
{{- include "ebbflow.overlay" (list (index $dst $k) $v) -}}
{{- else -}}
{{- $_ := set $dst $k $v -}}
{{- end -}}
{{- else if not (kindIs "invalid" $v) -}}
{{- $_ := set $dst $k $v -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* prometheus-adapter's top-level keys that replace adapter.<key> (JSON list). */}}
{{- define "ebbflow.compat.replaced" -}}
["replicas", "revisionHistoryLimit", "logLevel", "metricsRelistInterval", "listenPort",
 "extraArguments", "env", "extraVolumes", "extraVolumeMounts", "extraContainers",
 "deploymentAnnotations", "strategy", "dnsPolicy", "dnsConfig", "automountServiceAccountToken",
 "startupProbe", "livenessProbe", "readinessProbe", "resources", "podSecurityContext",
 "securityContext", "priorityClassName", "nodeSelector", "tolerations", "affinity",
 "topologySpreadConstraints", "podLabels", "podAnnotations"]
{{- end -}}

{{/* prometheus-adapter's top-level settings groups laid over adapter.<key> key by key. */}}
{{- define "ebbflow.compat.merged" -}}
["podDisruptionBudget", "serviceAccount", "service", "hostNetwork", "rbac"]
{{- end -}}

{{/* The image pull secrets of both components: imagePullSecrets and
prometheus-adapter's image.pullSecrets. */}}
{{- define "ebbflow.imagePullSecrets" -}}
{{- $all := .Values.imagePullSecrets | default list -}}
{{- with .Values.image }}{{ with .pullSecrets }}{{ $all = concat $all . }}{{ end }}{{ end -}}
{{- with $all }}
imagePullSecrets:
{{- range . }}
- name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The adapter's ServiceAccount name: (list root adapterValues). */}}
{{- define "ebbflow.adapter.serviceAccountName" -}}
{{- $root := index . 0 }}{{ $sa := (index . 1).serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "ebbflow.adapter.name" $root) $sa.name -}}
{{- else -}}
{{- required "serviceAccount.name is required with serviceAccount.create false (the ServiceAccount the adapter runs as, which the chart's RBAC binds)" $sa.name -}}
{{- end -}}
{{- end -}}

{{/*
Values of prometheus-adapter's chart that this chart refuses, each with what to
write instead. Rendered by validate.yaml, so that helm install and helm template
fail whichever components are on.
*/}}
{{- define "ebbflow.compat.refuse" -}}
{{- $img := .Values.image | default dict -}}
{{- range $k := list "repository" "tag" -}}
{{- if not (empty (index $img $k)) -}}
{{- fail (printf "image.%s: prometheus-adapter's image key would run prometheus-adapter's image (%v); this chart runs ebbflow-adapter from adapter.image.%s (default ghcr.io/ebbflow/ebbflow-adapter, tag the chart's appVersion): remove image.%s, and set adapter.image.%s only for a mirror of ebbflow-adapter's image" $k (index $img $k) $k $k $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}
