{{/* The release's name for the operator's objects: the release name, unless it already says gitops-reverser. */}}
{{- define "gitops-reverser.fullname" -}}
{{- if contains "gitops-reverser" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-gitops-reverser" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gitops-reverser.serviceAccountName" -}}
{{- default (include "gitops-reverser.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "gitops-reverser.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "gitops-reverser.labels" -}}
app.kubernetes.io/name: gitops-reverser
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The metrics port's name: https, or http with metrics.secure: false. */}}
{{- define "gitops-reverser.metricsPortName" -}}
{{- ternary "https" "http" .Values.metrics.secure -}}
{{- end -}}

{{- define "gitops-reverser.selector" -}}
app.kubernetes.io/name: gitops-reverser
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* The audit ingress's serving certificate Secret: cert-manager's, or the one provided. */}}
{{- define "gitops-reverser.auditSecret" -}}
{{- if .Values.attribution.certificate.certManager.enabled -}}
{{- printf "%s-audit-tls" (include "gitops-reverser.fullname" .) -}}
{{- else -}}
{{- .Values.attribution.certificate.secretName -}}
{{- end -}}
{{- end -}}
