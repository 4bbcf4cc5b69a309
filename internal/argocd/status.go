package argocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/argosyproj/argosy/schemas"
)

// AppStatus is what Argosy reads of one Application: its status in the
// wire types, and what deployment records and drift detection need.
type AppStatus struct {
	Namespace, Name string
	// Generation is the hub's generation the Application was applied at
	// (0 for Applications the hub did not write).
	Generation int64
	Deleted    bool
	Sync       *schemas.SyncStatus
	Health     *schemas.HealthStatus
	Operation  *schemas.OperationState
	Conditions []schemas.Condition
	Resources  *schemas.ResourceSummary

	// For deployment records.
	UID     string
	Project string
	Labels  map[string]string
	History []HistoryEntry
	// LastSync is the result of the last sync or rollback operation.
	LastSync *SyncResult

	// CommitRevision and CommitTime are the source commit the hub's last
	// change deploys and when it was committed, from the Application's
	// annotations, where the change said.
	CommitRevision string
	CommitTime     time.Time

	// SpecHash is the SpecHash of the Application's spec: the agent tells a
	// local edit of a managed Application by comparing it with the hash of
	// the spec it applied.
	SpecHash string
	// Local is set for an Application created in the cluster rather than by
	// Argosy, with what an agent in autonomous mode publishes of it.
	Local *LocalApp

	// ListDone marks the end of the Applications that existed when the
	// watch started: every one of them has been delivered. No other field
	// is set.
	ListDone bool
}

// HistoryEntry is one entry of an Application's status.history: a sync that
// succeeded.
type HistoryEntry struct {
	ID         int64
	Revision   string
	StartedAt  time.Time
	FinishedAt time.Time
	Initiator  string
	// Source is a digest of the source (or sources) the sync deployed,
	// "" when the entry names none: two syncs with the same revision and
	// source deployed the same thing.
	Source string
}

// SyncResult is the outcome of an Application's last sync operation
// (status.operationState), when that operation was a sync or a rollback.
type SyncResult struct {
	Phase      string
	Revision   string
	Initiator  string
	StartedAt  time.Time
	FinishedAt time.Time
	// Source is a digest of the source the sync was of, as HistoryEntry's.
	Source string
}

// LocalApp is an Application created in the cluster, as an agent in
// autonomous mode publishes it.
type LocalApp struct {
	// Generation is the object's metadata.generation.
	Generation int64
	Project    string
	Labels     map[string]string
	Spec       json.RawMessage
}

// Watcher is an informer on the Applications of one namespace.
type Watcher struct {
	dyn       dynamic.Interface
	namespace string
}

// NewWatcher watches the Applications in namespace.
func NewWatcher(dyn dynamic.Interface, namespace string) (*Watcher, error) {
	if dyn == nil || namespace == "" {
		return nil, errors.New("argocd: a dynamic client and a namespace are required")
	}
	return &Watcher{dyn: dyn, namespace: namespace}, nil
}

// Run calls changed with the status of each Application that is added,
// changed or deleted, until ctx ends; once the Applications that existed
// at the start have all been delivered, it calls changed with ListDone set.
// It returns when its informer has stopped.
func (w *Watcher) Run(ctx context.Context, changed func(AppStatus)) error {
	// A plain informer on a dynamic ListWatch: client-go's dynamicinformer
	// would link every typed informer and clientset of client-go, whose
	// package initialisation alone costs the spoke megabytes of memory.
	apps := w.dyn.Resource(applicationGVR).Namespace(w.namespace)
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			return apps.List(ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			return apps.Watch(ctx, opts)
		},
	}, &unstructured.Unstructured{}, 10*time.Minute, cache.Indexers{})
	if err := inf.SetTransform(slim); err != nil {
		return fmt.Errorf("watch applications: %w", err)
	}
	on := func(obj any, deleted bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s := StatusOf(u)
			s.Deleted = deleted
			changed(s)
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { on(obj, false) },
		UpdateFunc: func(_, obj any) { on(obj, false) },
		DeleteFunc: func(obj any) { on(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("watch applications: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx.Done())
	}()
	// The registration has synced once the handler has been given every
	// Application of the initial list.
	if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		changed(AppStatus{ListDone: true})
	}
	<-done // the informer stops when ctx ends
	return nil
}

// StatusOf reads an Application's status.
func StatusOf(u *unstructured.Unstructured) AppStatus {
	s := AppStatus{Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), Labels: u.GetLabels()}
	s.Project, _, _ = unstructured.NestedString(u.Object, "spec", "project")
	s.History, s.LastSync = deployments(u)
	s.SpecHash = SpecHash(u.Object["spec"])
	if u.GetLabels()[LabelManaged] != "true" {
		s.Local = localApp(u, s.Project)
	}
	if g, err := strconv.ParseInt(u.GetAnnotations()[AnnotationGeneration], 10, 64); err == nil {
		s.Generation = g // absent on Applications the hub did not write
	}
	if t, err := time.Parse(time.RFC3339, u.GetAnnotations()[AnnotationCommitTime]); err == nil {
		s.CommitRevision, s.CommitTime = u.GetAnnotations()[AnnotationCommitRevision], t
	}
	get := func(path ...string) string {
		v, _, _ := unstructured.NestedString(u.Object, path...)
		return v
	}
	if st := get("status", "sync", "status"); st != "" {
		s.Sync = &schemas.SyncStatus{Status: st, Revision: get("status", "sync", "revision")}
	}
	if st := get("status", "health", "status"); st != "" {
		s.Health = &schemas.HealthStatus{Status: st, Message: get("status", "health", "message")}
	}
	if ph := get("status", "operationState", "phase"); ph != "" {
		op := &schemas.OperationState{Phase: ph, Message: get("status", "operationState", "message")}
		if t, err := time.Parse(time.RFC3339, get("status", "operationState", "startedAt")); err == nil {
			op.StartedAt = t
		}
		if t, err := time.Parse(time.RFC3339, get("status", "operationState", "finishedAt")); err == nil {
			op.FinishedAt = &t
		}
		s.Operation = op
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		msg, _ := m["message"].(string)
		if t != "" {
			s.Conditions = append(s.Conditions, schemas.Condition{Type: t, Message: msg})
		}
	}
	res, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	if len(res) > 0 {
		s.Resources = resourceSummary(res)
	}
	return s
}

// resourceSummary counts an Application's status.resources by kind and
// health, and lists them while they fit the bounds of the list
// (schemas.MaxResourceItems, schemas.MaxResourceItemsBytes).
func resourceSummary(res []any) *schemas.ResourceSummary {
	sum := &schemas.ResourceSummary{ByKind: map[string]int{}, ByHealth: map[string]int{}}
	size, full := 0, false
	for _, r := range res {
		m, _ := r.(map[string]any)
		item := ResourceStatusOf(m)
		sum.Total++
		sum.ByKind[item.Kind]++
		if item.Health != nil {
			sum.ByHealth[item.Health.Status]++
		}
		if full || item.Kind == "" || item.Name == "" {
			continue
		}
		b, err := json.Marshal(item)
		if err != nil || len(sum.Items) == schemas.MaxResourceItems || size+len(b) > schemas.MaxResourceItemsBytes {
			full = true // the list stops at the first that does not fit, so that what it holds is a prefix
			continue
		}
		size += len(b)
		sum.Items = append(sum.Items, item)
	}
	return sum
}

// ResourceStatusOf reads one entry of an Application's status.resources;
// fields of the wrong type are left empty, and the health is read only
// when it has a status.
func ResourceStatusOf(m map[string]any) schemas.ResourceStatus {
	str := func(k string) string { v, _ := m[k].(string); return v }
	r := schemas.ResourceStatus{Group: str("group"), Version: str("version"), Kind: str("kind"), Namespace: str("namespace"),
		Name: str("name"), Status: str("status")}
	r.Hook, _ = m["hook"].(bool)
	r.RequiresPruning, _ = m["requiresPruning"].(bool)
	switch w := m["syncWave"].(type) {
	case int64:
		r.SyncWave = w
	case float64:
		r.SyncWave = int64(w)
	}
	if h, ok := m["health"].(map[string]any); ok {
		if hs, _ := h["status"].(string); hs != "" {
			msg, _ := h["message"].(string)
			r.Health = &schemas.HealthStatus{Status: hs, Message: msg}
		}
	}
	return r
}

// deployments reads status.history and, when the last operation was a sync
// (or a rollback, which is one), its result.
func deployments(u *unstructured.Unstructured) ([]HistoryEntry, *SyncResult) {
	var out []HistoryEntry
	hist, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
	for _, h := range hist {
		m, ok := h.(map[string]any)
		if !ok {
			continue
		}
		id, ok, _ := unstructured.NestedInt64(m, "id")
		if !ok {
			continue
		}
		e := HistoryEntry{ID: id, Revision: revision(m), Initiator: initiator(m), Source: sourceDigest(m)}
		e.StartedAt = timeAt(m, "deployStartedAt")
		e.FinishedAt = timeAt(m, "deployedAt")
		if e.StartedAt.IsZero() {
			e.StartedAt = e.FinishedAt
		}
		out = append(out, e)
	}
	op, ok, _ := unstructured.NestedMap(u.Object, "status", "operationState")
	if !ok {
		return out, nil
	}
	if _, isSync, _ := unstructured.NestedMap(op, "operation", "sync"); !isSync {
		return out, nil
	}
	phase, _, _ := unstructured.NestedString(op, "phase")
	res := &SyncResult{Phase: phase, StartedAt: timeAt(op, "startedAt"), FinishedAt: timeAt(op, "finishedAt")}
	if r, ok, _ := unstructured.NestedMap(op, "syncResult"); ok {
		res.Revision, res.Source = revision(r), sourceDigest(r)
	}
	if res.Revision == "" {
		res.Revision, _, _ = unstructured.NestedString(op, "operation", "sync", "revision")
	}
	if o, ok, _ := unstructured.NestedMap(op, "operation"); ok {
		res.Initiator = initiator(o)
	}
	return out, res
}

// revision is revision, or the first of revisions for a multi-source
// Application.
func revision(m map[string]any) string {
	if r, _, _ := unstructured.NestedString(m, "revision"); r != "" {
		return r
	}
	if rs, _, _ := unstructured.NestedStringSlice(m, "revisions"); len(rs) > 0 {
		return rs[0]
	}
	return ""
}

// digestKey holds, in an Application the informer keeps, the digest of a
// history entry's or sync result's source in place of the source itself.
const digestKey = "argosy.dev/source-digest"

// sourceDigest is the digest of m's source and sources (and revisions, for
// a multi-source Application): the one slim left in their place, or
// computed from them. Two entries with the same
// digest deployed from the same source settings.
func sourceDigest(m map[string]any) string {
	if d, ok := m[digestKey].(string); ok {
		return d
	}
	src, srcs := m["source"], m["sources"]
	if src == nil && srcs == nil {
		return ""
	}
	h := SpecHash(map[string]any{"source": src, "sources": srcs, "revisions": m["revisions"]})
	if len(h) > 32 {
		h = h[:32] // 128 bits tell sources apart; the informer keeps one per entry
	}
	return h
}

// initiator is initiatedBy's username, or "automated" for the controller.
func initiator(m map[string]any) string {
	if u, _, _ := unstructured.NestedString(m, "initiatedBy", "username"); u != "" {
		return u
	}
	if a, _, _ := unstructured.NestedBool(m, "initiatedBy", "automated"); a {
		return "automated"
	}
	return ""
}

func timeAt(m map[string]any, field string) time.Time {
	s, _, _ := unstructured.NestedString(m, field)
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// localApp is what an agent in autonomous mode publishes of an Application
// created in the cluster.
func localApp(u *unstructured.Unstructured, project string) *LocalApp {
	spec, err := json.Marshal(u.Object["spec"])
	if err != nil {
		return nil
	}
	return &LocalApp{Generation: u.GetGeneration(), Project: project, Labels: u.GetLabels(), Spec: spec}
}

// resourceFields are the fields of a status.resources entry that the
// list of an Application's resources reports (schemas.ResourceStatus),
// its health aside.
var resourceFields = []string{"group", "version", "kind", "namespace", "name", "status", "hook", "requiresPruning", "syncWave"}

// slim drops what StatusOf never reads from the Applications the informer
// keeps, which is most of their size: managed fields, the resources of the
// last sync result, the sources of history entries (kept as a digest) and of
// the comparison, and of each resource what Argo CD may add beside
// resourceFields and its health's status and message.
func slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	st, ok := u.Object["status"].(map[string]any)
	if !ok {
		return u, nil
	}
	for _, k := range []string{"summary", "sourceType", "sourceTypes", "controllerNamespace", "reconciledAt", "observedAt"} {
		delete(st, k)
	}
	if sync, ok := st["sync"].(map[string]any); ok {
		delete(sync, "comparedTo")
	}
	if op, ok := st["operationState"].(map[string]any); ok {
		if sr, ok := op["syncResult"].(map[string]any); ok {
			sr[digestKey] = sourceDigest(sr)
			for _, k := range []string{"resources", "source", "sources", "managedNamespaceMetadata"} {
				delete(sr, k)
			}
		}
	}
	if hist, ok := st["history"].([]any); ok {
		for _, h := range hist {
			if m, ok := h.(map[string]any); ok {
				m[digestKey] = sourceDigest(m)
				delete(m, "source")
				delete(m, "sources")
			}
		}
	}
	if res, ok := st["resources"].([]any); ok {
		for i, r := range res {
			m, ok := r.(map[string]any)
			if !ok {
				continue
			}
			kept := map[string]any{}
			for _, k := range resourceFields {
				if v, ok := m[k]; ok {
					kept[k] = v
				}
			}
			if h, ok := m["health"].(map[string]any); ok {
				kept["health"] = map[string]any{"status": h["status"], "message": h["message"]}
			}
			res[i] = kept
		}
	}
	return u, nil
}
