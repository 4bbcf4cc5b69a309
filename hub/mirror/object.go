package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// The labels and annotations on what the mirror writes.
const (
	// FieldManager is the field manager of the mirror's server-side applies.
	FieldManager = "argosy-mirror"
	// LabelManagedBy, set to FieldManager, marks the mirror's namespaces
	// and Applications: the mirror deletes only what carries it, and
	// never writes into a namespace without it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelCluster names the workload cluster a namespace or Application
	// mirrors.
	LabelCluster = "argosy.dev/cluster"
	// AnnotationSkipReconcile is Argo CD's: its application controller
	// passes over an Application that carries it set to "true".
	AnnotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"
	// AnnotationNamespace is the Application's namespace on its cluster.
	AnnotationNamespace = "argosy.dev/namespace"
	// AnnotationOwner is "hub" for an Application the hub manages, and
	// "spoke" for one its cluster owns (autonomous mode), which only the
	// cluster changes.
	AnnotationOwner = "argosy.dev/owner"
	// AnnotationHash is the hash of what the mirror last wrote: an object
	// whose hash matches is not written again.
	AnnotationHash = "argosy.dev/mirror-hash"
	// AnnotationGeneration is the generation of the hub's spec mirrored.
	AnnotationGeneration = "argosy.dev/generation"
)

// Owners of a mirrored Application.
const (
	OwnerHub   = "hub"
	OwnerSpoke = "spoke"
)

// historyLimit is how many deployments a mirrored Application's history
// keeps, as Argo CD's default revisionHistoryLimit.
const historyLimit = 10

// application is the Application that mirrors app in namespace ns, with
// history as its status.history (oldest first), or false when there is
// nothing to mirror: no spec the hub wants, and none its cluster owns.
func application(ns string, app read.App, history []projector.Deployment) (*unstructured.Unstructured, bool, error) {
	src, ok := sourceOf(app)
	if !ok {
		return nil, false, nil
	}
	var specObj map[string]any
	if err := json.Unmarshal(src.spec, &specObj); err != nil {
		return nil, false, fmt.Errorf("application %s/%s on %s: spec: %w", app.Namespace, app.Name, app.Cluster, err)
	}
	if _, ok := specObj["project"]; !ok && src.project != "" {
		specObj["project"] = src.project
	}
	labels := map[string]any{LabelManagedBy: FieldManager, LabelCluster: app.Cluster}
	for k, v := range src.labels {
		if !mirrorsLabel(k) {
			labels[k] = v
		}
	}
	annotations := map[string]any{
		AnnotationSkipReconcile: "true",
		AnnotationNamespace:     app.Namespace,
		AnnotationOwner:         src.owner,
		AnnotationGeneration:    strconv.FormatInt(src.gen, 10),
	}
	obj := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": app.Name, "namespace": ns, "labels": labels, "annotations": annotations},
		"spec":     specObj,
		"status":   status(app.Observed, history),
	}
	h, err := hashOf(obj)
	if err != nil {
		return nil, false, err
	}
	annotations[AnnotationHash] = h
	return &unstructured.Unstructured{Object: obj}, true, nil
}

// source is what a mirrored Application's spec and marks come from.
type source struct {
	spec    json.RawMessage
	project string
	labels  map[string]string
	owner   string
	gen     int64
}

// sourceOf is the spec to mirror, with its project, labels, owner and
// generation: the hub's, unless the hub has none and the cluster
// published one it owns; ok is false when there is neither.
func sourceOf(app read.App) (src source, ok bool) {
	if d := app.Desired; d != nil && !d.Deleted && len(d.Spec) > 0 {
		return source{d.Spec, d.Project, d.Labels, OwnerHub, d.Generation}, true
	}
	if o := app.Observed; o != nil && !o.Deleted && o.Local != nil && len(o.Local.Spec) > 0 {
		return source{o.Local.Spec, o.Local.Project, o.Local.Labels, OwnerSpoke, o.Local.Generation}, true
	}
	return source{}, false
}

// status is an Application's .status in Argo CD's shape, from what its
// cluster reported. The operation state's operation is not reported, so
// it is written as a sync.
func status(o *projector.AppObserved, history []projector.Deployment) map[string]any {
	st := map[string]any{}
	if o == nil || o.Deleted {
		return st
	}
	if o.Sync != nil {
		st["sync"] = omitEmpty(map[string]any{"status": o.Sync.Status, "revision": o.Sync.Revision})
	}
	if o.Health != nil {
		st["health"] = omitEmpty(map[string]any{"status": o.Health.Status, "message": o.Health.Message})
	}
	if op := o.Operation; op != nil {
		s := omitEmpty(map[string]any{"phase": op.Phase, "message": op.Message, "startedAt": timeString(op.StartedAt)})
		s["operation"] = map[string]any{"sync": map[string]any{}}
		if op.FinishedAt != nil {
			s["finishedAt"] = timeString(*op.FinishedAt)
		}
		st["operationState"] = s
	}
	if len(o.Conditions) > 0 {
		st["conditions"] = conditions(o.Conditions)
	}
	if o.Resources != nil && len(o.Resources.Items) > 0 {
		st["resources"] = resources(o.Resources.Items)
	}
	if h := historyOf(history); len(h) > 0 {
		st["history"] = h
	}
	if !o.UpdatedAt.IsZero() {
		st["reconciledAt"] = timeString(o.UpdatedAt)
	}
	return st
}

// resources is Argo CD's status.resources of what the cluster reported:
// at most schemas.MaxResourceItems of them (ResourceSummary.Items).
func resources(rs []schemas.ResourceStatus) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		m := omitEmpty(map[string]any{"group": r.Group, "version": r.Version, "kind": r.Kind, "namespace": r.Namespace,
			"name": r.Name, "status": r.Status})
		if r.Health != nil {
			m["health"] = omitEmpty(map[string]any{"status": r.Health.Status, "message": r.Health.Message})
		}
		if r.Hook {
			m["hook"] = true
		}
		if r.RequiresPruning {
			m["requiresPruning"] = true
		}
		if r.SyncWave != 0 {
			m["syncWave"] = r.SyncWave
		}
		out = append(out, m)
	}
	return out
}

func conditions(cs []schemas.Condition) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		msg := c.Message
		if msg == "" {
			msg = c.Type
		}
		out = append(out, map[string]any{"type": c.Type, "message": msg})
	}
	return out
}

// historyOf is Argo CD's status.history of the deployments that have a
// history id, the last historyLimit of them.
func historyOf(ds []projector.Deployment) []any {
	var out []any
	for _, d := range ds {
		if d.HistoryID == nil {
			continue
		}
		e := omitEmpty(map[string]any{"revision": d.Revision, "deployedAt": timeString(d.FinishedAt),
			"deployStartedAt": timeString(d.StartedAt)})
		e["id"] = *d.HistoryID
		if d.Initiator != "" {
			e["initiatedBy"] = map[string]any{"username": d.Initiator}
		}
		out = append(out, e)
	}
	if len(out) > historyLimit {
		out = out[len(out)-historyLimit:]
	}
	return out
}

func omitEmpty(m map[string]any) map[string]any {
	maps.DeleteFunc(m, func(_ string, v any) bool { return v == "" })
	return m
}

func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// hashOf is a hash of obj's JSON, whose maps encoding/json writes in key
// order.
func hashOf(obj map[string]any) (string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// withCondition adds c to obj's status.conditions, and hashes obj again.
func withCondition(obj *unstructured.Unstructured, c map[string]any) error {
	st, _ := obj.Object["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		obj.Object["status"] = st
	}
	cs, _ := st["conditions"].([]any)
	st["conditions"] = append(cs, c)
	ann := obj.GetAnnotations()
	delete(ann, AnnotationHash)
	obj.SetAnnotations(ann)
	h, err := hashOf(obj.Object)
	if err != nil {
		return err
	}
	ann[AnnotationHash] = h
	obj.SetAnnotations(ann)
	return nil
}
