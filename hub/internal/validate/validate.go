// Package validate checks the manifests the hub accepts with Argo CD's own
// types: strict decoding into github.com/argoproj/argo-cd/v2's v1alpha1
// Application and AppProject (v2.14.21), the CRDs' schemas, the rules the
// CRDs cannot express, and an AppProject's rules for an Application.
//
// Every rejection is an *Error naming each wrong field by its JSON path
// (spec.source.repoURL) and saying what to do about it. Fields the cluster
// sets (metadata.uid, resourceVersion, creationTimestamp, generation,
// managedFields, ownerReferences, selfLink, deletionTimestamp) and the
// status are refused rather than ignored: a manifest read back from a
// cluster and applied as it is would otherwise look accepted while those
// fields were dropped. So are operation (operations have an API of their
// own), finalizers (argosy app delete --cascade decides what a deletion
// takes with it), and labels and annotations under argosy.dev/, which
// Argosy sets itself (the generation, the placement, the source commit).
//
// Before anything parses a manifest recursively, its shape is checked in
// one pass, in time and memory linear in it: nothing may nest deeper than
// api.MaxDepth, and no key may be given twice (which the conversion from
// YAML would otherwise settle silently, the last one winning). Names,
// labels and annotations are held to Kubernetes' own rules, with
// apimachinery's validation, so what the hub accepts an apiserver accepts
// too; and a repository URL may not carry credentials, which a manifest
// would store and show in the clear.
//
// It is the only package that links Argo CD's module (see docs/hub.md); the
// argosy CLI and the spoke never do.
package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/hub/api"
)

// APIVersion is the only version of Argo CD's kinds the hub accepts.
const APIVersion = "argoproj.io/v1alpha1"

// FieldError is one wrong field.
type FieldError struct {
	// Field is the JSON path of the field, such as spec.source.repoURL.
	Field  string
	Reason string
}

// Error is a rejected manifest: the wrong fields found, up to maxFields.
type Error struct {
	Fields []FieldError
	// More is set when more fields were wrong than Fields lists.
	More bool
}

// maxFields bounds the fields an Error lists: a 2 MiB manifest may hold
// a hundred thousand wrong labels, and an answer naming each would be
// fifty times its size.
const maxFields = 20

func (e *Error) Error() string {
	parts := make([]string, 0, len(e.Fields)+1)
	for _, f := range e.Fields {
		parts = append(parts, f.Field+": "+f.Reason)
	}
	if e.More {
		parts = append(parts, fmt.Sprintf("and more: only the first %d problems are listed", maxFields))
	}
	return strings.Join(parts, "; ")
}

func (e *Error) add(field, format string, args ...any) {
	e.addField(FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// addField adds f, its field and reason shortened past what anyone reads:
// both may quote what the caller sent (an unknown key, a URL).
func (e *Error) addField(f FieldError) {
	if e.full() {
		return
	}
	f.Field, f.Reason = clip(f.Field, maxFieldBytes), clip(f.Reason, maxReasonBytes)
	e.Fields = append(e.Fields, f)
}

// The longest field and reason an Error says: a label's key may be 317
// bytes long, and is named whole.
const (
	maxFieldBytes  = 512
	maxReasonBytes = 1024
)

// clip keeps the start and the end of s past n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "…" + s[len(s)-n/2:]
}

// full reports whether the error lists all it will, and marks it as
// having more: a check that finds it full may stop looking.
func (e *Error) full() bool {
	if len(e.Fields) < maxFields {
		return false
	}
	e.More = true
	return true
}

func (e *Error) err() error {
	if len(e.Fields) == 0 {
		return nil
	}
	return e
}

// App is a validated Application: what the hub writes into an
// io.argosy.config.application.upserted.v1 event.
type App struct {
	Namespace, Name, Project string
	Labels, Annotations      map[string]string
	// Spec is the spec as the manifest gave it, in compact JSON.
	Spec json.RawMessage
}

// Project is a validated AppProject.
type Project struct {
	Namespace, Name string
	Labels          map[string]string
	Spec            json.RawMessage
}

// Application validates an Application manifest (YAML or JSON). A manifest
// that names no namespace gets defaultNamespace.
func Application(manifest []byte, defaultNamespace string) (*App, error) {
	var a v1alpha1.Application
	raw, verr := decode(manifest, "Application", &a, applicationSchema)
	if verr.err() != nil {
		return nil, verr
	}
	checkMeta(verr, a.Name, raw)
	spec := a.Spec
	if spec.Project == "" {
		verr.add("spec.project", "required: the AppProject the Application belongs to (default for Argo CD's default project)")
	} else {
		checkName(verr, "spec.project", spec.Project)
	}
	switch {
	case spec.Source == nil && len(spec.Sources) == 0:
		verr.add("spec.source", "required: give spec.source, or spec.sources for several")
	case spec.Source != nil && len(spec.Sources) > 0:
		verr.add("spec.sources", "give spec.source or spec.sources, not both")
	}
	for i, src := range spec.GetSources() {
		if verr.full() {
			break
		}
		field := "spec.source"
		if len(spec.Sources) > 0 {
			field = fmt.Sprintf("spec.sources[%d]", i)
		}
		if src.RepoURL == "" {
			verr.add(field+".repoURL", "required: the repository (or Helm registry) to deploy from")
		}
		checkRepoURL(verr, field+".repoURL", src.RepoURL)
		if src.Helm != nil {
			for j, f := range src.Helm.ValueFiles {
				checkURL(verr, fmt.Sprintf("%s.helm.valueFiles[%d]", field, j), f,
					"Keep values files in the source's repository, whose credentials argosy repo add seals to the cluster")
			}
		}
	}
	d := spec.Destination
	checkURL(verr, "spec.destination.server", d.Server, destinationInstead)
	switch {
	case d.Server == "" && d.Name == "":
		verr.add("spec.destination", "give server (https://kubernetes.default.svc for the cluster Argo CD runs in) or name")
	case d.Server != "" && d.Name != "":
		verr.add("spec.destination", "give server or name, not both")
	}
	if err := verr.err(); err != nil {
		return nil, err
	}
	specJSON, err := compact(raw["spec"])
	if err != nil {
		return nil, err
	}
	return &App{Namespace: namespaceOr(a.Namespace, defaultNamespace), Name: a.Name, Project: spec.Project,
		Labels: a.Labels, Annotations: a.Annotations, Spec: specJSON}, nil
}

// destinationInstead says where a destination's credentials belong.
const destinationInstead = "Give the API server's URL alone: the credentials to a destination cluster belong to Argo CD on the cluster " +
	"(its cluster Secret), never in a manifest"

// AppProject validates an AppProject manifest (YAML or JSON).
func AppProject(manifest []byte, defaultNamespace string) (*Project, error) {
	var p v1alpha1.AppProject
	raw, verr := decode(manifest, "AppProject", &p, appProjectSchema)
	if verr.err() != nil {
		return nil, verr
	}
	checkMeta(verr, p.Name, raw)
	for i, repo := range p.Spec.SourceRepos {
		if verr.full() {
			break
		}
		checkRepoURL(verr, fmt.Sprintf("spec.sourceRepos[%d]", i), repo)
	}
	for i, d := range p.Spec.Destinations {
		checkURL(verr, fmt.Sprintf("spec.destinations[%d].server", i), d.Server, destinationInstead)
	}
	if err := verr.err(); err != nil {
		return nil, err
	}
	spec := raw["spec"]
	if len(spec) == 0 {
		spec = json.RawMessage(`{}`)
	}
	specJSON, err := compact(spec)
	if err != nil {
		return nil, err
	}
	return &Project{Namespace: namespaceOr(p.Namespace, defaultNamespace), Name: p.Name, Labels: p.Labels, Spec: specJSON}, nil
}

// Permitted checks app against the rules of its AppProject, whose spec
// projectSpec is: every source's repository must be among sourceRepos and
// the destination among destinations, deny ("!") entries included, as
// Argo CD matches them. A project that permits only its own clusters
// (permitOnlyProjectScopedClusters) cannot be checked here, since the hub
// does not know the clusters Argo CD has: Argo CD checks it on the cluster.
func Permitted(app *App, projectSpec json.RawMessage) error {
	var spec v1alpha1.ApplicationSpec
	if err := json.Unmarshal(app.Spec, &spec); err != nil {
		return fmt.Errorf("validate: the Application's spec: %w", err)
	}
	proj := v1alpha1.AppProject{}
	proj.Name = app.Project
	if err := json.Unmarshal(projectSpec, &proj.Spec); err != nil {
		return fmt.Errorf("validate: the AppProject's spec: %w", err)
	}
	verr := &Error{}
	for i, src := range spec.GetSources() {
		field := "spec.source.repoURL"
		if len(spec.Sources) > 0 {
			field = fmt.Sprintf("spec.sources[%d].repoURL", i)
		}
		if !proj.IsSourcePermitted(src) {
			verr.add(field, "repository %q is not permitted in project %q (its sourceRepos: %s)", src.RepoURL, app.Project, listOf(proj.Spec.SourceRepos))
		}
	}
	ok, err := proj.IsDestinationPermitted(spec.Destination, func(string) ([]*v1alpha1.Cluster, error) {
		return nil, errUnknowable
	})
	if !ok && !errors.Is(err, errUnknowable) {
		verr.add("spec.destination", "destination %s is not permitted in project %q (its destinations: %s)",
			destination(spec.Destination), app.Project, destinations(proj.Spec.Destinations))
	}
	return verr.err()
}

var errUnknowable = errors.New("the project's own clusters are known only on the cluster")

// serverSet are the metadata fields the cluster sets.
var serverSet = []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "ownerReferences",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// checkMeta checks metadata's name and namespace and refuses the fields the
// cluster sets.
func checkMeta(verr *Error, name string, raw map[string]json.RawMessage) {
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(raw["metadata"], &meta); err != nil || meta == nil {
		verr.add("metadata", "required: an object with at least a name")
		return
	}
	if name == "" {
		verr.add("metadata.name", "required")
	} else {
		checkName(verr, "metadata.name", name)
	}
	var ns string
	if v, ok := meta["namespace"]; ok && json.Unmarshal(v, &ns) == nil && ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			verr.add("metadata.namespace", "%s is not a namespace's name (a DNS-1123 label): %s", quoted(ns), strings.Join(msgs, "; "))
		}
	}
	for _, f := range serverSet {
		if _, ok := meta[f]; ok {
			verr.add("metadata."+f, "set by the cluster, not by a manifest: leave it out")
		}
	}
	if _, ok := meta["finalizers"]; ok {
		verr.add("metadata.finalizers", "the hub does not write finalizers: argosy app delete --cascade decides whether a deletion takes the Application's resources with it")
	}
	for _, field := range []string{"labels", "annotations"} {
		var m map[string]string
		if json.Unmarshal(meta[field], &m) != nil {
			continue // the strict decode reports a map of the wrong shape
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if strings.HasPrefix(k, ReservedPrefix) {
				verr.add("metadata."+field+"["+k+"]", "reserved: Argosy sets its own %s labels and annotations (the generation, the placement, the source commit, which --commit-time sends)", ReservedPrefix)
			}
		}
		if field == "labels" {
			checkLabels(verr, m)
		} else {
			checkAnnotations(verr, m)
		}
	}
}

// ReservedPrefix is the prefix of the labels and annotations Argosy puts
// on the objects it manages; a manifest may not set them.
const ReservedPrefix = "argosy.dev/"

// decode parses a manifest strictly into v, after checking its apiVersion,
// kind and top-level fields and its CRD's schema, and returns its top-level
// fields as JSON.
func decode(manifest []byte, kind string, v any, schema func(any) []FieldError) (map[string]json.RawMessage, *Error) {
	verr := &Error{}
	j, err := toJSON(manifest)
	if err != nil {
		var se *shapeError
		if errors.As(err, &se) {
			verr.addField(se.fieldError())
			return nil, verr
		}
		verr.add("(manifest)", "%v", err)
		return nil, verr
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(j, &raw); err != nil || raw == nil {
		verr.add("(manifest)", "want an object (a whole %s, apiVersion %s)", kind, APIVersion)
		return nil, verr
	}
	var head struct{ APIVersion, Kind string }
	_ = json.Unmarshal(j, &head) // a wrong shape leaves the fields empty, which the checks below refuse
	if head.APIVersion != APIVersion {
		verr.add("apiVersion", "%q: want %s", head.APIVersion, APIVersion)
	}
	if head.Kind != kind {
		verr.add("kind", "%q: want %s", head.Kind, kind)
	}
	for _, k := range slices.Sorted(mapsKeys(raw)) {
		switch k {
		case "apiVersion", "kind", "metadata", "spec":
		case "status":
			verr.add("status", "set by Argo CD on the cluster, not by a manifest: leave it out")
		case "operation":
			verr.add("operation", "operations are requests of their own: argosy app sync|refresh|rollback|terminate")
		default:
			verr.add(k, "unknown field")
		}
	}
	if _, ok := raw["spec"]; !ok && kind == "Application" {
		verr.add("spec", "required")
	}
	if verr.err() != nil {
		return nil, verr
	}
	var doc any
	if err := json.Unmarshal(j, &doc); err != nil {
		verr.add("(manifest)", "%v", err)
		return nil, verr
	}
	for _, f := range schema(doc) {
		verr.addField(f)
	}
	if verr.err() != nil {
		return nil, verr
	}
	strict, err := sigsjson.UnmarshalStrict(j, v)
	for _, s := range strict {
		verr.add(strictField(s), "%s", strictReason(s))
	}
	if err != nil {
		verr.add(typeField(err), "%v", err)
	}
	return raw, verr
}

// toJSON converts a manifest to JSON once its shape is checked: JSON is
// read token by token and taken as it is, never through the YAML parser,
// which costs several times more per value; YAML is bounded without
// parsing, then parsed (refusing a key given twice) and its JSON read as
// JSON is.
func toJSON(manifest []byte) ([]byte, error) {
	err := checkJSON(manifest)
	var se *shapeError
	switch {
	case err == nil:
		return manifest, nil
	case errors.As(err, &se):
		return nil, err
	}
	if bound, line := yamlDepthBound(manifest, yamlCeiling); bound > yamlCeiling {
		return nil, fmt.Errorf("nested too deep by line %d: the limit is %d levels of objects and arrays, counted from the manifest's top; flatten it", line, api.MaxDepth)
	}
	// The bound counts lines and commas; past twice the limit, the YAML
	// surely holds too many values to be worth parsing.
	if n := yamlValuesBound(manifest); n > 2*api.MaxValues {
		return nil, fmt.Errorf("%d lines and commas: a manifest holds at most %d keys and values; give large Helm values as a values file in the repository", n, api.MaxValues)
	}
	j, yerr := yaml.YAMLToJSONStrict(manifest)
	if yerr != nil {
		if m := yamlDupRe.FindStringSubmatch(yerr.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			key, uerr := strconv.Unquote(m[2])
			if uerr != nil {
				key = m[2]
			}
			if p := yamlKeyPath(manifest, line, key); p != "" {
				return nil, &shapeError{Kind: errDuplicate, Field: p}
			}
			return nil, fmt.Errorf("line %d: key %s given twice: give each field once (the later value would otherwise silently win)", line, quoted(key))
		}
		return nil, fmt.Errorf("not YAML or JSON: %w", yerr)
	}
	// YAML: its JSON holds no key twice, but may nest too deep or hold too
	// many values.
	if err := checkJSON(j); err != nil {
		return nil, err
	}
	return j, nil
}

// yamlDupRe reads the YAML parser's error for a key given twice.
var yamlDupRe = regexp.MustCompile(`line (\d+): key (.*) already set in map`)

func compact(b json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return buf.Bytes(), nil
}

func namespaceOr(ns, def string) string {
	if ns == "" {
		return def
	}
	return ns
}
