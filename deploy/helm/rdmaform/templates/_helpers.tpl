{{/*
The labels Helm's conventions add to every object of the release, beside
app.kubernetes.io/name: rdmaform-agent, which deploy/kubernetes/ has too
(and which the DaemonSet selects its pods by).
*/}}
{{- define "rdmaform.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The agent's image: REPOSITORY:TAG (the tag defaults to the chart's
appVersion, the tag make image gives), or REPOSITORY@DIGEST.
*/}}
{{- define "rdmaform.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
extraHostMounts, checked where the schema cannot: each name and each
mount path once in the pod, the agent's own included.
*/}}
{{- define "rdmaform.checkMounts" -}}
{{- $names := dict -}}
{{- $paths := dict "/sys" "sys" "/run" "run" "/etc" "etc" "/var/lib/rdmaform" "var-lib-rdmaform" "/lib/modules" "modules" -}}
{{- range $i, $m := .Values.extraHostMounts -}}
{{- if hasKey $names $m.name -}}
{{- fail (printf "extraHostMounts[%d]: the name %q is taken by extraHostMounts[%v]" $i $m.name (get $names $m.name)) -}}
{{- end -}}
{{- $_ := set $names $m.name $i -}}
{{- $path := get $m "mountPath" | default $m.hostPath | clean -}}
{{- if hasKey $paths $path -}}
{{- fail (printf "extraHostMounts[%d]: the mount path %s is taken by the volume %q" $i $path (get $paths $path)) -}}
{{- end -}}
{{- $_ := set $paths $path $m.name -}}
{{- end -}}
{{- end }}
