// The commit message of a write: the GitTarget's template for the commit's reason, or the
// default. A template that fails never costs a commit: the default takes its place, and the
// caller is told why so it can report it on the GitTarget.
import type { MessageData } from "./model.ts";
import { parseTemplate, render, type Template } from "./template.ts";
import { errorText } from "../telemetry/errortext.ts";

/** GitTarget spec.commit.message. */
export interface MessageTemplates {
  liveTemplate?: string;
  reconcileTemplate?: string;
  requestTemplate?: string;
}

export type TemplateField = keyof MessageTemplates;

export interface CommitMessage {
  message: string;
  /** Set when the GitTarget's template was not used: which one, and why. */
  fallback?: { template: TemplateField; reason: string };
}

/** The most resources the default messages list, so a resync of thousands stays readable. */
export const listedResources = 50;

// The defaults are plain Go templates over the documented fields, so a user can start from one.
// "{{.Operation}}d" is the past tense of create, update and delete alike.
const resourceList = String.raw`
{{- if .Resources }}{{ "\n" }}{{ end }}
{{- range $i, $r := .Resources }}
  {{- if lt $i ${listedResources} }}{{ "\n" }}- {{ .Operation }}d {{ if .Group }}{{ .Group }}/{{ end }}{{ .Resource }} {{ if .Namespace }}{{ .Namespace }}/{{ end }}{{ .Name }}{{ end }}
{{- end }}
{{- if gt (len .Resources) ${listedResources} }}{{ "\n" }}... and {{ len (slice .Resources ${listedResources}) }} more{{ end }}`;

/**
 * One change names its object, "update team-a/configmaps/app-config"; several are counted, by
 * their operation when they share one, else as updates with a breakdown, and placed in the
 * namespace they share, else in the GitTarget's folder:
 * "update 3 resources in team-a (2 updated, 1 created)".
 */
export const defaultLiveTemplate =
  String.raw`{{- $c := .Counts -}}
{{- $where := .GitTarget.Path -}}
{{- with .Resources }}{{ $where = (index . 0).Namespace }}{{ end -}}
{{- range .Resources }}{{ if ne .Namespace $where }}{{ $where = $.GitTarget.Path }}{{ end }}{{ end -}}
{{- if not $where }}{{ $where = .GitTarget.Path }}{{ end -}}
{{- if eq $c.Total 0 -}}
  no changes in {{ .GitTarget.Path }}
{{- else if eq $c.Total 1 -}}
  {{- with index .Resources 0 -}}
    {{ .Operation }} {{ if .Namespace }}{{ .Namespace }}/{{ end }}{{ .Resource }}/{{ .Name }}
  {{- end -}}
{{- else -}}
  {{- if eq $c.Created $c.Total }}create{{ else if eq $c.Deleted $c.Total }}delete{{ else }}update{{ end -}}
  {{- " " }}{{ $c.Total }} resources in {{ $where }}
  {{- if and (ne $c.Created $c.Total) (ne $c.Updated $c.Total) (ne $c.Deleted $c.Total) }} (
    {{- if $c.Updated }}{{ $c.Updated }} updated{{ end }}
    {{- if and $c.Updated $c.Created }}, {{ end }}
    {{- if $c.Created }}{{ $c.Created }} created{{ end }}
    {{- if and (or $c.Updated $c.Created) $c.Deleted }}, {{ end }}
    {{- if $c.Deleted }}{{ $c.Deleted }} deleted{{ end -}}
  ){{ end }}
{{- end }}` + resourceList;

/** A resync says so: "reconcile: 12 resources in clusters/prod/team-a". */
export const defaultReconcileTemplate =
  String.raw`reconcile: {{ .Counts.Total }} resource{{ if ne .Counts.Total 1 }}s{{ end }} in {{ .GitTarget.Path }}` +
  resourceList;

/** A CommitRequest's message, verbatim: the request's author chose every byte. */
export const defaultRequestTemplate = "{{ .RequestMessage }}";

const defaults = {
  liveTemplate: parseTemplate(defaultLiveTemplate),
  reconcileTemplate: parseTemplate(defaultReconcileTemplate),
  requestTemplate: parseTemplate(defaultRequestTemplate),
} satisfies Record<TemplateField, Template>;

/** Which template a commit uses. */
export function templateField(data: MessageData): TemplateField {
  if (data.Reason === "reconcile") return "reconcileTemplate";
  // A request without a message commits like live changes (CommitRequest spec: "Omission uses
  // liveTemplate").
  if (data.Reason === "request" && data.RequestMessage) return "requestTemplate";
  return "liveTemplate";
}

/**
 * Renders the commit message for `data` with the GitTarget's template for its reason, or the
 * default when the target sets none. A template that fails to parse or render, renders nothing
 * but whitespace, or (for a request) leaves out the request's message, is replaced by the
 * default, and `fallback` says why.
 */
export function commitMessage(templates: MessageTemplates | undefined, data: MessageData): CommitMessage {
  const field = templateField(data);
  const own = templates?.[field];
  if (own === undefined) return { message: renderDefault(field, data) };
  let reason: string;
  try {
    const message = render(parseTemplate(own), data);
    const problem = unusable(message, data, field);
    if (problem === undefined) return { message };
    reason = problem;
  } catch (err) {
    reason = errorText(err);
  }
  return { message: renderDefault(field, data), fallback: { template: field, reason } };
}

function unusable(message: string, data: MessageData, field: TemplateField): string | undefined {
  if (message.trim() === "") return "the template rendered an empty message";
  // Admission checks only that the template mentions .RequestMessage; this checks it rendered it.
  if (
    field === "requestTemplate" &&
    data.RequestMessage !== undefined &&
    !message.includes(data.RequestMessage)
  )
    return "the template did not render the request's message";
  return undefined;
}

/**
 * The defaults render any data the model allows; should one ever fail, as on a request message
 * past the output bound, a plain message keeps the commit, and the request's words in it.
 */
function renderDefault(field: TemplateField, data: MessageData): string {
  try {
    return render(defaults[field], data);
  } catch {
    return data.RequestMessage ?? `${data.Reason}: ${data.Counts.Total} resources in ${data.GitTarget.Path}`;
  }
}
