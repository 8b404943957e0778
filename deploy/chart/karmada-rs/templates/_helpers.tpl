{{/* The release's base name: the release name, with the chart's name unless it has it. */}}
{{- define "karmada-rs.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "karmada-rs.etcdName" -}}
{{- printf "%s-etcd" (include "karmada-rs.fullname" .) -}}
{{- end -}}

{{- define "karmada-rs.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: control-plane
{{- end -}}

{{- define "karmada-rs.etcdSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: etcd
{{- end -}}

{{- define "karmada-rs.commonLabels" -}}
app.kubernetes.io/part-of: karmada-rs
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The chart's own etcd runs unless endpoints of another are given. */}}
{{- define "karmada-rs.ownEtcd" -}}
{{- if and (eq .Values.storage.type "etcd") (empty .Values.storage.etcd.endpoints) -}}true{{- end -}}
{{- end -}}

{{/* --etcd-servers: the given endpoints, or every member of the chart's StatefulSet. */}}
{{- define "karmada-rs.etcdServers" -}}
{{- if .Values.storage.etcd.endpoints -}}
{{- join "," .Values.storage.etcd.endpoints -}}
{{- else -}}
{{- $name := include "karmada-rs.etcdName" . -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.storage.etcd.replicas) -}}
{{- $urls = append $urls (printf "https://%s-%d.%s.%s.svc:2379" $name $i $name $.Release.Namespace) -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}
{{- end -}}

{{/* The Secret the chart's etcd members mount: CA, serving and peer certificates. */}}
{{- define "karmada-rs.etcdServerSecret" -}}
{{- .Values.storage.etcd.certs.serverSecret | default (printf "%s-server" (include "karmada-rs.etcdName" .)) -}}
{{- end -}}

{{/* The Secret with karmada-rs's etcd client certificate; empty when it talks to etcd
without TLS (an external etcd over http with certs.mode=auto, or the embedded store). */}}
{{- define "karmada-rs.etcdClientSecret" -}}
{{- if eq .Values.storage.type "etcd" -}}
{{- if or (include "karmada-rs.ownEtcd" .) (eq .Values.storage.etcd.certs.mode "custom") -}}
{{- .Values.storage.etcd.certs.clientSecret | default (printf "%s-client" (include "karmada-rs.etcdName" .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The serving certificates' extra names: the Service's, then extraTlsSans. */}}
{{- define "karmada-rs.tlsSans" -}}
{{- $name := include "karmada-rs.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $sans := list $name (printf "%s.%s" $name $ns) (printf "%s.%s.svc" $name $ns) (printf "%s.%s.svc.cluster.local" $name $ns) -}}
{{- join "," (concat $sans .Values.extraTlsSans) -}}
{{- end -}}

{{/* Fails the render on values that cannot work, with what to change. */}}
{{- define "karmada-rs.validate" -}}
{{- if not (has .Values.storage.type (list "etcd" "embedded")) -}}
{{- fail (printf "storage.type must be etcd or embedded, not %q" .Values.storage.type) -}}
{{- end -}}
{{- if lt (int .Values.replicas) 1 -}}
{{- fail "replicas must be at least 1" -}}
{{- end -}}
{{- if and (eq .Values.storage.type "embedded") (gt (int .Values.replicas) 1) -}}
{{- fail "storage.type=embedded keeps the store on one replica's volume: set replicas=1, or use storage.type=etcd to run more" -}}
{{- end -}}
{{- if and (include "karmada-rs.ownEtcd" .) (lt (int .Values.storage.etcd.replicas) 1) -}}
{{- fail "storage.etcd.replicas must be at least 1 (3 or 5 to survive a member's loss)" -}}
{{- end -}}
{{- if and .Values.encryption.enabled (not .Values.encryption.existingSecret) -}}
{{- if not (has .Values.encryption.provider (list "aesgcm" "aescbc" "secretbox")) -}}
{{- fail (printf "encryption.provider must be aesgcm, aescbc or secretbox, not %q" .Values.encryption.provider) -}}
{{- end -}}
{{- if empty .Values.encryption.keys -}}
{{- fail "encryption.enabled needs encryption.keys (name and base64 secret) or encryption.existingSecret" -}}
{{- end -}}
{{- end -}}
{{- if not (has .Values.storage.etcd.certs.mode (list "auto" "custom")) -}}
{{- fail (printf "storage.etcd.certs.mode must be auto or custom, not %q" .Values.storage.etcd.certs.mode) -}}
{{- end -}}
{{- if and (eq .Values.storage.type "etcd") (not (include "karmada-rs.ownEtcd" .)) (eq .Values.storage.etcd.certs.mode "auto") -}}
{{- range .Values.storage.etcd.endpoints -}}
{{- if hasPrefix "https://" . -}}
{{- fail (printf "the chart cannot issue a client certificate your etcd at %s trusts: set storage.etcd.certs.mode=custom and create the Secret storage.etcd.certs.clientSecret (ca.crt, tls.crt, tls.key)" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (include "karmada-rs.ownEtcd" .) (eq .Values.storage.etcd.certs.mode "auto") (lt (int .Values.storage.etcd.certs.validityDays) 1) -}}
{{- fail "storage.etcd.certs.validityDays must be at least 1" -}}
{{- end -}}
{{- if not .Values.pki.secretName -}}
{{- fail "pki.secretName must name the Secret made from `karmada-rs certs --dir DIR`" -}}
{{- end -}}
{{- end -}}
