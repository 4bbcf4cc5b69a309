package kube

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// Watcher is a spoke.StatusSource: an informer on the Applications of one
// namespace.
type Watcher struct {
	dyn       dynamic.Interface
	namespace string
}

var _ spoke.StatusSource = (*Watcher)(nil)

// NewWatcher watches the Applications in namespace.
func NewWatcher(dyn dynamic.Interface, namespace string) *Watcher {
	return &Watcher{dyn: dyn, namespace: namespace}
}

// Run implements spoke.StatusSource.
func (w *Watcher) Run(ctx context.Context, changed func(spoke.AppStatus)) error {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(w.dyn, 10*time.Minute, w.namespace, nil)
	inf := f.ForResource(applicationGVR).Informer()
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
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { on(obj, false) },
		UpdateFunc: func(_, obj any) { on(obj, false) },
		DeleteFunc: func(obj any) { on(obj, true) },
	}); err != nil {
		return fmt.Errorf("watch applications: %w", err)
	}
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
	return nil
}

// StatusOf reads the spoke's view of an Application's status.
func StatusOf(u *unstructured.Unstructured) spoke.AppStatus {
	s := spoke.AppStatus{Namespace: u.GetNamespace(), Name: u.GetName()}
	if g, err := strconv.ParseInt(u.GetAnnotations()[AnnotationGeneration], 10, 64); err == nil {
		s.Generation = g // absent on Applications the hub did not write
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
		sum := &schemas.ResourceSummary{ByKind: map[string]int{}, ByHealth: map[string]int{}}
		for _, r := range res {
			m, _ := r.(map[string]any)
			kind, _ := m["kind"].(string)
			sum.Total++
			sum.ByKind[kind]++
			if h, ok := m["health"].(map[string]any); ok {
				if hs, _ := h["status"].(string); hs != "" {
					sum.ByHealth[hs]++
				}
			}
		}
		s.Resources = sum
	}
	return s
}
