{{/*
Chart name, truncated to 63 characters (a label value's limit).
*/}}
{{- define "skrull.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: the prefix of every object name. `<release>` when the release name
contains the chart name, `<release>-<chart>` otherwise; at most 63 characters.
*/}}
{{- define "skrull.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Name of one component's objects: `<fullname>-<component>`, at most 63
characters (Service names are DNS-1123 labels).
Usage: include "skrull.componentName" (list . "controller")
*/}}
{{- define "skrull.componentName" -}}
{{- printf "%s-%s" (include "skrull.fullname" (index . 0)) (index . 1) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "skrull.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels. Immutable in a Deployment's selector: never add the version.
*/}}
{{- define "skrull.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skrull.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels of every object the chart renders.
*/}}
{{- define "skrull.labels" -}}
helm.sh/chart: {{ include "skrull.chart" . }}
{{ include "skrull.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: skrull
{{- end }}

{{/*
Selector labels of the controller pods. The component keeps the selector from
ever matching trainer pods, which share app.kubernetes.io/name.
*/}}
{{- define "skrull.controllerSelectorLabels" -}}
{{ include "skrull.selectorLabels" . }}
app.kubernetes.io/component: controller
{{- end }}

{{/*
Labels the controller puts on every trainer pod (a contract with the C++
controller; see docs/deploy.md). The PodMonitor selects on these.
*/}}
{{- define "skrull.trainerPodSelectorLabels" -}}
app.kubernetes.io/name: skrull
app.kubernetes.io/component: trainer
app.kubernetes.io/managed-by: skrull-controller
{{- end }}

{{- define "skrull.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "skrull.componentName" (list . "controller")) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "skrull.trainerServiceAccountName" -}}
{{- if .Values.trainer.serviceAccount.create }}
{{- default (include "skrull.componentName" (list . "trainer")) .Values.trainer.serviceAccount.name }}
{{- else }}
{{- .Values.trainer.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The namespace the controller watches (`--namespace`): watchNamespace, else
the release namespace; "" (every namespace) only with rbac.clusterWide.
*/}}
{{- define "skrull.watchNamespace" -}}
{{- if .Values.watchNamespace }}
{{- .Values.watchNamespace }}
{{- else if not .Values.rbac.clusterWide }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/*
Namespaces the trainer ServiceAccount is created in, one per line.
*/}}
{{- define "skrull.trainerServiceAccountNamespaces" -}}
{{- $default := list (default .Release.Namespace .Values.watchNamespace) }}
{{- range (.Values.trainer.serviceAccount.namespaces | default $default | uniq) }}
{{ . }}
{{- end }}
{{- end }}

{{/*
Image reference `<repository>:<tag>`, the tag defaulting to appVersion.
Usage: include "skrull.image" (list . .Values.controller.image)
*/}}
{{- define "skrull.image" -}}
{{- $image := index . 1 }}
{{- printf "%s:%s" $image.repository (default (index . 0).Chart.AppVersion $image.tag) }}
{{- end }}

{{/*
Whether the cluster serves a monitoring.coreos.com/v1 kind.
Usage: include "skrull.hasMonitoringApi" (list . "PodMonitor") -> "true" or ""
*/}}
{{- define "skrull.hasMonitoringApi" -}}
{{- if (index . 0).Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" (index . 1)) }}true{{ end }}
{{- end }}
