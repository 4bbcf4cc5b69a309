{{/* Names and labels. */}}
{{- define "argosy.name" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
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

{{- define "argosy.selector" -}}
app.kubernetes.io/name: argosy
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "argosy.image" -}}
{{- $tag := .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" .repository $tag -}}
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

{{/* Pod and container security: non-root, read-only root, no privileges. */}}
{{- define "argosy.podSecurity" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "argosy.containerSecurity" -}}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Kafka over the TLS listener with the KafkaUser's client certificate
(docs/kafka.md#strimzi). The Secrets are mounted whole, not by subPath, so
renewed certificates reach the files. */}}
{{- define "argosy.kafkaEnv" -}}
- name: ARGOSY_KAFKA_BROKERS
  value: {{ .Values.kafka.bootstrap | quote }}
- name: ARGOSY_KAFKA_TLS
  value: "true"
- name: ARGOSY_KAFKA_CA_FILE
  value: /etc/argosy/kafka-ca/ca.crt
- name: ARGOSY_KAFKA_CERT_FILE
  value: /etc/argosy/kafka-user/user.crt
- name: ARGOSY_KAFKA_KEY_FILE
  value: /etc/argosy/kafka-user/user.key
- name: ARGOSY_TOPIC_PREFIX
  value: {{ .Values.kafka.topicPrefix | quote }}
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
    items: [{key: user.crt, path: user.crt}, {key: user.key, path: user.key}]
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
