{{/* Names and labels. Objects are named after the release, or after
fullnameOverride when set. */}}
{{- define "argosy.name" -}}
{{- .Values.fullnameOverride | default .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* A part's name: <release>-<part>, or the release's name when that
already ends in -<part> (release argosy-spoke, say). */}}
{{- define "argosy.component" -}}
{{- $release := include "argosy.name" .root -}}
{{- if hasSuffix (printf "-%s" .component) $release -}}
{{- $release -}}
{{- else -}}
{{- printf "%s-%s" $release .component -}}
{{- end -}}
{{- end -}}

{{- define "argosy.labels" -}}
app.kubernetes.io/name: argosy
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* A part's metrics Service: its labels, and the one its ServiceMonitor
selects by. */}}
{{- define "argosy.metricsLabels" -}}
{{ include "argosy.labels" . }}
argosy.dev/service: metrics
{{- end -}}

{{- define "argosy.selector" -}}
app.kubernetes.io/name: argosy
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* An image reference: repository@digest when a digest is given (the tag
is then ignored), else repository:tag, the tag defaulting to appVersion. */}}
{{- define "argosy.image" -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- $tag := .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" .repository $tag -}}
{{- end -}}
{{- end -}}

{{/* A KafkaUser Secret: .secret unless empty, else the KafkaUser
deploy/internal/gen names: kafka.topicPrefix in lower case with '.' and
'_' as '-', then .user (deploy.Names). */}}
{{- define "argosy.kafkaUser" -}}
{{- .secret | default (printf "%s%s" (.root.Values.kafka.topicPrefix | lower | replace "." "-" | replace "_" "-") .user) -}}
{{- end -}}

{{/* The spoke's KafkaUser Secret: [prefix-]argosy-spoke-<cluster> unless set. */}}
{{- define "argosy.spokeUserSecret" -}}
{{- include "argosy.kafkaUser" (dict "root" . "secret" .Values.spoke.kafkaUserSecret "user" (printf "argosy-spoke-%s" .Values.spoke.cluster)) -}}
{{- end -}}

{{/* Pod and container security: the chart's defaults (non-root, read-only
root, no privileges, RuntimeDefault seccomp) with the part's
podSecurityContext and securityContext merged over them, field by field:
a field the operator sets wins, the others stay. Called with the part's
values. */}}
{{- define "argosy.podSecurity" -}}
{{- $defaults := dict "runAsNonRoot" true "runAsUser" 65532 "runAsGroup" 65532 "fsGroup" 65532 "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- toYaml (mergeOverwrite $defaults (.podSecurityContext | default dict)) -}}
{{- end -}}

{{- define "argosy.containerSecurity" -}}
{{- $defaults := dict "readOnlyRootFilesystem" true "allowPrivilegeEscalation" false "capabilities" (dict "drop" (list "ALL")) -}}
{{- toYaml (mergeOverwrite $defaults (.securityContext | default dict)) -}}
{{- end -}}

{{/* A pod template's metadata: the chart's labels with the part's
podLabels (the chart's win on a clash: the selector must match), and the
chart's annotations (.annotations) with the part's podAnnotations. */}}
{{- define "argosy.podMeta" -}}
{{- $labels := merge (fromYaml (include "argosy.labels" .c)) (.part.podLabels | default dict) -}}
{{- $annotations := merge (.annotations | default dict) (.part.podAnnotations | default dict) -}}
labels: {{- toYaml $labels | nindent 2 }}
{{- with $annotations }}
annotations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* What a part adds to its pod spec: priority class, topology spread (a
constraint without a labelSelector gets the part's selector), node
selector, tolerations and affinity. Called with dict "c" (root, component)
and "part" (the part's values). */}}
{{- define "argosy.podSpecExtras" -}}
{{- with .part.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .part.topologySpreadConstraints }}
topologySpreadConstraints:
{{- range $tsc := . }}
  - {{ toYaml $tsc | nindent 4 | trim }}
    {{- if not $tsc.labelSelector }}
    labelSelector:
      matchLabels: {{- include "argosy.selector" $.c | nindent 8 }}
    {{- end }}
{{- end }}
{{- end }}
{{- include "argosy.scheduling" .part }}
{{- end -}}

{{/* Kafka over the TLS listener, with the cluster CA, authenticated as
kafka.auth.type says (docs/kafka.md#strimzi): tls, the KafkaUser's client
certificate (user.crt, user.key); scram-sha-512, the KafkaUser's password
(key password) as user the KafkaUser's name, which is its Secret's name.
The Secrets are mounted whole, not by subPath, so renewed certificates and
passwords reach the files. Called with dict "root" and "userSecret". */}}
{{- define "argosy.kafkaEnv" -}}
{{- $v := .root.Values -}}
- name: ARGOSY_KAFKA_BROKERS
  value: {{ $v.kafka.bootstrap | quote }}
- name: ARGOSY_KAFKA_TLS
  value: "true"
- name: ARGOSY_KAFKA_CA_FILE
  value: /etc/argosy/kafka-ca/ca.crt
{{- if eq (include "argosy.kafkaAuth" .root) "scram-sha-512" }}
- name: ARGOSY_KAFKA_SASL_MECHANISM
  value: SCRAM-SHA-512
- name: ARGOSY_KAFKA_SASL_USERNAME
  value: {{ .userSecret | quote }}
- name: ARGOSY_KAFKA_SASL_PASSWORD_FILE
  value: /etc/argosy/kafka-user/password
{{- else }}
- name: ARGOSY_KAFKA_CERT_FILE
  value: /etc/argosy/kafka-user/user.crt
- name: ARGOSY_KAFKA_KEY_FILE
  value: /etc/argosy/kafka-user/user.key
{{- end }}
- name: ARGOSY_TOPIC_PREFIX
  value: {{ $v.kafka.topicPrefix | quote }}
{{- with $v.kafka.rack }}
- name: ARGOSY_KAFKA_RACK
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* kafka.auth.type: tls unless set. */}}
{{- define "argosy.kafkaAuth" -}}
{{- (.Values.kafka.auth | default dict).type | default "tls" -}}
{{- end -}}

{{- define "argosy.kafkaMounts" -}}
- name: kafka-ca
  mountPath: /etc/argosy/kafka-ca
  readOnly: true
- name: kafka-user
  mountPath: /etc/argosy/kafka-user
  readOnly: true
{{- end -}}

{{- define "argosy.kafkaVolumes" -}}
- name: kafka-ca
  secret:
    secretName: {{ .root.Values.kafka.clusterCASecret }}
    items: [{key: ca.crt, path: ca.crt}]
- name: kafka-user
  secret:
    secretName: {{ .userSecret }}
    {{- if eq (include "argosy.kafkaAuth" .root) "scram-sha-512" }}
    items: [{key: password, path: password}]
    {{- else }}
    items: [{key: user.crt, path: user.crt}, {key: user.key, path: user.key}]
    {{- end }}
{{- end -}}

{{/* Probes on the metrics port: /healthz while the process serves,
/readyz while it reaches Kafka (and its store). */}}
{{- define "argosy.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: metrics}
  periodSeconds: 10
  failureThreshold: 6
readinessProbe:
  httpGet: {path: /readyz, port: metrics}
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 3
{{- end -}}

{{- define "argosy.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
